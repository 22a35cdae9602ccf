// Expanding `pola classify`'s arguments; see image_inputs.h.
#include "image_inputs.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

namespace pola::app {
namespace {

namespace fs = std::filesystem;

constexpr const char *kImageExtensions[] = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tga", ".psd",
                                            ".pnm", ".pgm",  ".ppm", ".pbm", ".hdr", ".pic"};

// Symbolic links to directories are not followed: a link back up the tree would never end.
void add_directory(const std::string &dir, ImageInputs &out) {
  std::vector<std::string> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec) && has_image_extension(it->path().string())) found.push_back(it->path().string());
  }
  if (ec) {
    out.problems.push_back(dir + ": cannot read the directory: " + ec.message());
    return;
  }
  if (found.empty()) {
    out.problems.push_back(dir + ": no image files in this directory (looked for .jpg .jpeg .png .bmp .gif .tga "
                                 ".psd .pnm .pgm .ppm .pbm .hdr .pic)");
    return;
  }
  std::sort(found.begin(), found.end());
  out.files.insert(out.files.end(), found.begin(), found.end());
}

void add_argument(const std::string &arg, ImageInputs &out) {
  std::error_code ec;
  if (fs::is_directory(arg, ec)) add_directory(arg, out);
  else out.files.push_back(arg);
}

} // namespace

bool has_image_extension(const std::string &path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return std::find(std::begin(kImageExtensions), std::end(kImageExtensions), ext) != std::end(kImageExtensions);
}

ImageInputs expand_image_inputs(const std::vector<std::string> &arguments, std::istream &stdin_list) {
  ImageInputs out;
  for (const auto &arg : arguments) {
    if (arg != "-") {
      add_argument(arg, out);
      continue;
    }
    std::string line;
    while (std::getline(stdin_list, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back(); // lists written on Windows
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      add_argument(line, out);
    }
  }
  return out;
}

} // namespace pola::app
