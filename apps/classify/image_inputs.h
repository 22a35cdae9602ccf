// The image files `pola classify` is given: file arguments as they are,
// directories walked recursively for image files, and "-" for a list of paths
// on stdin (one per line), so `find ... | pola classify -m M -` works.
#pragma once

#include <istream>
#include <string>
#include <vector>

namespace pola::app {

// True for the extensions of the formats the decoder reads (engine/preprocess/decode_image.h),
// compared case-insensitively.
bool has_image_extension(const std::string &path);

struct ImageInputs {
  std::vector<std::string> files; // in argument order; each directory's images sorted by path
  std::vector<std::string> problems; // "DIR: ..." for directories that gave nothing; each one is a failure
};

// Arguments that are neither directories nor "-" are kept as files, even when
// they do not exist: decoding them then says what is wrong with each.
ImageInputs expand_image_inputs(const std::vector<std::string> &arguments, std::istream &stdin_list);

} // namespace pola::app
