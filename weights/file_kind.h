// Recognises files that users commonly pass where a model file belongs (a
// PyTorch checkpoint, an image, a NumPy array, ...) from their first bytes,
// so the error says what the file is and what to do, instead of a parser's
// complaint about a header length.
#pragma once

#include <cstddef>
#include <string>

namespace pola::weights {

// "" when the bytes start like none of the known kinds; otherwise a sentence
// naming the kind and, for checkpoints, the command that converts it.
std::string known_non_model_file(const std::string &path, const unsigned char *bytes, size_t size);

} // namespace pola::weights
