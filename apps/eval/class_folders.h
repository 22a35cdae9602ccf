// Which class each folder of an ImageFolder tree holds (`pola eval`).
//
// Sorting folders alphabetically (torchvision's rule) is only right when the
// sorted order happens to be the model's class order; folders named after the
// classes but sorting differently ("Ankle boot" before "T-shirt/top") then
// give a silently wrong accuracy. So, in this order of preference:
//   1. an explicit order (--class-order / --class-order-file), in one of two
//      forms: every entry a folder name, entry i the folder of class i (every
//      class listed); or every entry FOLDER=CLASS, CLASS a class name (matched
//      as in rule 2) or index, for any subset of the classes. Every folder
//      named must exist; folders not listed are skipped (said on stderr);
//   2. folder names equal to the model's class names up to case and the
//      separators '-', '_', ' ' and '/' (folder names cannot hold '/'), so
//      `ankle-boot` is class "Ankle boot". Folders for only some classes are
//      a subset evaluation (said on stderr): the model still chooses among
//      all its classes;
//   3. sorted order, said on stderr, and only when there is one folder per
//      class and no folder is named like a class that sorting would give
//      another index.
// Labels files name classes by the same rule (class_index_of).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace pola::eval {

// The comparison key of rule 2: ASCII lower case, each run of separators one space, trimmed.
std::string class_name_key(const std::string &name);

// The class `name` names: a class name spelt exactly, else the one class whose
// class_name_key equals name's ("ankle-boot", "ANKLE_BOOT" for "Ankle boot");
// -1 when none does, or when two classes share that key.
int class_index_of(const std::string &name, const std::vector<std::string> &class_names);

// The class index of each folder in `folders` (sorted names, relative to `dir`),
// or -1 for a folder to skip. `explicit_order` is empty unless rule 1 applies.
// Notes about how the mapping was made go to `notes`; throws pola::InputError
// naming `dir` (or the folder) when no safe mapping exists.
std::vector<int> map_class_folders(const std::string &dir, const std::vector<std::string> &folders,
                                   const std::vector<std::string> &class_names,
                                   const std::vector<std::string> &explicit_order, std::FILE *notes);

// "--class-order a,b,c" (or "a=Class,b=3"): the entries, as written.
std::vector<std::string> split_class_order(const std::string &comma_separated);

// --class-order-file: one entry per line (a folder name, line i = class i; or
// FOLDER=CLASS); blank lines at the end are ignored. Throws pola::InputError
// naming the file.
std::vector<std::string> read_class_order_file(const std::string &path);

} // namespace pola::eval
