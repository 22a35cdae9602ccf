#include "weights/zip_library.h"

#include <dlfcn.h>

#include <string>

#include "weights/error.h"

namespace pola::weights {

namespace {

template <class F> void bind(void *handle, const char *name, F &fn, std::string &missing) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
}

ZipLibrary load() {
  void *handle = dlopen(POLA_LIBZIP_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    throw InputError(std::string("reading a PyTorch checkpoint needs libzip (") + POLA_LIBZIP_SONAME +
                     "), which cannot be loaded: " + (why ? why : "unknown reason"));
  }
  ZipLibrary z;
  std::string missing;
  bind(handle, "zip_open", z.open, missing);
  bind(handle, "zip_discard", z.discard, missing);
  bind(handle, "zip_error_init_with_code", z.error_init_with_code, missing);
  bind(handle, "zip_error_strerror", z.error_strerror, missing);
  bind(handle, "zip_error_fini", z.error_fini, missing);
  bind(handle, "zip_get_num_entries", z.get_num_entries, missing);
  bind(handle, "zip_get_name", z.get_name, missing);
  bind(handle, "zip_name_locate", z.name_locate, missing);
  bind(handle, "zip_stat_init", z.stat_init, missing);
  bind(handle, "zip_stat_index", z.stat_index, missing);
  bind(handle, "zip_fopen_index", z.fopen_index, missing);
  bind(handle, "zip_fclose", z.fclose, missing);
  bind(handle, "zip_fread", z.fread, missing);
  bind(handle, "zip_strerror", z.strerror, missing);
  bind(handle, "zip_file_strerror", z.file_strerror, missing);
  if (!missing.empty()) {
    dlclose(handle);
    throw InputError(std::string(POLA_LIBZIP_SONAME) + " lacks " + missing + ": not the libzip pola was built with");
  }
  return z;  // the library stays loaded for the process's life
}

} // namespace

const ZipLibrary &zip_library() {
  static const ZipLibrary z = load();  // a load that throws is tried again next call
  return z;
}

} // namespace pola::weights
