// Checks POLA_L1D_BYTES in a fresh process (the L1d size is read once per
// process) by printing what l1d_bytes() returns; CTest matches the output.
#include <cstdio>

#include "kernels/cache_sizes.h"

int main() {
  std::printf("l1d_bytes %lld\n", static_cast<long long>(pola::kernels::l1d_bytes()));
  return 0;
}
