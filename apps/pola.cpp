// The `pola` command-line tool: subcommands come from apps/cmd_*.cpp.
#include "command.h"

#include <cstdio>
#include <exception>

#include "weights/error.h"

namespace pola::app {
std::vector<CommandFactory> &command_registry() {
  static std::vector<CommandFactory> registry;
  return registry;
}
} // namespace pola::app

int main(int argc, char **argv) {
  using namespace pola::app;
  CLI::App app{"pola: PolaFormer inference on CPUs"};
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
