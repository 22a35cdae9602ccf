# Locates oneDNN's CPU library and headers without oneDNN's own CMake config.
#
# Why: Debian's libdnnl-dev is built with the OpenCL GPU runtime, so its
# dnnl-config.cmake runs find_package(OpenCL REQUIRED) and fails unless the
# OpenCL SDK (ocl-icd-opencl-dev, only *recommended* by libdnnl-dev) is present.
# This engine uses the CPU engine alone and never includes dnnl_ocl.h, so the
# headers and libdnnl.so are all it needs (libdnnl.so's own dependency on the
# OpenCL loader is a runtime one, pulled in by the libdnnl2 package).
#
# Defines the imported target DNNL::dnnl (the name oneDNN's config uses) and
# PolaOneDNN_VERSION, read from dnnl_version.h. Used by this project's build
# and by the installed polaformerConfig.cmake (for the static library).

find_path(PolaOneDNN_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_library(PolaOneDNN_LIBRARY NAMES dnnl)

if(PolaOneDNN_INCLUDE_DIR AND EXISTS "${PolaOneDNN_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h")
  file(STRINGS "${PolaOneDNN_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h" _pola_dnnl_version_lines
       REGEX "^#define DNNL_VERSION_(MAJOR|MINOR|PATCH) ")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define DNNL_VERSION_${part} ([0-9]+).*" "\\1" _pola_dnnl_${part}
           "${_pola_dnnl_version_lines}")
  endforeach()
  set(PolaOneDNN_VERSION "${_pola_dnnl_MAJOR}.${_pola_dnnl_MINOR}.${_pola_dnnl_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(PolaOneDNN
  REQUIRED_VARS PolaOneDNN_LIBRARY PolaOneDNN_INCLUDE_DIR
  VERSION_VAR PolaOneDNN_VERSION
  REASON_FAILURE_MESSAGE "install Debian's libdnnl-dev (scripts/install_deps.sh does)")

if(PolaOneDNN_FOUND AND NOT TARGET DNNL::dnnl)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES
    IMPORTED_LOCATION "${PolaOneDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${PolaOneDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(PolaOneDNN_INCLUDE_DIR PolaOneDNN_LIBRARY)
