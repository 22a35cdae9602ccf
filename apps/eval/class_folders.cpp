// Folder -> class mapping of ImageFolder trees; the rules are in class_folders.h.
#include "class_folders.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "weights/error.h"

namespace pola::eval {
namespace {

std::string quoted(const std::string &s) { return "'" + s + "'"; }

// The first few of a list, for messages that must stay readable with 1000 classes.
std::string some_of(const std::vector<std::string> &names, size_t shown = 5) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i) out += (i ? ", " : "") + quoted(names[i]);
  if (names.size() > shown) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

std::vector<int> map_explicitly(const std::string &dir, const std::vector<std::string> &folders,
                                const std::vector<std::string> &class_names, const std::vector<std::string> &order,
                                std::FILE *notes) {
  if (order.size() != class_names.size())
    throw InputError("--class-order names " + std::to_string(order.size()) + " folders, but the model has " +
                     std::to_string(class_names.size()) + " classes (entry i is the folder of class i)");
  std::map<std::string, int> class_of_folder;
  for (size_t k = 0; k < order.size(); ++k) {
    if (std::find(folders.begin(), folders.end(), order[k]) == folders.end())
      throw InputError(dir + ": --class-order names folder " + quoted(order[k]) + " (class " + std::to_string(k) +
                       "), which is not a sub-folder of " + dir);
    if (!class_of_folder.emplace(order[k], int(k)).second)
      throw InputError("--class-order names folder " + quoted(order[k]) + " twice");
  }
  std::vector<int> mapping;
  std::vector<std::string> skipped;
  for (const auto &f : folders) {
    const auto it = class_of_folder.find(f);
    mapping.push_back(it == class_of_folder.end() ? -1 : it->second);
    if (it == class_of_folder.end()) skipped.push_back(f);
  }
  if (!skipped.empty())
    std::fprintf(notes, "pola eval: skipping %zu folder(s) of %s not named in --class-order: %s\n", skipped.size(),
                 dir.c_str(), some_of(skipped).c_str());
  return mapping;
}

} // namespace

std::string class_name_key(const std::string &name) {
  std::string key;
  bool gap = false;
  for (const char c : name) {
    if (c == '-' || c == '_' || c == ' ' || c == '/') {
      gap = !key.empty();
      continue;
    }
    if (gap) key += ' ';
    gap = false;
    key += (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
  }
  return key;
}

std::vector<int> map_class_folders(const std::string &dir, const std::vector<std::string> &folders,
                                   const std::vector<std::string> &class_names,
                                   const std::vector<std::string> &explicit_order, std::FILE *notes) {
  if (!explicit_order.empty()) return map_explicitly(dir, folders, class_names, explicit_order, notes);
  const std::string choose = "give the folders in class order with --class-order A,B,... or --class-order-file FILE";
  // Rule 2: by name. A class key shared by two classes cannot identify either.
  std::map<std::string, int> class_of_key;
  for (size_t k = 0; k < class_names.size(); ++k) {
    const auto key = class_name_key(class_names[k]);
    if (!class_of_key.emplace(key, int(k)).second) class_of_key[key] = -1;
  }
  std::vector<int> by_name;
  std::vector<std::string> unmatched;
  std::set<int> taken;
  for (const auto &f : folders) {
    const auto it = class_of_key.find(class_name_key(f));
    const int k = it == class_of_key.end() ? -1 : it->second;
    by_name.push_back(k >= 0 && taken.insert(k).second ? k : -1);
    if (by_name.back() < 0) unmatched.push_back(f);
  }
  if (folders.size() != class_names.size()) {
    std::vector<std::string> missing; // classes no folder is named after, when names are used at all
    for (size_t k = 0; k < class_names.size() && unmatched.size() < folders.size(); ++k)
      if (!taken.count(int(k))) missing.push_back(class_names[k]);
    throw InputError(dir + ": " + std::to_string(folders.size()) + " class folders (" + some_of(folders) +
                     "), but the model has " + std::to_string(class_names.size()) + " classes" +
                     (unmatched.empty() ? "" : "; not named after a class: " + some_of(unmatched)) +
                     (missing.empty() ? "" : "; no folder for class " + some_of(missing)) + "; " + choose);
  }
  if (unmatched.empty()) return by_name;

  // Rule 3: sorted order, unless it contradicts a folder that is named like a class.
  for (size_t i = 0; i < folders.size(); ++i)
    if (by_name[i] >= 0 && by_name[i] != int(i))
      throw InputError(dir + ": some folders are not named after the model's classes (" + some_of(unmatched, 3) +
                       "), so folders cannot be mapped by name, and sorted order would make folder " +
                       quoted(folders[i]) + " class " + std::to_string(i) + " although it is named like class " +
                       std::to_string(by_name[i]) + " " + quoted(class_names[by_name[i]]) +
                       "; name every folder after its class, or " + choose);
  std::fprintf(notes,
               "pola eval: folder names do not match the model's class names (e.g. %s); folders in sorted order are "
               "classes 0..%zu: %s -> %s, %s -> %s, ... (use --class-order to choose)\n",
               quoted(unmatched[0]).c_str(), folders.size() - 1, quoted(folders[0]).c_str(),
               quoted(class_names[0]).c_str(), quoted(folders[folders.size() > 1]).c_str(),
               quoted(class_names[folders.size() > 1]).c_str());
  std::vector<int> sorted(folders.size());
  for (size_t i = 0; i < folders.size(); ++i) sorted[i] = int(i);
  return sorted;
}

std::vector<std::string> split_class_order(const std::string &comma_separated) {
  std::vector<std::string> names;
  size_t start = 0;
  for (size_t cut; (cut = comma_separated.find(',', start)) != std::string::npos; start = cut + 1)
    names.push_back(comma_separated.substr(start, cut - start));
  names.push_back(comma_separated.substr(start));
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i].empty()) throw InputError("--class-order: entry " + std::to_string(i) + " is empty");
  return names;
}

std::vector<std::string> read_class_order_file(const std::string &path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the class order file");
  std::vector<std::string> names;
  size_t blank_at = 0; // first line of a run of blank lines, 0 if none
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) {
      if (!blank_at) blank_at = line_no;
      continue;
    }
    // A blank line inside the list would shift every later class by one.
    if (blank_at) throw InputError(path + ":" + std::to_string(blank_at) + ": empty line (line i names the folder of class i)");
    names.push_back(line);
  }
  if (names.empty()) throw InputError(path + ": no folder names (one per line, line i = class i)");
  return names;
}

} // namespace pola::eval
