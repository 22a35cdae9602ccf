// The one table of graph builders, by model family. model/family.cpp lists a
// family's rules (config keys, checks, geometry, tensors); this lists how its
// graph is built, so Model::build holds no per-family branch.
#include <stdexcept>
#include <string>

#include "engine/models/builders.h"
#include "model/model_config.h"

namespace pola::models {
namespace {
struct FamilyBuilder {
  Family family;
  BuildFn build;
};
constexpr FamilyBuilder kBuilders[] = {{Family::pvt, build_pvt}, {Family::swin, build_swin}};
} // namespace

BuildFn builder_for(Family family) {
  for (const FamilyBuilder &b : kBuilders)
    if (b.family == family) return b.build;
  throw std::logic_error(std::string("model family ") + family_name(family) + " has no graph builder");
}

} // namespace pola::models
