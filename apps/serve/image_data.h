// The images of one request as the engine reads them: rows x C x H x W
// floats. Parsed JSON data and decoded images are float arrays; a binary
// tensor stays in the request body it arrived in, moved to the body's start
// (where the allocation is aligned for floats), so a large input is never
// copied into a second, freshly allocated buffer.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pola::serve {

class ImageData {
 public:
  ImageData() = default;
  explicit ImageData(std::vector<float> floats) : floats_(std::move(floats)) {}
  // `bytes` holds the floats from its first byte on, in the machine's byte order.
  explicit ImageData(std::string bytes) : bytes_(std::move(bytes)), in_bytes_(true) {}

  const float *data() const { return in_bytes_ ? reinterpret_cast<const float *>(bytes_.data()) : floats_.data(); }
  size_t size() const { return in_bytes_ ? bytes_.size() / sizeof(float) : floats_.size(); }

 private:
  std::vector<float> floats_;
  std::string bytes_;
  bool in_bytes_ = false;
};

} // namespace pola::serve
