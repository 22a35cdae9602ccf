// The family-agnostic front of the cost count: the geometry at the asked size,
// then the family's own count.
#include "model/flops.h"

#include "model/family.h"

namespace pola {

int64_t macs_per_image(const ModelConfig &cfg) { return macs_per_image(cfg, cfg.img_size, cfg.img_size); }

int64_t macs_per_image(const ModelConfig &cfg, int64_t height, int64_t width) {
  return model_detail::family_rules(cfg.family).macs(cfg, model_geometry(cfg, height, width));
}

} // namespace pola
