#include "engine/models/build_context.h"

#include <stdexcept>

#include "engine/ops/token_ops.h"

namespace pola::models {

const float *BuildContext::size_table(int64_t floats, const std::function<std::vector<float>()> &compute) {
  plan.side_bytes += static_cast<size_t>(floats) * sizeof(float);
  if (sizing_only) return nullptr;
  std::vector<float> table = compute();
  // The count is what a sizing pass charged for this table: they must agree.
  if (static_cast<int64_t>(table.size()) != floats)
    throw std::logic_error("plan table of " + std::to_string(table.size()) + " floats, " + std::to_string(floats) +
                           " counted");
  return make<std::vector<float>>(std::move(table))->data();
}

TensorRef new_tensor(BuildContext &ctx, const std::string &name, int64_t rows, int64_t cols, DType dtype) {
  return ctx.plan.graph.tensor(name, rows, cols, dtype);
}

void add_node(BuildContext &ctx, const std::string &name, std::vector<TensorRef> inputs,
              std::vector<TensorRef> outputs, NodeFn run, Precision precision) {
  ctx.plan.graph.add(name, std::move(inputs), std::move(outputs), std::move(run), precision);
}

const float *grid_table(BuildContext &ctx, const std::string &name, int64_t ckpt_h, int64_t ckpt_w, int64_t h,
                        int64_t w, int64_t channels) {
  const float *stored = ctx.weights.get(name, {1, ckpt_h * ckpt_w, channels});
  if (h == ckpt_h && w == ckpt_w) return stored;
  return ctx.size_table(h * w * channels,
                        [&] { return ops::resize_token_grid(stored, ckpt_h, ckpt_w, h, w, channels); });
}

size_t last_needed_stage(const PlanKey &key, size_t stages) {
  if (key.pooled || key.logits) return stages - 1;
  size_t last = 0;
  for (size_t i = 0; i < stages; ++i)
    if (key.stages & (1u << i)) last = i;
  return last;
}

void add_stage_result(BuildContext &ctx, size_t stage, const TensorRef &tokens) {
  Plan &plan = ctx.plan;
  if (plan.stage_tokens.size() <= stage) plan.stage_tokens.resize(stage + 1);
  if (!(plan.key.stages & (1u << stage))) return;
  plan.graph.mark_result(tokens);
  plan.stage_tokens[stage] = tokens;
}

} // namespace pola::models
