// The one table of model families: adding a family adds one line here.
#include "model/family.h"

namespace pola {
namespace model_detail {
namespace {
const FamilyRules *const kFamilies[] = {&kPvtRules, &kSwinRules};
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

} // namespace model_detail

const char *family_name(Family family) { return model_detail::family_rules(family).name; }

} // namespace pola
