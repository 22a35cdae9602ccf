#include "endpoints.h"

namespace pola::serve {

namespace {

std::vector<std::string> split_path(const std::string &path) {
  std::vector<std::string> parts;
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

Endpoint make(const char *kind, std::vector<std::string> methods, std::vector<std::string> parameters = {}) {
  Endpoint e;
  e.kind = kind;
  e.methods = std::move(methods);
  e.parameters = std::move(parameters);
  return e;
}

const std::vector<std::string> kGet = {"GET", "HEAD"};

} // namespace

Endpoint endpoint_of(const std::string &path) {
  if (path.empty() || path[0] != '/') return {};
  if (path == "/v2/health/live") return make("health_live", kGet);
  if (path == "/v2/health/ready") return make("health_ready", kGet);
  if (path == "/metrics") return make("metrics", kGet);
  if (path == "/v2" || path == "/v2/") return make("server_metadata", kGet);
  auto parts = split_path(path);
  if (parts.size() < 3 || parts[0] != "v2" || parts[1] != "models" || parts[2].empty()) return {};
  std::string version;
  size_t rest = 3;
  if (parts.size() >= 5 && parts[3] == "versions" && !parts[4].empty()) {
    version = parts[4];
    rest = 5;
  }
  Endpoint e;
  if (parts.size() == rest) e = make("model_metadata", kGet);
  else if (parts.size() == rest + 1 && parts[rest] == "ready") e = make("model_ready", kGet);
  else if (parts.size() == rest + 1 && parts[rest] == "infer") e = make("infer", {"POST"});
  else if (parts.size() == rest + 1 && parts[rest] == "classify") e = make("classify", {"POST"}, {"top", "file"});
  else return {};
  e.model = parts[2];
  e.version = version;
  return e;
}

} // namespace pola::serve
