// libzip, opened on first use rather than linked: only reading a PyTorch
// checkpoint needs it, and loading it also loads the OpenSSL it links (1.4 MB
// resident in every process that never reads a checkpoint, the edge devices'
// low-memory runs included). Built against libzip's headers; the library
// file is the one the build found (its soname, weights/CMakeLists.txt).
#pragma once

#include <zip.h>

namespace pola::weights {

struct ZipLibrary {
  decltype(&::zip_open) open = nullptr;
  decltype(&::zip_discard) discard = nullptr;
  decltype(&::zip_error_init_with_code) error_init_with_code = nullptr;
  decltype(&::zip_error_strerror) error_strerror = nullptr;
  decltype(&::zip_error_fini) error_fini = nullptr;
  decltype(&::zip_get_num_entries) get_num_entries = nullptr;
  decltype(&::zip_get_name) get_name = nullptr;
  decltype(&::zip_name_locate) name_locate = nullptr;
  decltype(&::zip_stat_init) stat_init = nullptr;
  decltype(&::zip_stat_index) stat_index = nullptr;
  decltype(&::zip_fopen_index) fopen_index = nullptr;
  decltype(&::zip_fclose) fclose = nullptr;
  decltype(&::zip_fread) fread = nullptr;
  decltype(&::zip_strerror) strerror = nullptr;
  decltype(&::zip_file_strerror) file_strerror = nullptr;
};

// Loads libzip once; throws InputError naming the library and why it could not be loaded.
const ZipLibrary &zip_library();

} // namespace pola::weights
