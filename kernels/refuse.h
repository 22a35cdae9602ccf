// How a kernel refuses arguments it cannot run (a shape its entry's fits()
// rejects, an unknown feature map): std::invalid_argument naming the kernel,
// thrown before any parallel region starts. Refusing, not falling back: which
// kernel runs is the registry's decision (registry.h), never the kernel's.
#pragma once

#include "kernels/attention_args.h"

namespace pola::kernels {

[[noreturn]] void refuse(const char *kernel, const char *why);
[[noreturn]] void refuse_feature_map(const char *kernel, const FeatureMap &m);

} // namespace pola::kernels
