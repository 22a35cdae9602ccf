// Which class each folder of an ImageFolder tree holds (`pola eval`).
//
// Sorting folders alphabetically (torchvision's rule) is only right when the
// sorted order happens to be the model's class order; folders named after the
// classes but sorting differently ("Ankle boot" before "T-shirt/top") then
// give a silently wrong accuracy. So, in this order of preference:
//   1. an explicit order (--class-order / --class-order-file): entry i is the
//      folder of class i; every entry must be a folder, folders not listed are
//      skipped (said on stderr);
//   2. folder names equal to the model's class names up to case and the
//      separators '-', '_', ' ' and '/' (folder names cannot hold '/'), so
//      `ankle-boot` is class "Ankle boot";
//   3. sorted order, said on stderr, and only when no folder is named like a
//      class that sorting would give another index.
// Without an explicit order the folder count must equal the class count.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace pola::eval {

// The comparison key of rule 2: ASCII lower case, each run of separators one space, trimmed.
std::string class_name_key(const std::string &name);

// The class index of each folder in `folders` (sorted names, relative to `dir`),
// or -1 for a folder to skip. `explicit_order` is empty unless rule 1 applies.
// Notes about how the mapping was made go to `notes`; throws pola::InputError
// naming `dir` (or the folder) when no safe mapping exists.
std::vector<int> map_class_folders(const std::string &dir, const std::vector<std::string> &folders,
                                   const std::vector<std::string> &class_names,
                                   const std::vector<std::string> &explicit_order, std::FILE *notes);

// "--class-order a,b,c": the folder names, in class-index order.
std::vector<std::string> split_class_order(const std::string &comma_separated);

// --class-order-file: one folder name per line (line i = class i); blank lines
// at the end are ignored. Throws pola::InputError naming the file.
std::vector<std::string> read_class_order_file(const std::string &path);

} // namespace pola::eval
