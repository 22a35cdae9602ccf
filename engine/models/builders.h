// Model builders: turn a config + weights into a plan's graph. They know the
// model families, never the ISA.
#pragma once

#include "engine/models/build_context.h"

namespace pola::models {

void build_pvt(BuildContext &ctx);
void build_swin(BuildContext &ctx);

} // namespace pola::models
