#include "http_plugin_loader.h"

#include <dlfcn.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include "weights/error.h"

namespace pola::app {

namespace {

constexpr const char *kPluginFile = "libpola_http.so";

HttpPlugin load_plugin() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw InputError(std::string("cannot find the running pola (/proc/self/exe): ") + ec.message());
  std::string tried;
  for (const auto &dir : {exe.parent_path(), exe.parent_path().parent_path() / "lib"}) {
    const std::filesystem::path file = dir / kPluginFile;
    if (!std::filesystem::exists(file, ec)) {
      tried += "\n  " + file.string() + ": not there";
      continue;
    }
    void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      tried += "\n  " + file.string() + ": " + (why ? why : "cannot be loaded");
      continue;
    }
    HttpPlugin p;
    p.serve = reinterpret_cast<decltype(p.serve)>(dlsym(handle, "pola_http_serve"));
    p.load = reinterpret_cast<decltype(p.load)>(dlsym(handle, "pola_http_load"));
    if (p.serve && p.load) return p;  // kept loaded for the process's life
    tried += "\n  " + file.string() + ": not pola's HTTP plugin (no pola_http_serve / pola_http_load)";
    dlclose(handle);
  }
  throw InputError(std::string("the HTTP commands need ") + kPluginFile +
                   ", built and installed with pola; tried:" + tried);
}

} // namespace

const HttpPlugin &http_plugin() {
  static const HttpPlugin plugin = load_plugin();  // a load that throws is tried again next call
  return plugin;
}

void rethrow(const pola::serve::PluginStatus &status) {
  if (status.error.empty()) return;
  if (status.input_error) throw InputError(status.error);
  throw std::runtime_error(status.error);
}

} // namespace pola::app
