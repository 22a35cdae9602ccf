// The `pola` command-line tool: subcommands come from apps/cmd_*.cpp.
#include "command.h"

int main(int argc, char **argv) { return pola::app::run_cli("pola: PolaFormer inference on CPUs", argc, argv); }
