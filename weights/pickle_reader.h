// A restricted pickle reader for torch.save's data.pkl. It interprets the
// opcode stream as data only: it builds dicts, lists, tuples, strings,
// numbers, storage and tensor references, and never imports or calls
// anything. GLOBAL names are recorded; REDUCE/NEWOBJ of
// torch._utils._rebuild_tensor_v2, _rebuild_parameter and
// collections.OrderedDict are recognised by name as data constructors, and any
// other call yields an inert Opaque placeholder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "weights/pickle_value.h"

namespace pola::weights::pickle {

struct Limits {
  size_t max_stack = 1 << 20;        // items on the unpickler stack
  size_t max_marks = 256;            // open MARKs
  size_t max_memo = 1 << 22;         // memo entries
  int max_depth = 64;                // container nesting
  size_t max_values = 1 << 22;       // values created in total
  size_t max_string = 64u << 20;     // one string or bytes object
  size_t max_rank = 16;              // tensor dimensions
};

// Parses `n` bytes of pickle. `context` (e.g. "model.pth: data.pkl") prefixes
// error messages. Throws pola::InputError on anything malformed or unsupported.
ValuePtr read_pickle(const unsigned char *data, size_t n, const std::string &context, const Limits &limits = {});

// Bytes per element of a torch storage class ("FloatStorage" -> 4); 0 if unknown.
size_t torch_storage_element_size(const std::string &storage_class);

} // namespace pola::weights::pickle
