// Depthwise k x k convolution, stride 1, zero padding k/2, over NHWC token
// rows (DepthwiseConvArgs). Vectorised over channels; one output row (b, y)
// per work item, so any thread count computes every value the same way.
// The weights are repacked once per call into a tap-major (k*k, channels)
// scratch, so each tap's weights for a channel vector are one aligned load.
// For k = 3, 5, 7 a row is walked one channel vector at a time: tiles of
// several output pixels along x, in which each source vector is loaded once
// per kernel row and feeds every output it touches; where they fit (k = 3)
// all k*k weight vectors stay in registers for the whole walk. Taps outside
// the image are the zero padding, with no padded copy: whole kernel rows are
// skipped by a branch per row; columns, checked only in the first and last
// tiles of a row, read as zero vectors. Other k run generic tiles (a weight vector loaded once serves kPixels
// outputs) with border pixels one at a time.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/attention_args.h"
#include "kernels/refuse.h"
#include "kernels/scratch.h"
#include "kernels/simd/common.hpp"
#include "kernels/simd/to_bf16.hpp"

namespace pola::kernels::simd {

namespace depthwise_detail {

constexpr int kPixels = 4; // output pixels per generic tile

// What every tile of one call reads.
struct Plan {
  const DepthwiseConvArgs *a;
  const float *weight; // (k*k, cp) tap-major, zero above channels
  const float *bias;   // (cp), zero where absent
  int64_t cp;          // channels rounded up to lanes
};

// Output = acc (+ src) (+ old dst), or bf16(acc (+ src)), for X pixels from x0, channels [c, c + n).
template <class A, int X>
inline void finish(const Plan &p, int64_t b, int64_t y, int64_t x0, int64_t c, int n, Vec<A> *acc) {
  const DepthwiseConvArgs &a = *p.a;
  const int64_t pixel = (b * a.height + y) * a.width + x0;
  for (int i = 0; i < X; ++i) {
    if (a.add_src) acc[i] += load_first<A>(a.src + (pixel + i) * a.ld_src + c, n);
    if (a.dst_bf16) {
      store_bf16<A>(a.dst_bf16 + (pixel + i) * a.ld_dst + c, acc[i], n);
      continue;
    }
    float *d = a.dst + (pixel + i) * a.ld_dst + c;
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

// Interior pixels [lo, hi) of a row, in generic tiles.
template <class A>
inline void interior(const Plan &p, int64_t b, int64_t y, int64_t lo, int64_t hi, int dy0, int dy1) {
  constexpr int L = kLanes<A>, X = kPixels;
  const int64_t C = p.a->channels;
  const auto run = [&](auto width, int64_t x) {
    constexpr int W = decltype(width)::value;
    for (int64_t c = 0; c < C; c += L) tile<A, W>(p, b, y, x, dy0, dy1, 0, p.a->kernel, c, int(C - c < L ? C - c : L));
  };
  int64_t x = lo;
  for (; x + X <= hi; x += X) run(std::integral_constant<int, X>{}, x);
  if (x < hi) with_width<X - 1>(int(hi - x), [&](auto w) { run(w, x); });
}

// Output pixels per tile of the row walk; the weights are held across the
// walk when all K*K of them, the accumulators, the bias and a source vector
// fit the registers (K = 3 on both ISAs), else reloaded per tile and row.
template <class A, int K> constexpr int kWalkPixels = kRegisters<A> == 32 ? 8 : 4;
template <class A, int K> constexpr bool kHoldWeights = K * K + kWalkPixels<A, K> + 2 <= kRegisters<A>;

// Loads n channels (whole vectors without a mask when Full).
template <class A, bool Full> inline Vec<A> load_c(const float *p, int n) {
  if constexpr (Full) return Vec<A>::load_unaligned(p);
  else return load_first<A>(p, n);
}

// X outputs from x0 of row y, channels [c, c + n): rows[dy] points at source
// pixel (y + dy - K/2, x0 - K/2) or is null outside the image; Edge: some of
// the tile's source columns fall outside [0, W) and read as zeros. The taps of
// each output are summed in kernel-row then column order, as everywhere.
template <class A, int K, int X, bool Full, bool Edge>
inline void walk_tile(const DepthwiseConvArgs &a, const Plan &p, const float *const *rows, const Vec<A> *held,
                      const Vec<A> &bias, int64_t pixel, int64_t x0, int64_t c, int n) {
  constexpr int pad = K / 2;
  // Arrays of the raw register type: GCC kept arrays of xsimd batches on the
  // stack, a store and a reload around every FMA.
  using R = typename Vec<A>::register_type;
  const int64_t ld = a.ld_src;
  R acc[X];
  for (int i = 0; i < X; ++i) acc[i] = bias;
#pragma GCC unroll 8
  for (int dy = 0; dy < K; ++dy) {
    if (!rows[dy]) continue;
    const float *row = rows[dy] + x0 * ld; // source column s of the tile, advanced by ld per column
    R w[K];
#pragma GCC unroll 8
    for (int dx = 0; dx < K; ++dx)
      if constexpr (kHoldWeights<A, K>) w[dx] = held[dy * K + dx];
      else w[dx] = Vec<A>::load_aligned(p.weight + int64_t(dy * K + dx) * p.cp + c);
#pragma GCC unroll 32
    for (int s = 0; s < X + K - 1; ++s) {
      // Outside the row a zero vector: the FMAs then add exact zeros, and
      // the code stays straight-line (a skip left the accumulators on the stack).
      Vec<A> v(0.0f);
      if (!Edge || (x0 - pad + s >= 0 && x0 - pad + s < a.width)) v = load_c<A, Full>(row, n);
      row += ld;
#pragma GCC unroll 8
      for (int dx = 0; dx < K; ++dx)
        if (s - dx >= 0 && s - dx < X) acc[s - dx] = xsimd::fma(v, Vec<A>(w[dx]), Vec<A>(acc[s - dx]));
    }
  }
  // The outputs: acc (+ src) (+ old dst) as fp32 to dst or, with dst_bf16,
  // rounded to bf16 (here rather than in a function taking the array, which
  // put the accumulators through memory).
  const int64_t first = pixel + x0;
  const float *src = a.src + first * a.ld_src + c;
#pragma GCC unroll 16
  for (int i = 0; i < X; ++i) {
    Vec<A> o = acc[i];
    if (a.add_src) o += load_c<A, Full>(src + i * a.ld_src, n);
    if (a.dst_bf16) {
      store_bf16<A>(a.dst_bf16 + (first + i) * a.ld_dst + c, o, n);
      continue;
    }
    float *d = a.dst + (first + i) * a.ld_dst + c;
    if (a.accumulate) o += load_c<A, Full>(d, n);
    if constexpr (Full) o.store_unaligned(d);
    else store_first<A>(d, o, n);
  }
}

// Row y of image b for one channel vector [c, c + n), in tiles of X pixels.
template <class A, int K, bool Full>
inline void walk_channels(const Plan &p, int64_t b, int64_t y, int64_t c, int n) {
  const DepthwiseConvArgs &a = *p.a;
  constexpr int pad = K / 2, X = kWalkPixels<A, K>;
  const int64_t H = a.height, W = a.width, pixel = (b * H + y) * W;
  const float *rows[K];
  for (int dy = 0; dy < K; ++dy) {
    const int64_t yy = y + dy - pad;
    rows[dy] = yy >= 0 && yy < H ? a.src + ((b * H + yy) * W - pad) * a.ld_src + c : nullptr;
  }
  Vec<A> held[kHoldWeights<A, K> ? K * K : 1];
  if constexpr (kHoldWeights<A, K>)
    for (int t = 0; t < K * K; ++t) held[t] = Vec<A>::load_aligned(p.weight + int64_t(t) * p.cp + c);
  const Vec<A> bias = Vec<A>::load_aligned(p.bias + c);
  int64_t x0 = 0;
  // Whole tiles; those whose source columns all lie inside the row skip the checks.
  for (; x0 + X <= W; x0 += X) {
    if (x0 >= pad && x0 + X - 1 + pad < W) walk_tile<A, K, X, Full, false>(a, p, rows, held, bias, pixel, x0, c, n);
    else walk_tile<A, K, X, Full, true>(a, p, rows, held, bias, pixel, x0, c, n);
  }
  if (x0 < W)
    with_width<X - 1>(int(W - x0), [&](auto w) {
      walk_tile<A, K, decltype(w)::value, Full, true>(a, p, rows, held, bias, pixel, x0, c, n);
    });
}

template <class A, int K> inline void walk_row(const Plan &p, int64_t b, int64_t y) {
  constexpr int L = kLanes<A>;
  const int64_t C = p.a->channels;
  int64_t c = 0;
  for (; c + L <= C; c += L) walk_channels<A, K, true>(p, b, y, c, L);
  if (c < C) walk_channels<A, K, false>(p, b, y, c, int(C - c));
}

template <class A> void row(const Plan &p, int64_t r) {
  const DepthwiseConvArgs &a = *p.a;
  const int64_t k = a.kernel, pad = k / 2, H = a.height, W = a.width;
  const int64_t b = r / H, y = r % H;
  switch (k) {
  case 3: return walk_row<A, 3>(p, b, y);
  case 5: return walk_row<A, 5>(p, b, y);
  case 7: return walk_row<A, 7>(p, b, y);
  default: break;
  }
  const int dy0 = int(y < pad ? pad - y : 0);
  const int dy1 = int(y + pad >= H ? H - y + pad : k);
  // Pixels [lo, hi) see every horizontal tap.
  const int64_t lo = pad < W ? pad : W, hi = W - pad > lo ? W - pad : lo;
  for (int64_t x = 0; x < lo; ++x) border_pixel<A>(p, b, y, x, dy0, dy1);
  interior<A>(p, b, y, lo, hi, dy0, dy1);
  for (int64_t x = hi; x < W; ++x) border_pixel<A>(p, b, y, x, dy0, dy1);
}

} // namespace depthwise_detail

template <class A> void depthwise_conv(const DepthwiseConvArgs &a) {
  using namespace depthwise_detail;
  if (a.kernel <= 0 || a.kernel % 2 == 0) refuse("depthwise_conv", "the kernel size must be odd and positive");
  if (a.dst_bf16 && a.accumulate) refuse("depthwise_conv", "dst_bf16 cannot accumulate");
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
