// A minimal `pola`-style driver holding only the bench-attention subcommand,
// linked with the kernels library only (no engine, weights or oneDNN).
#include "apps/command.h"

int main(int argc, char **argv) {
  return pola::app::run_cli("pola-bench-attention: the attention benchmark alone", argc, argv);
}
