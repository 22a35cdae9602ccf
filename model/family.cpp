// The one table of model families: adding a family adds one line here.
#include "model/family.h"

#include <iterator>

namespace pola {
namespace model_detail {
namespace {
const FamilyRules *const kFamilies[] = {&kPvtRules, &kSwinRules, &kPolaPPRules};
} // namespace

const FamilyRules &family_rules(Family family) {
  for (const FamilyRules *f : kFamilies)
    if (f->family == family) return *f;
  throw std::logic_error("model family " + std::to_string(static_cast<int>(family)) + " has no rules");
}

const FamilyRules *find_family(const std::string &name) {
  for (const FamilyRules *f : kFamilies)
    if (name == f->name) return f;
  return nullptr;
}

std::string family_names(const char *conjunction) {
  std::string out;
  const size_t n = std::size(kFamilies);
  for (size_t i = 0; i < n; ++i)
    out += (i == 0 ? "" : i + 1 == n ? std::string(" ") + conjunction + " " : ", ") + kFamilies[i]->name;
  return out;
}

} // namespace model_detail

const char *family_name(Family family) { return model_detail::family_rules(family).name; }

std::string block_name(const ModelConfig &c, size_t stage, size_t index) {
  return model_detail::family_rules(c.family).block_name(stage, index);
}

std::vector<const FamilyDetector *> family_detectors() {
  std::vector<const FamilyDetector *> all;
  for (const model_detail::FamilyRules *f : model_detail::kFamilies) all.push_back(f->detect);
  return all;
}

} // namespace pola
