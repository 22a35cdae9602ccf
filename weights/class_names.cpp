#include "weights/class_names.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "weights/error.h"

namespace pola::weights {

extern const char *const kImagenetClassesText; // imagenet_classes.cpp (generated)

const std::vector<std::string> &imagenet_class_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    std::istringstream in(kImagenetClassesText);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) v.push_back(line);
    return v;
  }();
  return names;
}

std::vector<std::string> default_class_names(int64_t num_classes) {
  if (num_classes == 1000 && imagenet_class_names().size() == 1000) return imagenet_class_names();
  std::vector<std::string> v;
  for (int64_t i = 0; i < num_classes; ++i) v.push_back("class_" + std::to_string(i));
  return v;
}

namespace {

constexpr const char *kSpace = " \t\v\f";
// Far above any real label set (ImageNet-21k's names take ~1 MB).
constexpr size_t kMaxLabelsFileBytes = size_t(64) << 20;

// Surrounding spaces are invisible in most editors and would make "cat" and
// "cat " two different classes, so they are not part of the name.
std::string trimmed(const std::string &s) {
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

} // namespace

std::vector<std::string> read_labels_file(const std::string &path) {
  if (std::filesystem::is_directory(path)) throw InputError(path + ": is a directory, not a labels file");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the labels file" + (errno ? std::string(": ") + std::strerror(errno) : ""));
  // Read with a bound, so /dev/zero or a huge file given by mistake is an
  // error rather than a program that eats all memory.
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= kMaxLabelsFileBytes && in.read(chunk, sizeof chunk).gcount() > 0)
    text.append(chunk, static_cast<size_t>(in.gcount()));
  if (in.bad()) throw InputError(path + ": cannot read the labels file");
  if (text.size() > kMaxLabelsFileBytes)
    throw InputError(path + ": larger than " + std::to_string(kMaxLabelsFileBytes >> 20) +
                     " MB; a labels file is one class name per line");
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);

  std::vector<std::string> lines;
  std::istringstream split(text);
  for (std::string line; std::getline(split, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find('\0') != std::string::npos)
      throw InputError(path + ": line " + std::to_string(lines.size() + 1) +
                       " holds a NUL byte; a labels file is text, one class name per line");
    lines.push_back(trimmed(line));
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty()) throw InputError(path + ": the labels file holds no class names (one name per line)");

  std::map<std::string, size_t> first_line; // name -> 1-based line
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t line_no = i + 1;
    if (lines[i].empty())
      throw InputError(path + ": line " + std::to_string(line_no) +
                       " is empty; every class needs a name (blank lines are only allowed at the end)");
    try { // names are stored as JSON, which must be UTF-8
      (void)nlohmann::json(lines[i]).dump();
    } catch (const nlohmann::json::exception &) {
      throw InputError(path + ": line " + std::to_string(line_no) + " is not valid UTF-8 text; save the file as UTF-8");
    }
    auto [it, fresh] = first_line.emplace(lines[i], line_no);
    if (!fresh)
      throw InputError(path + ": class name '" + lines[i] + "' appears twice (lines " + std::to_string(it->second) +
                       " and " + std::to_string(line_no) + ")");
  }
  return lines;
}

std::vector<std::string> checked_class_names(const std::vector<std::string> &names) {
  if (names.empty()) throw InputError("labels is empty; give one class name per class, in class-index order");
  std::vector<std::string> out;
  std::map<std::string, size_t> first; // name -> its entry
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string entry = "labels[" + std::to_string(i) + "]";
    std::string name = trimmed(names[i]);
    if (name.empty()) throw InputError(entry + " is empty; every class needs a name");
    if (name.find('\0') != std::string::npos) throw InputError(entry + " holds a NUL character");
    try { // names are stored as JSON, which must be UTF-8
      (void)nlohmann::json(name).dump();
    } catch (const nlohmann::json::exception &) {
      throw InputError(entry + " is not valid UTF-8 text");
    }
    auto [it, fresh] = first.emplace(name, i);
    if (!fresh)
      throw InputError(entry + ": class name '" + name + "' appears twice (labels[" + std::to_string(it->second) +
                       "] and " + entry + ")");
    out.push_back(std::move(name));
  }
  return out;
}

} // namespace pola::weights
