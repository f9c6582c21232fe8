// The L2 size the CPU blockings assume (kernels/cpu/cpu_caches.h): parsing, the machine's
// value, and the test override.
#include "kernels/cpu/cpu_caches.h"

#include <doctest/doctest.h>

#include "test_util.h"

using winfer::cpu::l2_bytes;
using winfer::cpu::l2_weight_bytes;
using winfer::cpu::parse_cache_size;

TEST_CASE("parse_cache_size reads bytes, K and M (sysfs and WINFER_L2_BYTES spellings)") {
  CHECK(parse_cache_size("524288") == 524288);
  CHECK(parse_cache_size("512K") == 512 * 1024);
  CHECK(parse_cache_size("512k") == 512 * 1024);
  CHECK(parse_cache_size("2M") == 2 * 1024 * 1024);
  CHECK(parse_cache_size("2MiB") == 2 * 1024 * 1024);
  CHECK(parse_cache_size("1280KiB") == 1280 * 1024);
  // Anything else names no size.
  CHECK(parse_cache_size(nullptr) == -1);
  CHECK(parse_cache_size("") == -1);
  CHECK(parse_cache_size("K") == -1);
  CHECK(parse_cache_size("-512K") == -1);
  CHECK(parse_cache_size("512 K") == -1);
  CHECK(parse_cache_size("2G") == -1);
  CHECK(parse_cache_size("2Mx") == -1);
  CHECK(parse_cache_size("99999999999999999999999") == -1);  // no overflow
}

TEST_CASE("l2_bytes: the machine's L2 within [64 KiB, 64 MiB], the weights' bound 3/4 of it, a test override") {
  const int64_t machine = l2_bytes();
  MESSAGE("L2 per core as the blockings see it: ", machine, " bytes");
  CHECK(machine >= 64 * 1024);
  CHECK(machine <= int64_t{64} << 20);
  CHECK(l2_weight_bytes() == machine / 4 * 3);
  {
    winfer::test::L2Override cache(1 << 20);
    CHECK(l2_bytes() == 1 << 20);
    CHECK(l2_weight_bytes() == 3 << 18);
  }
  CHECK(l2_bytes() == machine);
}
