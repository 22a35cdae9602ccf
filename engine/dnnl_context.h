// The process-wide oneDNN CPU engine. Streams are created per call so that
// several threads can run one model at once.
#pragma once

#include <dnnl.hpp>

namespace pola {

dnnl::engine &cpu_engine();

} // namespace pola
