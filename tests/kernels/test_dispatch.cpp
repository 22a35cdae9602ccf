#include <doctest/doctest.h>

#include <cstring>
#include <initializer_list>

#include "kernels/kernels.h"

using namespace pola::kernels;

TEST_CASE("dispatch: tables match their ISA and availability") {
  CHECK(cpu_supports(Isa::scalar));
  REQUIRE(table_for(Isa::scalar) != nullptr);
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    const KernelTable *t = table_for(isa);
    CHECK((t != nullptr) == cpu_supports(isa));
    if (!t) continue;
    CHECK(t->isa == isa);
    CHECK(bool(t->layernorm));
    CHECK(bool(t->gelu));
    CHECK(bool(t->gelu_bf16));
    CHECK(bool(t->mul_rows));
    CHECK(bool(t->pola_attention));
    CHECK(bool(t->window_attention));
  }
  // AVX-512 implies AVX2 in our dispatch (the avx512 table also needs FMA/AVX2).
  if (cpu_supports(Isa::avx512)) CHECK(cpu_supports(Isa::avx2));
  CHECK(std::strcmp(isa_name(Isa::avx512), "avx512") == 0);
}

TEST_CASE("dispatch: active() is stable and supported") {
  const KernelTable &a = active();
  CHECK(&a == &active());
  CHECK(cpu_supports(a.isa));
  CHECK(table_for(a.isa) == &a);
}
