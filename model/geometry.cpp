#include "model/geometry.h"

#include "model/error.h"
#include "model/family.h"

namespace pola {

ModelGeometry model_geometry(const ModelConfig &c) { return model_geometry(c, c.img_size, c.img_size); }

ModelGeometry model_geometry(const ModelConfig &c, int64_t height, int64_t width) {
  return model_detail::family_rules(c.family).geometry(c, height, width);
}

int64_t input_size_multiple(const ModelConfig &c) { return model_detail::family_rules(c.family).size_multiple(c); }

int64_t padded_input_side(const ModelConfig &c, int64_t side) {
  const int64_t m = input_size_multiple(c);
  return side <= 0 ? m : (side + m - 1) / m * m;
}

namespace {

// "224 or 256" (or just one side when `side` is a multiple, or below the first).
std::string nearest_sides(int64_t side, int64_t m) {
  const int64_t below = side / m * m, above = below + m;
  if (below == side) return std::to_string(side);
  if (below < m) return std::to_string(above);
  return std::to_string(below) + " or " + std::to_string(above);
}

// Why a size whose sides are whole multiples still cannot run ("" if it can):
// a stage's grid or its spatially reduced key grid would be empty.
std::string empty_grid_problem(const ModelGeometry &g) {
  for (size_t i = 0; i < g.stages.size(); ++i) {
    const StageGeometry &st = g.stages[i];
    const std::string stage = "stage " + std::to_string(i + 1);
    if (st.res_h < 1 || st.res_w < 1) return stage + " would have no tokens";
    for (const BlockGeometry &b : st.blocks)
      if (b.kv_h < 1 || b.kv_w < 1)
        return stage + "'s " + std::to_string(st.res_h) + "x" + std::to_string(st.res_w) +
               " grid is smaller than its spatial-reduction ratio";
  }
  return "";
}

} // namespace

void check_input_size(const ModelConfig &c, int64_t height, int64_t width, const std::string &context,
                      const std::string &remedy) {
  const int64_t m = input_size_multiple(c);
  const std::string size = std::to_string(height) + "x" + std::to_string(width);
  if (height < 1 || width < 1 || height > kMaxInputSide || width > kMaxInputSide)
    throw InputError(context + ": input size " + size + " is out of range: each side must be in " +
                     std::to_string(m) + ".." + std::to_string(kMaxInputSide / m * m));
  if (height % m != 0 || width % m != 0)
    throw InputError(context + ": input size " + size + " is not valid for this model: height and width must be " +
                     "multiples of " + std::to_string(m) + "; nearest valid: height " + nearest_sides(height, m) +
                     ", width " + nearest_sides(width, m) + (remedy.empty() ? "" : " (" + remedy + ")"));
  const std::string problem = empty_grid_problem(model_geometry(c, height, width));
  if (!problem.empty())
    throw InputError(context + ": input size " + size + " is too small for this model: " + problem);
}

} // namespace pola
