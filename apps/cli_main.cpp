// The command registry and the shared main of `pola` and of the standalone
// attention benchmark (bench/attention): parse, run the chosen subcommand,
// and map every error to a message and an exit code.
#include "command.h"

#include <cstdio>
#include <exception>
#include <new>

#include "weights/error.h"

namespace pola::app {

std::vector<CommandFactory> &command_registry() {
  static std::vector<CommandFactory> registry;
  return registry;
}

int run_cli(const char *description, int argc, char **argv) {
  CLI::App app{description};
  app.require_subcommand(1);
  for (auto &add : command_registry()) add(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    app.exit(e);
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
