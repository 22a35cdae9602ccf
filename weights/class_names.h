// Class names written into model files: the ImageNet-1k names (embedded in the
// binary from weights/imagenet_classes.txt) for 1000-class models, otherwise
// "class_0", "class_1", ...; or the user's own, read from a labels file
// (`pola convert --labels FILE`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pola::weights {

const std::vector<std::string> &imagenet_class_names();
std::vector<std::string> default_class_names(int64_t num_classes);

// A labels file: one class name per line, in class-index order. Blank lines at
// the end are ignored (editors add them); a blank line before the last name,
// or a name given twice, is refused (either would shift or merge classes).
// Spaces around a name, a UTF-8 byte-order mark and Windows line endings are
// dropped. Throws
// pola::InputError naming `path`, and the line, on any problem.
std::vector<std::string> read_labels_file(const std::string &path);

// Class names given as a list (pola_convert's class_names, Python's
// convert(labels=[...])), under the rules of a labels file: spaces around a
// name are dropped; an empty list, an empty name, a name that is not UTF-8 or
// a name given twice is refused, naming the entry as labels[i] (from 0).
std::vector<std::string> checked_class_names(const std::vector<std::string> &names);

} // namespace pola::weights
