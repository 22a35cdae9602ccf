// Depthwise k x k convolution, stride 1, zero padding k/2, over NHWC token
// rows (DepthwiseConvArgs). Vectorised over channels; one output row (b, y)
// per work item, so any thread count computes every value the same way.
// The weights are repacked once per call into a tap-major (k*k, channels)
// scratch, so each tap's weights for a channel vector are one aligned load.
// Interior pixels (every tap inside the image) go in register tiles of
// several pixels: for k = 3, 5, 7 sliding tiles that load each source vector
// once per kernel row; for other k generic tiles in which a weight vector
// loaded once serves kPixels outputs. Border pixels run one at a time with
// their taps clipped to the image, which is how the zero padding is realised
// (no padded copy).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/attention_args.h"
#include "kernels/refuse.h"
#include "kernels/scratch.h"
#include "kernels/simd/common.hpp"

namespace pola::kernels::simd {

namespace depthwise_detail {

constexpr int kPixels = 4; // output pixels per generic tile
// Output pixels per sliding tile: accumulators plus K weights plus one source
// vector must fit the registers (K = 7: 16 of AVX-512's 32, 12 of AVX2's 16).
template <class A> constexpr int kSlidePixels = kRegisters<A> == 32 ? 8 : 4;

// What every tile of one call reads.
struct Plan {
  const DepthwiseConvArgs *a;
  const float *weight; // (k*k, cp) tap-major, zero above channels
  const float *bias;   // (cp), zero where absent
  int64_t cp;          // channels rounded up to lanes
};

// Output = acc (+ src) (+ old dst) for X pixels from x0, channels [c, c + n).
template <class A, int X>
inline void finish(const Plan &p, int64_t b, int64_t y, int64_t x0, int64_t c, int n, Vec<A> *acc) {
  const DepthwiseConvArgs &a = *p.a;
  const int64_t pixel = (b * a.height + y) * a.width + x0;
  for (int i = 0; i < X; ++i) {
    float *d = a.dst + (pixel + i) * a.ld_dst + c;
    if (a.add_src) acc[i] += load_first<A>(a.src + (pixel + i) * a.ld_src + c, n);
    if (a.accumulate) acc[i] += load_first<A>(d, n);
    store_first<A>(d, acc[i], n);
  }
}

// X output pixels of row y of image b, starting at x0, channels [c, c + n)
// (n <= lanes), over taps dy in [dy0, dy1), dx in [dx0, dx1).
template <class A, int X>
inline void tile(const Plan &p, int64_t b, int64_t y, int64_t x0, int dy0, int dy1, int dx0, int dx1, int64_t c,
                 int n) {
  const DepthwiseConvArgs &a = *p.a;
  const int k = a.kernel, pad = k / 2;
  Vec<A> acc[X];
  const Vec<A> bias = Vec<A>::load_aligned(p.bias + c);
  for (int i = 0; i < X; ++i) acc[i] = bias;
  for (int dy = dy0; dy < dy1; ++dy) {
    const float *row = a.src + ((b * a.height + y + dy - pad) * a.width + x0) * a.ld_src + c;
    const float *w = p.weight + int64_t(dy) * k * p.cp + c;
    for (int dx = dx0; dx < dx1; ++dx) {
      const Vec<A> wv = Vec<A>::load_aligned(w + dx * p.cp);
      for (int i = 0; i < X; ++i)
        acc[i] = xsimd::fma(load_first<A>(row + int64_t(i + dx - pad) * a.ld_src, n), wv, acc[i]);
    }
  }
  finish<A, X>(p, b, y, x0, c, n, acc);
}

// The taps of K-wide kernels over X interior pixels (every tap inside the
// row), sliding along x: each source vector of an image row is loaded once
// and feeds the up to K outputs it touches, with the row's K weights in
// registers, so a tap costs about one FMA and 1 + K/X loads / K instead of
// two loads.
template <class A, int X, int K>
inline void sliding_tile(const Plan &p, int64_t b, int64_t y, int64_t x0, int dy0, int dy1, int64_t c, int n) {
  const DepthwiseConvArgs &a = *p.a;
  constexpr int pad = K / 2;
  Vec<A> acc[X];
  const Vec<A> bias = Vec<A>::load_aligned(p.bias + c);
  for (int i = 0; i < X; ++i) acc[i] = bias;
  for (int dy = dy0; dy < dy1; ++dy) {
    const float *row = a.src + ((b * a.height + y + dy - pad) * a.width + x0 - pad) * a.ld_src + c;
    Vec<A> w[K];
    for (int dx = 0; dx < K; ++dx) w[dx] = Vec<A>::load_aligned(p.weight + int64_t(dy * K + dx) * p.cp + c);
    // Fully unrolled, so the weights and accumulators stay in registers.
#pragma GCC unroll 32
    for (int s = 0; s < X + K - 1; ++s) {
      const Vec<A> v = load_first<A>(row + int64_t(s) * a.ld_src, n);
#pragma GCC unroll 8
      for (int dx = 0; dx < K; ++dx)
        if (s - dx >= 0 && s - dx < X) acc[s - dx] = xsimd::fma(v, w[dx], acc[s - dx]);
    }
  }
  finish<A, X>(p, b, y, x0, c, n, acc);
}

// X pixels from x0 over every channel vector.
template <class A, int X>
inline void pixels(const Plan &p, int64_t b, int64_t y, int64_t x0, int dy0, int dy1, int dx0, int dx1) {
  constexpr int L = kLanes<A>;
  const int64_t C = p.a->channels;
  for (int64_t c = 0; c < C; c += L)
    tile<A, X>(p, b, y, x0, dy0, dy1, dx0, dx1, c, int(C - c < L ? C - c : L));
}

// One border pixel: only the taps that land inside the image.
template <class A> inline void border_pixel(const Plan &p, int64_t b, int64_t y, int64_t x, int dy0, int dy1) {
  const int64_t k = p.a->kernel, pad = k / 2, W = p.a->width;
  const int dx0 = int(x < pad ? pad - x : 0);
  const int dx1 = int(x + pad >= W ? W - x + pad : k);
  pixels<A, 1>(p, b, y, x, dy0, dy1, dx0, dx1);
}

// Interior pixels [lo, hi) of a row: sliding tiles for a kernel size K known
// at compile time (the model's 3, 5, 7), the generic tiles for K = 0.
template <class A, int K>
inline void interior(const Plan &p, int64_t b, int64_t y, int64_t lo, int64_t hi, int dy0, int dy1) {
  constexpr int L = kLanes<A>, X = K ? kSlidePixels<A> : kPixels;
  const int64_t C = p.a->channels;
  const auto run = [&](auto width, int64_t x) {
    constexpr int W = decltype(width)::value;
    for (int64_t c = 0; c < C; c += L) {
      const int n = int(C - c < L ? C - c : L);
      if constexpr (K != 0) sliding_tile<A, W, K>(p, b, y, x, dy0, dy1, c, n);
      else tile<A, W>(p, b, y, x, dy0, dy1, 0, p.a->kernel, c, n);
    }
  };
  int64_t x = lo;
  for (; x + X <= hi; x += X) run(std::integral_constant<int, X>{}, x);
  if (x < hi) with_width<X - 1>(int(hi - x), [&](auto w) { run(w, x); });
}

template <class A> void row(const Plan &p, int64_t r) {
  const DepthwiseConvArgs &a = *p.a;
  const int64_t k = a.kernel, pad = k / 2, H = a.height, W = a.width;
  const int64_t b = r / H, y = r % H;
  const int dy0 = int(y < pad ? pad - y : 0);
  const int dy1 = int(y + pad >= H ? H - y + pad : k);
  // Pixels [lo, hi) see every horizontal tap.
  const int64_t lo = pad < W ? pad : W, hi = W - pad > lo ? W - pad : lo;
  for (int64_t x = 0; x < lo; ++x) border_pixel<A>(p, b, y, x, dy0, dy1);
  switch (k) {
  case 3: interior<A, 3>(p, b, y, lo, hi, dy0, dy1); break;
  case 5: interior<A, 5>(p, b, y, lo, hi, dy0, dy1); break;
  case 7: interior<A, 7>(p, b, y, lo, hi, dy0, dy1); break;
  default: interior<A, 0>(p, b, y, lo, hi, dy0, dy1); break;
  }
  for (int64_t x = hi; x < W; ++x) border_pixel<A>(p, b, y, x, dy0, dy1);
}

} // namespace depthwise_detail

template <class A> void depthwise_conv(const DepthwiseConvArgs &a) {
  using namespace depthwise_detail;
  if (a.kernel <= 0 || a.kernel % 2 == 0) refuse("depthwise_conv", "the kernel size must be odd and positive");
  if (a.batch <= 0 || a.height <= 0 || a.width <= 0 || a.channels <= 0) return;
  const int64_t C = a.channels, kk = int64_t(a.kernel) * a.kernel, cp = round_up_lanes<A>(C);
  ScratchBuffer packed((kk + 1) * cp); // pads stay zero
  float *w = packed.data, *bias = packed.data + kk * cp;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < kk; ++t) w[t * cp + c] = a.weight[c * kk + t];
  if (a.bias)
    for (int64_t c = 0; c < C; ++c) bias[c] = a.bias[c];
  const Plan plan{&a, w, bias, cp};
  const int64_t rows = a.batch * a.height;
  const int threads = a.threads > 1 ? a.threads : 1;
#pragma omp parallel for num_threads(threads) if (threads > 1 && rows > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) row<A>(plan, r);
}

} // namespace pola::kernels::simd
