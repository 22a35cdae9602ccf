// Checks of the command line made before CLI11 parses it, for the messages a
// new user needs: an unknown subcommand or option names itself and the
// nearest known one ("did you mean"), and a number option given a word says
// that it is not a number (CLI11 alone reports "--model is required" for a
// misspelt --model, and a range error for --threads abc).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace pola::app {

// The first problem found in argv, as a one-line message without the
// "pola: error:" prefix, or "" when CLI11 may parse it. `root` must have all
// subcommands and options registered.
std::string check_arguments(const CLI::App &root, int argc, const char *const *argv);

// The candidate closest to `word` by edit distance, or "" when none is close
// enough to be a plausible typo.
std::string nearest_name(const std::string &word, const std::vector<std::string> &candidates);

} // namespace pola::app
