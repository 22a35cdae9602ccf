// The int8 model file `pola quantize` writes (FORMAT.md, I8 tensors): the
// float file's tensors, with each calibrated linear layer's weight replaced
// by symmetric int8 per output channel and its activation scale beside it.
//   weight  s_w[o] = max_i |W[o, i]| / 127 (1 for an all-zero row),
//           q[o, i] = clamp(nearest-even(W[o, i] / s_w[o]), -127, 127)
//   input   s_in = (max |x| over the calibration images) / 127 (1 if that is 0)
// stored as `P.weight` (I8, the weight's shape), `P.weight_scale` (F32, out)
// and `P.input_scale` (F32, 1).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "weights/model_file.h"

namespace pola::weights {

struct Int8Rows {
  std::vector<int8_t> q;     // rows x cols, row-major
  std::vector<float> scale;  // rows
};
// w: rows x cols row-major floats.
Int8Rows quantize_rows(const float *w, int64_t rows, int64_t cols);

// The activation scale of a layer whose calibration inputs reached max_abs.
float input_scale_for(float max_abs);

struct QuantizeRecord {
  std::string calibration; // what the images were, for the `quantization` metadata
  int64_t images = 0;
  // Layers that could run int8 but were kept float (--max-accuracy-drop), and the
  // accuracy measured that decided it; both left out of the metadata when empty.
  std::vector<std::string> kept_float;
  std::string accuracy;
};

// Writes `out_path`: every tensor of `in` as stored, except that each layer P
// of `input_max_abs` (P -> max |x| of its inputs) has `P.weight` int8 as above
// plus its scales; the metadata gains `quantization`. Refuses (InputError)
// a file already holding int8 tensors and a layer whose weight is missing.
void write_int8_model(const ModelFile &in, const std::map<std::string, float> &input_max_abs,
                      const QuantizeRecord &record, const std::string &out_path);

} // namespace pola::weights
