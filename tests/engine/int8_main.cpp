// The int8 op tests' runner: on a CPU without int8 dot products (neither
// AMX-INT8 nor VNNI) there is nothing they could check, so it exits 77 and
// ctest reports them skipped, not passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "kernels/isa.h"

int main(int argc, char **argv) {
  if (!pola::kernels::int8_instructions()) {
    std::printf("SKIPPED: this CPU has no int8 dot products (AMX-INT8 or VNNI)\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
