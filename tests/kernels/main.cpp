#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <initializer_list>

#include "helpers.h"
#include "kernels/registry.h"

int main(int argc, char **argv) {
  using namespace pola::kernels;
  using pola::test::Feature;
  Feature f;
  if (!pola::test::parse_feature(f)) {
    std::fprintf(stderr, "POLA_TEST_FEATURE must be one of scalar|avx2|avx512|avx512_bf16|amx_bf16\n");
    return 2;
  }
  if (!pola::test::detected(f)) {
    std::printf("kernels: SKIPPED: this CPU/OS has no %s (dispatch detected none)\n", pola::test::feature_name(f));
    return 77;
  }
  std::printf("kernels: checking %s; ISAs:", pola::test::feature_name(f));
  for (const pola::test::IsaKernels *t : pola::test::available_tables()) std::printf(" %s", isa_name(t->isa));
  std::printf("; active ISA = %s\n", isa_name(active_isa()));
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
