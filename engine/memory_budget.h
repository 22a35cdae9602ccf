// What the machine can give a run, read before a plan allocates anything.
// Without this a size or batch too large for the machine either fails halfway
// (std::bad_alloc after seconds of work) or, as Linux overcommits, allocates
// and is then killed when it touches the pages. The engine compares a plan's
// need (Model::run_memory) with available_memory() and refuses first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace pola {

struct AvailableMemory {
  size_t bytes = SIZE_MAX;  // SIZE_MAX: nothing could be read, so nothing is refused
  std::string source;       // the smallest limit, as messages name it
};

// Where available_memory() reads; tests point it at fake trees and limits.
struct MemorySources {
  std::string proc = "/proc";              // meminfo, self/status, self/cgroup
  std::string cgroup = "/sys/fs/cgroup";   // v2 files, or v1's under memory/
  // Soft limits (getrlimit) in bytes; nullopt: unlimited. By default the process's own.
  std::optional<uint64_t> rlimit_as, rlimit_data;
  const char *limit_env = nullptr;         // POLA_MEMORY_LIMIT_BYTES's value, or null when unset
};
MemorySources system_memory_sources();

// The least of:
//  - MemAvailable in /proc/meminfo (what can be had without swapping);
//  - the cgroup's limit minus its usage (v2 memory.max and memory.current, v1
//    memory.limit_in_bytes and memory.usage_in_bytes; inactive page cache,
//    which the kernel reclaims first, does not count as used);
//  - RLIMIT_AS (ulimit -v) minus VmSize, RLIMIT_DATA (ulimit -d) minus VmData;
//  - POLA_MEMORY_LIMIT_BYTES, a number of bytes (an override for tests and
//    for sharing a machine: runs needing more are refused).
// Less the bytes reserved by plans still being built or run a first time
// (MemoryReservation): their pages are not resident yet, so the first three
// do not show them. A POLA_MEMORY_LIMIT_BYTES that is not a number throws InputError.
AvailableMemory available_memory(const MemorySources &sources = system_memory_sources());

// "37.2 GiB", "164 MiB", "9.54 KiB", "512 bytes": three significant digits.
std::string format_bytes(double bytes);

// Bytes promised to a plan between the check and the end of its first run,
// when its arena is allocated but not yet touched. Movable; releases on
// destruction.
class MemoryReservation {
 public:
  MemoryReservation() = default;
  ~MemoryReservation() { release(); }
  MemoryReservation(MemoryReservation &&o) noexcept : bytes_(o.bytes_) { o.bytes_ = 0; }
  MemoryReservation &operator=(MemoryReservation &&o) noexcept;
  MemoryReservation(const MemoryReservation &) = delete;
  MemoryReservation &operator=(const MemoryReservation &) = delete;
  void release();
  size_t bytes() const { return bytes_; }

  // Reserves `bytes` if that many are available (with the check and the
  // reservation atomic against other threads' tries); else returns nothing
  // and sets `available` to what was.
  static std::optional<MemoryReservation> try_reserve(size_t bytes, AvailableMemory &available);

 private:
  explicit MemoryReservation(size_t bytes) : bytes_(bytes) {}
  size_t bytes_ = 0;
};

// What all live reservations hold together.
size_t reserved_memory();

// Memory ran out although the check had found enough (another process took
// it meanwhile): not the input's fault, so not an InputError; a clear
// message instead of a bare std::bad_alloc.
class OutOfMemory : public std::runtime_error {
 public:
  explicit OutOfMemory(const std::string &what) : std::runtime_error(what) {}
};

} // namespace pola
