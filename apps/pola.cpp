// The `pola` command-line tool: subcommands come from apps/cmd_*.cpp.
#include "command.h"
#include "version_info.h"

int main(int argc, char **argv) {
  return pola::app::run_cli("pola: PolaFormer inference on CPUs", argc, argv, pola::app::version_text);
}
