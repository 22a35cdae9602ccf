#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <initializer_list>

#include "kernels/kernels.h"

int main(int argc, char **argv) {
  using namespace pola::kernels;
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512})
    std::printf("kernels: %-6s %s\n", isa_name(isa),
                table_for(isa) ? "tested" : "SKIPPED (CPU or OS lacks it)");
  std::printf("kernels: active table = %s\n", isa_name(active().isa));
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
