// available_memory() over fake /proc and /sys/fs/cgroup trees: the least of
// MemAvailable, the cgroup's limit less its usage (v2 and v1, every level up
// to the mount's root, inactive page cache not counted as used), the rlimits
// less the process's size, and POLA_MEMORY_LIMIT_BYTES; less what running
// plans have reserved. And the figures messages print.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/memory_budget.h"
#include "weights/error.h"

using namespace pola;
namespace fs = std::filesystem;

namespace {

// A scratch tree removed at the end of the test.
struct FakeTree {
  fs::path root;
  FakeTree() {
    root = fs::temp_directory_path() / ("pola_memory_budget_" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "proc" / "self");
    fs::create_directories(root / "cgroup");
  }
  ~FakeTree() { fs::remove_all(root); }
  void write(const std::string &relative, const std::string &text) const {
    const fs::path p = root / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  MemorySources sources() const {
    MemorySources s;
    s.proc = (root / "proc").string();
    s.cgroup = (root / "cgroup").string();
    return s;
  }
};

} // namespace

TEST_CASE("available_memory: MemAvailable, the cgroup, the rlimits and the override, the least wins") {
  FakeTree t;
  t.write("proc/meminfo", "MemTotal:       4000 kB\nMemFree:        1500 kB\nMemAvailable:   2000 kB\n");
  SUBCASE("nothing readable: nothing is refused") {
    MemorySources s;
    s.proc = (t.root / "nowhere").string();
    s.cgroup = s.proc;
    CHECK(available_memory(s).bytes == SIZE_MAX);
  }
  SUBCASE("MemAvailable alone") {
    const auto a = available_memory(t.sources());
    CHECK(a.bytes == 2000 * 1024);
    CHECK(a.source == "MemAvailable in /proc/meminfo");
  }
  SUBCASE("cgroup v2: memory.max less memory.current, inactive page cache reclaimable; a parent's limit counts") {
    t.write("proc/self/cgroup", "0::/app/job\n");
    t.write("cgroup/cgroup.controllers", "cpu memory\n");
    t.write("cgroup/app/job/memory.max", "max\n");
    t.write("cgroup/app/job/memory.current", "300000\n");
    t.write("cgroup/app/memory.max", "1000000\n");
    t.write("cgroup/app/memory.current", "700000\n");
    t.write("cgroup/app/memory.stat", "anon 500000\nfile 200000\ninactive_file 150000\n");
    const auto a = available_memory(t.sources());
    CHECK(a.bytes == 1000000 - (700000 - 150000));
    CHECK(a.source.find("memory.max") != std::string::npos);
  }
  SUBCASE("cgroup v1, seen through a namespace: the mount's root is the process's cgroup") {
    t.write("proc/self/cgroup", "5:cpu:/\n4:memory:/not/under/the/mount\n0::/\n");
    t.write("cgroup/memory/memory.limit_in_bytes", "900000\n");
    t.write("cgroup/memory/memory.usage_in_bytes", "400000\n");
    t.write("cgroup/memory/memory.stat", "cache 5\ntotal_inactive_file 100000\n");
    CHECK(available_memory(t.sources()).bytes == 900000 - 300000);
    t.write("cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "no limit"
    CHECK(available_memory(t.sources()).bytes == 2000 * 1024);
  }
  SUBCASE("rlimits less the process's virtual and data sizes") {
    t.write("proc/self/status", "Name: x\nVmSize:     1000 kB\nVmData:      100 kB\n");
    MemorySources s = t.sources();
    s.rlimit_as = 1500 * 1024;
    auto a = available_memory(s);
    CHECK(a.bytes == 500 * 1024);
    CHECK(a.source.find("RLIMIT_AS") != std::string::npos);
    s.rlimit_data = 300 * 1024;
    a = available_memory(s);
    CHECK(a.bytes == 200 * 1024);
    CHECK(a.source.find("RLIMIT_DATA") != std::string::npos);
  }
  SUBCASE("POLA_MEMORY_LIMIT_BYTES: a number of bytes, when less; anything else is refused") {
    MemorySources s = t.sources();
    s.limit_env = "12345";
    auto a = available_memory(s);
    CHECK(a.bytes == 12345);
    CHECK(a.source == "POLA_MEMORY_LIMIT_BYTES");
    s.limit_env = "99999999999";
    CHECK(available_memory(s).bytes == 2000 * 1024);
    s.limit_env = "";
    CHECK(available_memory(s).bytes == 2000 * 1024);
    for (const char *bad : {"12k", "-5", "lots", " 7"}) {
      s.limit_env = bad;
      CHECK_THROWS_AS(available_memory(s), InputError);
    }
  }
  SUBCASE("a reservation is taken off the resident-memory figures") {
    AvailableMemory seen;
    auto r = MemoryReservation::try_reserve(100 * 1024, seen);  // this machine's own figures
    REQUIRE(r.has_value());
    CHECK(reserved_memory() >= 100 * 1024);
    CHECK(available_memory(t.sources()).bytes <= (2000 - 100) * 1024);
    r->release();
    CHECK(available_memory(t.sources()).bytes == 2000 * 1024);
    AvailableMemory none;
    CHECK_FALSE(MemoryReservation::try_reserve(SIZE_MAX - 1, none).has_value());
    CHECK(none.bytes < SIZE_MAX - 1);
  }
}

TEST_CASE("format_bytes: three significant digits in binary units") {
  CHECK(format_bytes(0) == "0 bytes");
  CHECK(format_bytes(1000) == "1000 bytes");
  CHECK(format_bytes(1024) == "1.00 KiB");
  CHECK(format_bytes(64.0 * (1 << 20)) == "64.0 MiB");
  CHECK(format_bytes(164.4 * (1 << 20)) == "164 MiB");
  CHECK(format_bytes(37.23 * (1u << 30)) == "37.2 GiB");
  CHECK(format_bytes(1023.9 * (1 << 20)) == "1.00 GiB");
}
