// `pola quantize --max-accuracy-drop P`: which calibrated layers stay float so
// that int8 costs at most P top-1 points on a labelled set.
//
// Every layer is first tried alone in int8 (the others float) on the first
// images of the set, and ranked by how far that moves the logits from the
// float model's (sum of squared differences over the sum of squares). Then the
// k most sensitive layers are kept float, k the smallest for which the whole
// set's top-1 drop is at most P, found by bisection: keeping more layers float
// is taken to cost no accuracy, and the k chosen was measured, not inferred.
// Each trial is a real int8 file run by the engine at --precision int8.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "weights/int8_quantize.h"
#include "weights/model_file.h"

namespace pola::app {

struct AccuracyGuardOptions {
  double max_drop = 0;       // points of top-1
  std::string model_path;    // the float model (its preprocessing metadata and fp32 run)
  std::string data, split;   // the labelled set: an IDX pair, an ImageFolder tree
  int64_t images = 1000;     // the first N images of it
  int64_t sensitivity_images = 256;
  int threads = 0, batch = 32;
  std::string trial_path;    // where trial files are written (removed afterwards)
};

struct AccuracyGuardResult {
  std::map<std::string, float> quantized; // layer -> max |x|, as write_int8_model takes it
  std::vector<std::string> kept_float;    // most sensitive first
  int64_t images = 0;
  std::string data_description;
  double float_top1 = 0, int8_top1 = 0;   // percent, on `images`
};

// Throws InputError when `data` cannot hold labels (a .npy batch): checked before calibrating.
void require_labelled_source(const std::string &data);

// Throws InputError when the set has no labels (a .npy batch) or cannot be read.
AccuracyGuardResult choose_int8_layers(const weights::ModelFile &float_file,
                                       const std::map<std::string, float> &input_max_abs,
                                       const weights::QuantizeRecord &record, const AccuracyGuardOptions &options);

} // namespace pola::app
