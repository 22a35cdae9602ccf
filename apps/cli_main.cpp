// The command registry and the shared main of `pola` and of the standalone
// attention benchmark (bench/attention): parse, run the chosen subcommand,
// and map every error to a message and an exit code.
#include "command.h"

#include "cli_checks.h"

#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "weights/error.h"

namespace pola::app {

std::vector<CommandFactory> &command_registry() {
  static std::vector<CommandFactory> registry;
  return registry;
}

int run_cli(const char *description, int argc, char **argv, const std::function<std::string()> &version) {
  CLI::App app{description};
  if (argc > 0) app.name(std::filesystem::path(argv[0]).filename().string());
  // Every option's help shows its default (subcommands inherit this).
  app.option_defaults()->always_capture_default();
  bool print_version = false;
  if (version) app.add_flag("--version", print_version, "Print version, revision, compiler, ISA and oneDNN version");
  app.require_subcommand(version ? 0 : 1, 1);
  for (auto &add : command_registry()) add(app);
  // `pola help [COMMAND]`, for those who ask that way: what --help prints.
  std::string help_topic;
  CLI::App *help = app.add_subcommand("help", "Print the commands, or one command's options (as --help does)");
  help->add_option("command", help_topic, "The command to explain");
  help->callback([&app, &help_topic, help] {
    if (help_topic.empty()) {
      std::fputs(app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal).c_str(), stdout);
      return;
    }
    std::vector<std::string> commands;
    for (const CLI::App *sub : app.get_subcommands([](const CLI::App *) { return true; })) {
      if (sub != help && sub->check_name(help_topic)) {
        std::fputs(sub->get_formatter()
                       ->make_help(sub, app.get_name() + " " + sub->get_name(), CLI::AppFormatMode::Normal)
                       .c_str(),
                   stdout);
        return;
      }
      commands.push_back(sub->get_name());
    }
    std::string message = "unknown command '" + help_topic + "'";
    const std::string near = nearest_name(help_topic, commands);
    if (!near.empty()) message += "; did you mean '" + near + "'?";
    throw pola::InputError(message + " (" + app.get_name() + " --help lists the commands)");
  });
  if (argc <= 1) {  // a bare `pola`: what it can do, on stderr, as a usage error
    std::fputs(app.help().c_str(), stderr);
    return kExitBadInput;
  }
  const std::string problem = check_arguments(app, argc, argv);
  if (!problem.empty()) {
    std::fprintf(stderr, "pola: error: %s\n", problem.c_str());
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
    if (print_version) {
      std::fputs(version().c_str(), stdout);
      return kExitOk;
    }
    if (app.get_subcommands().empty()) throw CLI::RequiredError("A subcommand");
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {  // CLI11's own wording, made one `pola: error:` line
    std::fprintf(stderr, "pola: error: %s\n", parse_error_message(app, argc, argv, e.what()).c_str());
    return kExitBadInput;
  } catch (const pola::InputError &e) {
    std::fprintf(stderr, "pola: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "pola: internal error: out of memory\n");
    return kExitInternal;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "pola: internal error: %s\n", e.what());
    return kExitInternal;
  }
  return kExitOk;
}

} // namespace pola::app
