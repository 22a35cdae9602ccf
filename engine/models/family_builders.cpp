// The one table of graph builders, by model family. model/family.cpp lists a
// family's rules (config keys, checks, geometry, tensors); this lists how its
// graph is built and which of its nodes hold a polarity block's q and k, so
// neither Model::build nor the attention-map tool holds a per-family branch.
#include <stdexcept>
#include <string>

#include "engine/models/builders.h"
#include "model/model_config.h"

namespace pola::models {
namespace {
struct FamilyBuilder {
  Family family;
  BuildFn build;
  QkTapsFn qk_taps;
};
constexpr FamilyBuilder kBuilders[] = {
    {Family::pvt, build_pvt, pvt_qk_taps},
    {Family::swin, build_swin, swin_qk_taps},
};

const FamilyBuilder &entry(Family family) {
  for (const FamilyBuilder &b : kBuilders)
    if (b.family == family) return b;
  throw std::logic_error(std::string("model family ") + family_name(family) + " has no graph builder");
}
} // namespace

BuildFn builder_for(Family family) { return entry(family).build; }

QkTaps qk_taps(Family family, const std::string &block, int64_t dim) { return entry(family).qk_taps(block, dim); }

} // namespace pola::models
