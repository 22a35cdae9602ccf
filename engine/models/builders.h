// Model builders: turn a config + weights into a plan's graph. They know the
// model families, never the ISA.
#pragma once

#include "engine/models/build_context.h"
#include "engine/models/qk_taps.h"
#include "model/model_config.h"

namespace pola::models {

void build_pvt(BuildContext &ctx);
void build_swin(BuildContext &ctx);
void build_pola_pp(BuildContext &ctx);
// Where their nodes hold a polarity block's q and k (engine/models/<family>_taps.cpp).
QkTaps pvt_qk_taps(const std::string &block, int64_t dim);
QkTaps swin_qk_taps(const std::string &block, int64_t dim);
QkTaps pola_pp_qk_taps(const std::string &block, int64_t dim);

// The builder of a family (engine/models/family_builders.cpp holds the one
// table: a new family adds its builder there, next to its line in
// model/family.cpp). Throws std::logic_error for a family with no builder.
using BuildFn = void (*)(BuildContext &ctx);
BuildFn builder_for(Family family);
// The same table's q / k taps of a family (qk_taps() in qk_taps.h reads them).
using QkTapsFn = QkTaps (*)(const std::string &block, int64_t dim);

} // namespace pola::models
