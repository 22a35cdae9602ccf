#include "input_batch.h"

#include <algorithm>

#include "model/geometry.h"
#include "weights/error.h"

namespace pola::app {

InputBatch fit_input_batch(io::NpyArray x, const ModelConfig &cfg, bool pad, const std::string &context,
                           const std::string &remedy) {
  if (x.shape.size() != 4 || x.shape[1] != cfg.in_chans) {
    std::string got = "(";
    for (size_t i = 0; i < x.shape.size(); ++i) got += (i ? ", " : "") + std::to_string(x.shape[i]);
    throw InputError(context + ": input shape " + got + ") does not match the model's (batch, " +
                     std::to_string(cfg.in_chans) + ", height, width)");
  }
  InputBatch in;
  in.batch = x.shape[0];
  in.original_height = in.height = x.shape[2];
  in.original_width = in.width = x.shape[3];
  if (in.batch < 1 || in.batch > 4096) throw InputError(context + ": batch must be in 1..4096");
  if (pad && in.height >= 1 && in.width >= 1 && in.height <= kMaxInputSide && in.width <= kMaxInputSide) {
    in.height = padded_input_side(cfg, in.height);
    in.width = padded_input_side(cfg, in.width);
  }
  check_input_size(cfg, in.height, in.width, context, remedy);
  if (in.height != in.original_height || in.width != in.original_width) {
    // Zeros at the bottom and right: the image keeps its pixel coordinates.
    io::NpyArray padded;
    padded.shape = {in.batch, x.shape[1], in.height, in.width};
    padded.data.assign(static_cast<size_t>(in.batch * x.shape[1] * in.height * in.width), 0.f);
    for (int64_t plane = 0; plane < in.batch * x.shape[1]; ++plane)
      for (int64_t y = 0; y < in.original_height; ++y) {
        const float *src = x.data.data() + (plane * in.original_height + y) * in.original_width;
        std::copy(src, src + in.original_width, padded.data.data() + (plane * in.height + y) * in.width);
      }
    x = std::move(padded);
  }
  in.array = std::move(x);
  return in;
}

std::optional<BatchShape> peek_input_batch(const std::string &path, const ModelConfig &cfg, bool pad) {
  const std::vector<int64_t> shape = io::read_npy_shape(path);
  if (shape.size() != 4 || shape[1] != cfg.in_chans || shape[0] < 1 || shape[0] > 4096) return std::nullopt;
  BatchShape s{shape[0], shape[2], shape[3]};
  if (pad && s.height >= 1 && s.width >= 1 && s.height <= kMaxInputSide && s.width <= kMaxInputSide) {
    s.height = padded_input_side(cfg, s.height);
    s.width = padded_input_side(cfg, s.width);
  }
  try {
    check_input_size(cfg, s.height, s.width, path);
  } catch (const InputError &) {
    return std::nullopt;
  }
  return s;
}

InputBatch read_input_batch(const std::string &path, const ModelConfig &cfg, bool pad) {
  return fit_input_batch(io::read_npy(path), cfg, pad, path, "or pad the arrays to one with --pad");
}

} // namespace pola::app
