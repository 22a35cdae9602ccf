// A minimal `pola`-style driver holding only the bench-attention subcommand,
// so the attention benchmark builds without the engine and weights libraries.
#include "apps/command.h"

#include <cstdio>

#include "weights/error.h"

namespace pola::app {
std::vector<CommandFactory> &command_registry() {
  static std::vector<CommandFactory> registry;
  return registry;
}
} // namespace pola::app

int main(int argc, char **argv) {
  using namespace pola::app;
  CLI::App app{"pola-bench-attention: the attention benchmark alone"};
  app.require_subcommand(1);
  for (auto &add : command_registry()) add(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  } catch (const pola::InputError &e) {
    std::fprintf(stderr, "pola: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "pola: internal error: %s\n", e.what());
    return kExitInternal;
  }
  return kExitOk;
}
