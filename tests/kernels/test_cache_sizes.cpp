// parse_cache_size: the one reader of POLA_L1D_BYTES and of sysfs's cache
// sizes ("48K"). A wrong reading would silently move the query pass between
// its gather and band layouts, so the bounds and suffixes are pinned here.
#include <doctest/doctest.h>

#include <initializer_list>

#include "kernels/cache_sizes.h"

using pola::kernels::parse_cache_size;

TEST_CASE("cache sizes: bytes, K and M suffixes, sysfs's trailing newline") {
  CHECK(parse_cache_size("49152") == 49152);
  CHECK(parse_cache_size("48K") == 48 * 1024);
  CHECK(parse_cache_size("32k\n") == 32 * 1024);
  CHECK(parse_cache_size("2M") == 2 * 1024 * 1024);
  CHECK(parse_cache_size("1024M") == int64_t(1) << 30);
  CHECK(parse_cache_size("1K") == 1024);
}

TEST_CASE("cache sizes: anything else is 0 (not a size)") {
  for (const char *bad : {"", "K", "-48K", "+48K", " 48K", "48KB", "48G", "48 K", "0", "1023", "1025M", "4.5K",
                          "99999999999999999999", "abc"})
    CHECK_MESSAGE(parse_cache_size(bad) == 0, bad);
  CHECK(parse_cache_size(nullptr) == 0);
}
