#include "model/preprocess_defaults.h"

namespace pola {

nlohmann::json preprocess_for(const ModelConfig &c) {
  nlohmann::json p;
  p["input_size"] = c.img_size;
  // SPEC section 7: 224 models resize to 256 then crop; 384 models resize
  // straight to 384. Other sizes follow the 224 rule (resize = 256/224 x input).
  const int64_t resize = c.img_size >= 384 ? c.img_size : (c.img_size * 256 + 112) / 224;
  p["resize"] = resize;
  p["crop"] = c.img_size;
  p["interpolation"] = "bicubic";
  if (c.in_chans == 1) {
    p["mean"] = {0.449};
    p["std"] = {0.226};
  } else {
    p["mean"] = {0.485, 0.456, 0.406};
    p["std"] = {0.229, 0.224, 0.225};
  }
  p["channels"] = c.in_chans;
  return p;
}

} // namespace pola
