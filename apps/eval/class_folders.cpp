// Folder -> class mapping of ImageFolder trees; the rules are in class_folders.h.
#include "class_folders.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <utility>

#include "plural.h"
#include "weights/error.h"

namespace pola::eval {
namespace {

std::string in_quotes(const std::string &s) { return "'" + s + "'"; }

// The first few of a list, for messages that must stay readable with 1000 classes.
std::string some_of(const std::vector<std::string> &names, size_t shown = 5) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i) out += (i ? ", " : "") + in_quotes(names[i]);
  if (names.size() > shown) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

// "a=Bag" -> ("a", class of "Bag"); throws naming the entry when it is not FOLDER=CLASS.
std::pair<std::string, int> folder_and_class(const std::string &entry, const std::vector<std::string> &class_names) {
  const size_t eq = entry.rfind('='); // folder names may hold '=', class names hardly
  const std::string folder = entry.substr(0, eq), name = entry.substr(eq + 1);
  if (folder.empty() || name.empty())
    throw InputError("--class-order: entry " + in_quotes(entry) + " is not FOLDER=CLASS");
  int k = class_index_of(name, class_names);
  if (k < 0 && name.size() < 10 && name.find_first_not_of("0123456789") == std::string::npos &&
      std::stoul(name) < class_names.size())
    k = int(std::stoul(name));
  if (k < 0)
    throw InputError("--class-order: " + in_quotes(name) + " in " + in_quotes(entry) +
                     " is neither one of the model's class names (" + some_of(class_names) +
                     ") nor a class index below " + std::to_string(class_names.size()));
  return {folder, k};
}

std::vector<int> map_explicitly(const std::string &dir, const std::vector<std::string> &folders,
                                const std::vector<std::string> &class_names, const std::vector<std::string> &order,
                                std::FILE *notes) {
  const size_t pairs = size_t(std::count_if(order.begin(), order.end(),
                                            [](const std::string &e) { return e.find('=') != std::string::npos; }));
  if (pairs != 0 && pairs != order.size())
    throw InputError("--class-order: give either every class's folder in class order (A,B,C: A is class 0) or "
                     "FOLDER=CLASS pairs, not a mix of both");
  if (pairs == 0 && order.size() != class_names.size())
    throw InputError("--class-order names " + app::count_of(static_cast<long long>(order.size()), "folder") +
                     ", but the model has " +
                     app::count_of(static_cast<long long>(class_names.size()), "class", "classes") +
                     " (entry i is the folder of class i); for some of the classes give FOLDER=CLASS pairs");
  std::map<std::string, int> class_of_folder;
  for (size_t k = 0; k < order.size(); ++k) {
    const auto [folder, cls] = pairs ? folder_and_class(order[k], class_names) : std::make_pair(order[k], int(k));
    if (std::find(folders.begin(), folders.end(), folder) == folders.end())
      throw InputError(dir + ": --class-order names folder " + in_quotes(folder) + " (class " + std::to_string(cls) +
                       "), which is not a sub-folder of " + dir);
    if (!class_of_folder.emplace(folder, cls).second)
      throw InputError("--class-order names folder " + in_quotes(folder) + " twice");
  }
  std::vector<int> mapping;
  std::vector<std::string> skipped;
  for (const auto &f : folders) {
    const auto it = class_of_folder.find(f);
    mapping.push_back(it == class_of_folder.end() ? -1 : it->second);
    if (it == class_of_folder.end()) skipped.push_back(f);
  }
  if (!skipped.empty())
    std::fprintf(notes, "pola eval: skipping %s of %s not named in --class-order: %s\n",
                 app::count_of(static_cast<long long>(skipped.size()), "folder").c_str(), dir.c_str(),
                 some_of(skipped).c_str());
  return mapping;
}

} // namespace

int class_index_of(const std::string &name, const std::vector<std::string> &class_names) {
  const auto exact = std::find(class_names.begin(), class_names.end(), name);
  if (exact != class_names.end()) return int(exact - class_names.begin());
  const std::string key = class_name_key(name);
  int found = -1;
  for (size_t k = 0; k < class_names.size(); ++k) {
    if (class_name_key(class_names[k]) != key) continue;
    if (found >= 0) return -1; // two classes with this key: it identifies neither
    found = int(k);
  }
  return key.empty() ? -1 : found;
}

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
  const std::string choose = "give each folder's class with --class-order FOLDER=CLASS,... (or every class's folder "
                             "in class order, --class-order A,B,...), or --class-order-file FILE";
  // Rule 2: by name, as labels files name classes.
  std::vector<int> by_name;
  std::vector<std::string> unmatched;
  std::set<int> taken;
  for (const auto &f : folders) {
    const int k = class_index_of(f, class_names);
    by_name.push_back(k >= 0 && taken.insert(k).second ? k : -1);
    if (by_name.back() < 0) unmatched.push_back(f);
  }
  if (unmatched.empty() && folders.size() < class_names.size()) {
    // Every folder is named after a class, some classes have none: a subset.
    std::vector<std::string> present;
    for (const int k : by_name) present.push_back(class_names[size_t(k)]);
    std::fprintf(notes,
                 "pola eval: %s has folders for %zu of the model's %s (%s); the accuracy is over their images, the "
                 "model still choosing among all its classes\n",
                 dir.c_str(), folders.size(),
                 app::count_of(static_cast<long long>(class_names.size()), "class", "classes").c_str(),
                 some_of(present).c_str());
    return by_name;
  }
  if (folders.size() != class_names.size()) {
    std::vector<std::string> missing; // classes no folder is named after, when names are used at all
    for (size_t k = 0; k < class_names.size() && unmatched.size() < folders.size(); ++k)
      if (!taken.count(int(k))) missing.push_back(class_names[k]);
    throw InputError(dir + ": " + app::count_of(static_cast<long long>(folders.size()), "class folder") + " (" +
                     some_of(folders) + "), but the model has " +
                     app::count_of(static_cast<long long>(class_names.size()), "class", "classes") +
                     (unmatched.empty() ? "" : "; not named after a class: " + some_of(unmatched)) +
                     (missing.empty() ? "" : "; no folder for class " + some_of(missing)) + "; " + choose);
  }
  if (unmatched.empty()) return by_name;

  // Rule 3: sorted order, unless it contradicts a folder that is named like a class.
  for (size_t i = 0; i < folders.size(); ++i)
    if (by_name[i] >= 0 && by_name[i] != int(i))
      throw InputError(dir + ": some folders are not named after the model's classes (" + some_of(unmatched, 3) +
                       "), so folders cannot be mapped by name, and sorted order would make folder " +
                       in_quotes(folders[i]) + " class " + std::to_string(i) + " although it is named like class " +
                       std::to_string(by_name[i]) + " " + in_quotes(class_names[by_name[i]]) +
                       "; name every folder after its class, or " + choose);
  std::fprintf(notes,
               "pola eval: folder names do not match the model's class names (e.g. %s); folders in sorted order are "
               "classes 0..%zu: %s -> %s, %s -> %s, ... (use --class-order to choose)\n",
               in_quotes(unmatched[0]).c_str(), folders.size() - 1, in_quotes(folders[0]).c_str(),
               in_quotes(class_names[0]).c_str(), in_quotes(folders[folders.size() > 1]).c_str(),
               in_quotes(class_names[folders.size() > 1]).c_str());
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
