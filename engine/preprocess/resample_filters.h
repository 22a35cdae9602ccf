// The interpolation kernels of PIL's Image.resize, as continuous functions of
// the distance (in source pixels, before antialias scaling) from the sample
// point. Each has a support: the weight is 0 beyond it.
#pragma once

namespace pola::preprocess {

struct ResampleFilter {
  const char *name;
  double support;
  double (*weight)(double x);
};

// Keys' cubic convolution with a = -0.5 (Image.BICUBIC), support 2.
extern const ResampleFilter kBicubicFilter;
// Triangle (Image.BILINEAR), support 1.
extern const ResampleFilter kBilinearFilter;

} // namespace pola::preprocess
