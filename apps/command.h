// Subcommands of the `pola` tool register themselves here, one file each
// (apps/cmd_*.cpp), so adding a command touches no other file.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace pola::app {

using CommandFactory = std::function<void(CLI::App &root)>;

std::vector<CommandFactory> &command_registry();

struct RegisterCommand {
  explicit RegisterCommand(CommandFactory f) { command_registry().push_back(std::move(f)); }
};

// Parses argv, runs the chosen subcommand and returns the exit code below;
// every error becomes a message on stderr (apps/cli_main.cpp). With `version`,
// `--version` prints what it returns.
int run_cli(const char *description, int argc, char **argv, const std::function<std::string()> &version = {});

// Exit codes shared by every subcommand.
constexpr int kExitOk = 0;
constexpr int kExitBadInput = 1;
constexpr int kExitInternal = 2;

} // namespace pola::app
