// The one table of graph builders, by model family. model/family.cpp lists a
// family's rules (config keys, checks, geometry, tensors); this lists how its
// graph is built and which of its nodes hold a polarity block's q and k, so
// neither Model::build nor the attention-map tool holds a per-family branch.
#include <stdexcept>
#include <string>

#include "engine/models/builders.h"
#include "model/error.h"
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
    {Family::pp, build_pola_pp, pola_pp_qk_taps},
};

const FamilyBuilder &entry(Family family) {
  for (const FamilyBuilder &b : kBuilders)
    if (b.family == family) return b;
  // A family the model description knows (its files are read and described)
  // but this engine cannot run yet: the user's file is fine, the engine is
  // not ready for it, so the refusal is an input error with a plain message.
  throw InputError(std::string("this engine cannot run model family '") + family_name(family) +
                   "' yet: it has no graph builder (the model's config is valid; only its description, "
                   "detection and cost are implemented)");
}
} // namespace

BuildFn builder_for(Family family) { return entry(family).build; }

QkTaps qk_taps(Family family, const std::string &block, int64_t dim) { return entry(family).qk_taps(block, dim); }

} // namespace pola::models
