#include "model/geometry.h"

#include "model/family.h"

namespace pola {

ModelGeometry model_geometry(const ModelConfig &c) { return model_detail::family_rules(c.family).geometry(c); }

} // namespace pola
