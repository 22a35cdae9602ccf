// A minimal `pola`-style driver holding only the bench-attention subcommand,
// so the attention benchmark builds without the engine and weights libraries.
#include "apps/command.h"

int main(int argc, char **argv) {
  return pola::app::run_cli("pola-bench-attention: the attention benchmark alone", argc, argv);
}
