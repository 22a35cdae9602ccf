#include "model/shape_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "model/error.h"
#include "model/tensor_list.h"

namespace pola {

void ShapeReader::fail(const std::string &what) const { throw InputError(context_ + ": " + what); }

const std::vector<int64_t> &ShapeReader::shape(const std::string &name, size_t rank, const char *why) const {
  auto it = shapes_.find(name);
  if (it == shapes_.end()) fail(std::string("cannot detect the ") + why + ": tensor '" + name + "' is missing");
  if (it->second.size() != rank)
    fail(std::string("cannot detect the ") + why + ": tensor '" + name + "' has shape " + shape_string(it->second) +
         ", expected rank " + std::to_string(rank));
  for (int64_t d : it->second)
    if (d <= 0) fail(std::string("cannot detect the ") + why + ": tensor '" + name + "' has an empty dimension");
  return it->second;
}

int64_t ShapeReader::count_indexed(const std::string &prefix) const {
  int64_t n = 0;
  for (auto it = shapes_.lower_bound(prefix); it != shapes_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
       ++it) {
    const std::string rest = it->first.substr(prefix.size());
    size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos || dot > 6) continue;
    if (!std::all_of(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(dot), ::isdigit)) continue;
    n = std::max<int64_t>(n, std::stoll(rest.substr(0, dot)) + 1);
  }
  return n;
}

int64_t ShapeReader::exact_sqrt(int64_t v, const std::string &what) const {
  // Bounded first: near 2^63 the rounded root squared overflows int64, and no
  // real token count comes close (shapes with a zero dimension can claim any size).
  if (v > (int64_t{1} << 40)) fail(what + " has " + std::to_string(v) + " rows, implausibly many tokens");
  auto r = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(v))));
  if (r <= 0 || r * r != v) fail(what + " has " + std::to_string(v) + " rows, not a square number of tokens");
  return r;
}

} // namespace pola
