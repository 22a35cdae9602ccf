// The endpoints of `pola serve`, told from a request's path alone: which
// one it is (the `endpoint` label of the metrics, never the raw path), the
// model and version it names, and what methods and query parameters it takes.
// Both the connection reactor (from the raw head) and httplib's pre-routing
// check use it, so a request is judged the same way before and after parsing.
#pragma once

#include <string>
#include <vector>

namespace pola::serve {

struct Endpoint {
  std::string kind = "other";             // health_live, infer, ...; "other" when unknown
  std::string model;                      // for /v2/models/NAME/...
  std::string version;                    // for .../versions/V/...; empty when not given
  std::vector<std::string> methods;       // what it answers (HEAD too where GET)
  std::vector<std::string> parameters;    // the query parameters it takes
  bool known() const { return kind != "other"; }
  bool takes_body() const { return kind == "infer" || kind == "classify"; }
  bool is_probe() const { return kind == "health_live" || kind == "health_ready"; }
};

Endpoint endpoint_of(const std::string &path);

// The versions every model has (the Open Inference Protocol's model version).
inline constexpr const char *kModelVersion = "1";

} // namespace pola::serve
