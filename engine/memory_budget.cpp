#include "engine/memory_budget.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "weights/error.h"

namespace pola {
namespace {

// Limits at or above this mean "no limit" (cgroup v1 writes 2^63 rounded down to a page).
constexpr uint64_t kUnlimited = uint64_t{1} << 60;

std::atomic<size_t> g_reserved{0};
std::mutex g_reserve_mutex;  // a check and the reservation it allows happen together

std::optional<std::string> read_text(const std::string &path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<uint64_t> parse_u64(const std::string &text) {
  size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  if (i == text.size() || text[i] < '0' || text[i] > '9') return std::nullopt;
  uint64_t v = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const uint64_t d = uint64_t(text[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return UINT64_MAX;
    v = v * 10 + d;
  }
  return v;
}

// The number after "key" at the start of a line of a "key value [kB]" file.
std::optional<uint64_t> field(const std::string &text, const std::string &key) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line))
    if (line.compare(0, key.size(), key) == 0) return parse_u64(line.substr(key.size()));
  return std::nullopt;
}

std::optional<uint64_t> read_number(const std::string &path) {
  const auto text = read_text(path);
  return text ? parse_u64(*text) : std::nullopt;
}

struct Candidate {
  uint64_t bytes;
  std::string source;
};

void consider(std::optional<Candidate> &best, uint64_t bytes, const std::string &source) {
  if (!best || bytes < best->bytes) best = Candidate{bytes, source};
}

uint64_t minus(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

// The process's cgroup path for a hierarchy: the "0::" line (v2), or the line
// naming the memory controller (v1).
std::optional<std::string> cgroup_path(const std::string &self_cgroup, bool v2) {
  std::istringstream lines(self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    bool match = v2 ? line.compare(0, a, "0") == 0 && controllers.empty() : false;
    if (!v2) {
      std::istringstream list(controllers);
      std::string c;
      while (std::getline(list, c, ','))
        if (c == "memory") match = true;
    }
    if (match) return line.substr(b + 1);
  }
  return std::nullopt;
}

// Every level from the process's cgroup up to the mount's root limits it. In
// a cgroup namespace the path may not exist under the mount: then the mount's
// root is the process's own cgroup.
void consider_cgroup(std::optional<Candidate> &best, const std::string &mount, const std::string &path, bool v2) {
  std::string dir = mount + (path == "/" ? std::string() : path);
  std::ifstream probe(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
  if (!probe) dir = mount;
  const std::string source = v2 ? "the cgroup's memory.max less its memory.current"
                                : "the cgroup's memory.limit_in_bytes less its memory.usage_in_bytes";
  while (true) {
    const auto limit = read_number(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
    const auto usage = read_number(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
    if (limit && usage && *limit < kUnlimited) {
      const auto stat = read_text(dir + "/memory.stat");
      const uint64_t reclaimable =
          stat ? field(*stat, v2 ? "inactive_file " : "total_inactive_file ").value_or(0) : 0;
      consider(best, minus(*limit, minus(*usage, reclaimable)), source);
    }
    if (dir.size() <= mount.size()) break;
    dir = dir.substr(0, dir.rfind('/'));
  }
}

} // namespace

MemorySources system_memory_sources() {
  MemorySources s;
  rlimit r{};
  if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY) s.rlimit_as = uint64_t(r.rlim_cur);
  if (getrlimit(RLIMIT_DATA, &r) == 0 && r.rlim_cur != RLIM_INFINITY) s.rlimit_data = uint64_t(r.rlim_cur);
  s.limit_env = std::getenv("POLA_MEMORY_LIMIT_BYTES");
  return s;
}

AvailableMemory available_memory(const MemorySources &src) {
  std::optional<Candidate> best;
  const uint64_t reserved = reserved_memory();
  // Resident-memory figures do not yet show reserved plans; virtual-size ones
  // (the rlimits) already count their allocated arenas.
  if (const auto meminfo = read_text(src.proc + "/meminfo"))
    if (const auto kb = field(*meminfo, "MemAvailable:"))
      consider(best, minus(*kb * 1024, reserved), "MemAvailable in /proc/meminfo");
  if (const auto self = read_text(src.proc + "/self/cgroup")) {
    std::optional<Candidate> cgroup;
    if (const auto path = cgroup_path(*self, true)) consider_cgroup(cgroup, src.cgroup, *path, true);
    if (const auto path = cgroup_path(*self, false)) consider_cgroup(cgroup, src.cgroup + "/memory", *path, false);
    if (cgroup) consider(best, minus(cgroup->bytes, reserved), cgroup->source);
  }
  if (src.rlimit_as || src.rlimit_data) {
    const std::string status = read_text(src.proc + "/self/status").value_or("");
    if (src.rlimit_as)
      consider(best, minus(*src.rlimit_as, field(status, "VmSize:").value_or(0) * 1024),
               "the address-space limit (RLIMIT_AS, ulimit -v) less the process's VmSize");
    if (src.rlimit_data)
      consider(best, minus(*src.rlimit_data, field(status, "VmData:").value_or(0) * 1024),
               "the data-segment limit (RLIMIT_DATA, ulimit -d) less the process's VmData");
  }
  if (src.limit_env && *src.limit_env) {
    const std::string text = src.limit_env;
    const auto limit = parse_u64(text);
    if (!limit || text.find_first_not_of("0123456789") != std::string::npos)
      throw InputError("POLA_MEMORY_LIMIT_BYTES='" + text + "' is not a number of bytes");
    consider(best, minus(*limit, reserved), "POLA_MEMORY_LIMIT_BYTES");
  }
  AvailableMemory out;
  if (best) {
    out.bytes = size_t(std::min<uint64_t>(best->bytes, SIZE_MAX - 1));
    out.source = best->source;
  }
  return out;
}

std::string format_bytes(double bytes) {
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t u = 0;
  while (bytes >= 1023.5 && u + 1 < sizeof units / sizeof *units) {
    bytes /= 1024;
    ++u;
  }
  char buf[48];
  if (u == 0) std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
  else std::snprintf(buf, sizeof buf, bytes < 9.995 ? "%.2f %s" : bytes < 99.95 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

MemoryReservation &MemoryReservation::operator=(MemoryReservation &&o) noexcept {
  if (this != &o) {
    release();
    bytes_ = o.bytes_;
    o.bytes_ = 0;
  }
  return *this;
}

void MemoryReservation::release() {
  if (bytes_) g_reserved.fetch_sub(bytes_);
  bytes_ = 0;
}

std::optional<MemoryReservation> MemoryReservation::try_reserve(size_t bytes, AvailableMemory &available) {
  std::lock_guard<std::mutex> lock(g_reserve_mutex);
  available = available_memory();
  if (bytes > available.bytes) return std::nullopt;
  g_reserved.fetch_add(bytes);
  return MemoryReservation(bytes);
}

size_t reserved_memory() { return g_reserved.load(); }

} // namespace pola
