// The image-file layouts of `pola eval` (dataset.h): ImageFolder trees and labels files.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "class_folders.h"
#include "dataset.h"
#include "engine/preprocess/decode_image.h"
#include "plural.h"
#include "weights/error.h"

namespace pola::eval {
namespace {

namespace fs = std::filesystem;

struct LabelledFile {
  std::string relative; // to the data directory, for messages and the predictions file
  int label;
};

class FileDataset : public Dataset {
 public:
  FileDataset(std::string dir, std::vector<LabelledFile> files, std::string what)
      : dir_(std::move(dir)), files_(std::move(files)), what_(std::move(what)) {}

  size_t size() const override { return files_.size(); }
  int label(size_t i) const override { return files_[i].label; }
  std::string item_name(size_t i) const override { return files_[i].relative; }
  std::string description() const override { return what_; }
  preprocess::ImageU8 load(size_t i, int channels) const override {
    return preprocess::decode_image(dir_ + "/" + files_[i].relative, channels);
  }

 private:
  std::string dir_;
  std::vector<LabelledFile> files_;
  std::string what_;
};

// The extensions decode_image understands (torchvision's list minus formats we cannot read).
bool is_image_file(const fs::path &p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (const char *e : {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tga", ".ppm", ".pgm", ".pnm", ".psd"})
    if (ext == e) return true;
  return false;
}

std::string trim(const std::string &s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// A label is a class name, matched as folder names are (class_index_of: "ankle-boot" is "Ankle boot"),
// or a class index.
int parse_label(const std::string &text, const std::vector<std::string> &class_names, const std::string &where) {
  const int by_name = class_index_of(text, class_names);
  if (by_name >= 0) return by_name;
  if (!text.empty() && text.size() < 10 && std::all_of(text.begin(), text.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; })) {
    const int index = std::stoi(text);
    if (index < int(class_names.size())) return index;
  }
  throw InputError(where + ": label '" + text + "' is neither a class index below " +
                   std::to_string(class_names.size()) +
                   " nor one of the model's class names (matched ignoring case and '-', '_', ' ', '/')");
}

bool has_class_folders(const std::string &dir) {
  for (const auto &e : fs::directory_iterator(dir))
    if (e.is_directory()) return true;
  return false;
}

} // namespace

std::unique_ptr<Dataset> open_image_folder(const std::string &dir, const std::vector<std::string> &class_names,
                                           const std::vector<std::string> &class_order) {
  std::vector<std::string> folders;
  for (const auto &e : fs::directory_iterator(dir))
    if (e.is_directory()) folders.push_back(e.path().filename().string());
  std::sort(folders.begin(), folders.end());
  if (folders.empty())
    throw InputError(dir + ": no class sub-folders (ImageFolder layout)");
  const std::vector<int> class_of = map_class_folders(dir, folders, class_names, class_order, stderr);
  std::vector<LabelledFile> files;
  size_t used = 0;
  for (size_t f = 0; f < folders.size(); ++f) {
    if (class_of[f] < 0) continue;
    ++used;
    std::vector<std::string> found;
    for (const auto &e : fs::recursive_directory_iterator(fs::path(dir) / folders[f],
                                                          fs::directory_options::follow_directory_symlink))
      if (e.is_regular_file() && is_image_file(e.path())) found.push_back(fs::relative(e.path(), dir).string());
    std::sort(found.begin(), found.end());
    for (auto &name : found) files.push_back({std::move(name), class_of[f]});
  }
  if (files.empty()) throw InputError(dir + ": the class folders hold no image files");
  // Images stay grouped folder by folder in sorted folder order, whatever class each holds.
  const std::string what = "ImageFolder " + dir + " (" + app::count_of(static_cast<long long>(used), "class", "classes") +
                           ", " + app::count_of(static_cast<long long>(files.size()), "image") + ")";
  return std::make_unique<FileDataset>(dir, std::move(files), what);
}

std::unique_ptr<Dataset> open_labels_file(const std::string &dir, const std::string &labels_file,
                                          const std::vector<std::string> &class_names) {
  std::ifstream in(labels_file);
  if (!in) throw InputError(labels_file + ": cannot open the labels file");
  std::vector<LabelledFile> files;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const std::string where = labels_file + ":" + std::to_string(line_no);
    // A tab separates path and label when present (so both may contain spaces); otherwise the
    // first run of blanks does.
    size_t cut = line.find('\t');
    if (cut == std::string::npos) cut = line.find(' ');
    if (cut == std::string::npos) throw InputError(where + ": expected 'PATH<TAB>LABEL'");
    const std::string path = trim(line.substr(0, cut));
    files.push_back({path, parse_label(trim(line.substr(cut + 1)), class_names, where)});
    if (!fs::is_regular_file(dir + "/" + path)) throw InputError(where + ": " + dir + "/" + path + " does not exist");
  }
  if (files.empty()) throw InputError(labels_file + ": no labelled images");
  const std::string what = "labels file " + labels_file + " (" + app::count_of(static_cast<long long>(files.size()), "image") +
                           " under " + dir + ")";
  return std::make_unique<FileDataset>(dir, std::move(files), what);
}

std::unique_ptr<Dataset> open_dataset(const DatasetOptions &opt, const std::vector<std::string> &class_names) {
  try {
    if (!fs::is_directory(opt.dir)) throw InputError(opt.dir + ": not a directory");
    if (!opt.labels_file.empty()) return open_labels_file(opt.dir, opt.labels_file, class_names);
    if (!opt.class_order.empty() && has_idx_pair(opt.dir, opt.split))
      throw InputError(opt.dir + ": --class-order applies to ImageFolder trees, but this is an IDX pair");
    if (has_idx_pair(opt.dir, opt.split)) return open_idx_dataset(opt.dir, opt.split, int(class_names.size()));
    if (!has_class_folders(opt.dir))
      throw InputError(opt.dir + ": neither an IDX pair (" + opt.split + "-images-idx3-ubyte[.gz] + " + opt.split +
                       "-labels-idx1-ubyte[.gz]; see --split) nor an ImageFolder tree (no class sub-folders)");
    return open_image_folder(opt.dir, class_names, opt.class_order);
  } catch (const fs::filesystem_error &e) {
    // An unreadable folder is the user's input, not an internal error.
    throw InputError(std::string("--data: ") + e.what());
  }
}

} // namespace pola::eval
