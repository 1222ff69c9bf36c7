// Portable forms of the pooling/resampling kernels (see pool_dispatch.h for the math). Included
// by every kernels/pool/pool_<isa>.cpp inside its own namespace (QPLUGIN_ISA_NS), so code built
// with different flags never shares an inline definition (ODR). The loops are written for the
// compiler's vectorizer: integer max/sum are exact in any order, and the float/double steps are
// element-wise IEEE operations in a fixed order (-ffp-contract=off, no fast-math), so every ISA's
// compilation gives the scalar bytes. Hand-written intrinsics in pool_<isa>.cpp replace the few
// entries where the vectorizer falls short. Changes with: pool_dispatch.h.
#ifndef QPLUGIN_ISA_NS
#error "define QPLUGIN_ISA_NS before including pool_generic_impl.h"
#endif
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/inline.h"
#include "kernels/pool/pool_dispatch.h"

namespace qplugin {
namespace kernels {
namespace QPLUGIN_ISA_NS {
namespace pool_generic {

template <typename T>
using Acc = typename PoolAcc<T>::type;

template <typename T>
inline T tmax(T a, T b) { return a > b ? a : b; }

// One average: clamp(zp + nearbyint(s / div)). 8-bit codes: |s| < 2^23 (checked by the ops), so
// the correctly rounded float quotient rounds exactly like the rational (see pool_dispatch.h);
// qint32 codes use double.
template <typename T>
inline T avg_one(Acc<T> s, float div, const AvgQ& q) {
  if (std::is_same<T, int32_t>::value) {
    double v = std::nearbyint(static_cast<double>(s) / static_cast<double>(div)) + q.zp;
    v = v < q.qmin ? q.qmin : v;
    v = v > q.qmax ? q.qmax : v;
    return static_cast<T>(static_cast<int64_t>(v));
  } else {
    int32_t r = static_cast<int32_t>(std::nearbyint(static_cast<float>(s) / div)) + q.zp;
    r = r < q.qmin ? q.qmin : r;
    r = r > q.qmax ? q.qmax : r;
    return static_cast<T>(r);
  }
}

template <typename T>
void max_rows(const T* const* rows, int64_t nrows, T* __restrict out, int64_t n) {
  const T* __restrict r0 = rows[0];
  if (nrows == 1) {
    std::memcpy(out, r0, n * sizeof(T));
    return;
  }
  const T* __restrict r1 = rows[1];
  if (nrows == 3) {  // a 3-tap window (the common pooling): one pass, not two over `out`
    const T* __restrict r2 = rows[2];
    for (int64_t j = 0; j < n; ++j) out[j] = tmax(tmax(r0[j], r1[j]), r2[j]);
    return;
  }
  for (int64_t j = 0; j < n; ++j) out[j] = tmax(r0[j], r1[j]);
  int64_t r = 2;
  for (; r + 1 < nrows; r += 2) {
    const T* __restrict a = rows[r];
    const T* __restrict b = rows[r + 1];
    for (int64_t j = 0; j < n; ++j) out[j] = tmax(out[j], tmax(a[j], b[j]));
  }
  if (r < nrows) {
    const T* __restrict a = rows[r];
    for (int64_t j = 0; j < n; ++j) out[j] = tmax(out[j], a[j]);
  }
}

template <typename T>
void sum_rows(const T* const* rows, int64_t nrows, int32_t zp, Acc<T>* __restrict acc, int64_t n) {
  const Acc<T> bias = -static_cast<Acc<T>>(zp) * static_cast<Acc<T>>(nrows);
  for (int64_t j = 0; j < n; ++j) acc[j] = bias;
  for (int64_t r = 0; r < nrows; ++r) {
    const T* __restrict a = rows[r];
    for (int64_t j = 0; j < n; ++j) acc[j] += static_cast<Acc<T>>(a[j]);
  }
}

template <typename T>
void avg_rows(const T* const* rows, int64_t nrows, T* __restrict out, int64_t C, double div,
              const AvgQ& q) {
  constexpr int64_t kBlock = 256;
  Acc<T> s[kBlock];
  const float d = static_cast<float>(div);
  const Acc<T> bias = -static_cast<Acc<T>>(q.zp) * static_cast<Acc<T>>(nrows);
  for (int64_t c0 = 0; c0 < C; c0 += kBlock) {
    const int64_t n = C - c0 < kBlock ? C - c0 : kBlock;
    for (int64_t j = 0; j < n; ++j) s[j] = bias;
    for (int64_t r = 0; r < nrows; ++r) {
      const T* __restrict a = rows[r] + c0;
      for (int64_t j = 0; j < n; ++j) s[j] += static_cast<Acc<T>>(a[j]);
    }
    T* __restrict o = out + c0;
    for (int64_t j = 0; j < n; ++j) o[j] = avg_one<T>(s[j], d, q);
  }
}

template <typename T, int S>
void hmax_s(const T* __restrict tmp, T* __restrict out, int64_t OW, int64_t K, int64_t s_rt,
            int64_t D, int64_t C) {
  const int64_t st = S > 0 ? S : s_rt;
  if (C == 1) {
    for (int64_t o = 0; o < OW; ++o) out[o] = tmp[o * st];
    for (int64_t k = 1; k < K; ++k) {
      const T* __restrict t = tmp + k * D;
      for (int64_t o = 0; o < OW; ++o) out[o] = tmax(out[o], t[o * st]);
    }
    return;
  }
  // C a multiple of kHBlock: channel blocks held in registers over the K taps (the loop below
  // stores and reloads y for every tap: a 3x3 s2 channels-last max pool of 64 channels on
  // 112 x 112 took 1.10x torch.ao's time on a Zen 1 with it; other C keep it, C = 3 got slower).
  constexpr int64_t kHBlock = 32 / sizeof(T);
  if (C % kHBlock == 0) {
    for (int64_t o = 0; o < OW; ++o) {
      T* __restrict y = out + o * C;
      const T* __restrict t0 = tmp + o * st * C;
      for (int64_t c0 = 0; c0 < C; c0 += kHBlock) {
        T m[kHBlock];
        for (int64_t j = 0; j < kHBlock; ++j) m[j] = t0[c0 + j];
        for (int64_t k = 1; k < K; ++k) {
          const T* __restrict t = t0 + k * D * C + c0;
          for (int64_t j = 0; j < kHBlock; ++j) m[j] = tmax(m[j], t[j]);
        }
        for (int64_t j = 0; j < kHBlock; ++j) y[c0 + j] = m[j];
      }
    }
    return;
  }
  for (int64_t o = 0; o < OW; ++o) {
    T* __restrict y = out + o * C;
    const T* __restrict t0 = tmp + o * st * C;
    for (int64_t c = 0; c < C; ++c) y[c] = t0[c];
    for (int64_t k = 1; k < K; ++k) {
      const T* __restrict t = t0 + k * D * C;
      for (int64_t c = 0; c < C; ++c) y[c] = tmax(y[c], t[c]);
    }
  }
}

template <typename T>
void hmax(const T* tmp, T* out, int64_t OW, int64_t K, int64_t S, int64_t D, int64_t C) {
  if (S == 1) return hmax_s<T, 1>(tmp, out, OW, K, S, D, C);
  if (S == 2) return hmax_s<T, 2>(tmp, out, OW, K, S, D, C);
  hmax_s<T, 0>(tmp, out, OW, K, S, D, C);
}

// Channels-last horizontal average of output pixel o: taps t0 + k*C for k < n, C channels.
template <typename T>
inline void havg_pixel(const Acc<T>* __restrict t0, int64_t n, T* __restrict y, int64_t C,
                       float div, const AvgQ& q) {
  constexpr int64_t kBlock = 256;
  Acc<T> s[kBlock];
  for (int64_t c0 = 0; c0 < C; c0 += kBlock) {
    const int64_t m = C - c0 < kBlock ? C - c0 : kBlock;
    const Acc<T>* __restrict a = t0 + c0;
    for (int64_t j = 0; j < m; ++j) s[j] = a[j];
    for (int64_t k = 1; k < n; ++k) {
      const Acc<T>* __restrict t = a + k * C;
      for (int64_t j = 0; j < m; ++j) s[j] += t[j];
    }
    for (int64_t j = 0; j < m; ++j) y[c0 + j] = avg_one<T>(s[j], div, q);
  }
}

template <typename T, int S>
void havg_s(const Acc<T>* __restrict acc, T* __restrict out, int64_t OW, int64_t K, int64_t s_rt,
            int64_t C, const double* div, const AvgQ& q) {
  constexpr int64_t kBlock = 256;
  const int64_t st = S > 0 ? S : s_rt;
  if (C > 1) {
    for (int64_t o = 0; o < OW; ++o)
      havg_pixel<T>(acc + o * st * C, K, out + o * C, C, static_cast<float>(div[o]), q);
    return;
  }
  Acc<T> s[kBlock];
  for (int64_t o0 = 0; o0 < OW; o0 += kBlock) {
    const int64_t n = OW - o0 < kBlock ? OW - o0 : kBlock;
    const Acc<T>* __restrict a = acc + o0 * st;
    for (int64_t o = 0; o < n; ++o) s[o] = a[o * st];
    for (int64_t k = 1; k < K; ++k) {
      const Acc<T>* __restrict t = a + k;
      for (int64_t o = 0; o < n; ++o) s[o] += t[o * st];
    }
    for (int64_t o = 0; o < n; ++o) out[o0 + o] = avg_one<T>(s[o], static_cast<float>(div[o0 + o]), q);
  }
}

template <typename T>
void havg(const Acc<T>* acc, T* out, int64_t OW, int64_t K, int64_t S, int64_t C,
          const double* div, const AvgQ& q) {
  if (S == 1) return havg_s<T, 1>(acc, out, OW, K, S, C, div, q);
  if (S == 2) return havg_s<T, 2>(acc, out, OW, K, S, C, div, q);
  havg_s<T, 0>(acc, out, OW, K, S, C, div, q);
}

template <typename T>
void havg_win(const Acc<T>* acc, T* out, int64_t OW, int64_t C, const int64_t* ws,
              const int64_t* we, const double* div, const AvgQ& q) {
  if (C > 1) {
    for (int64_t o = 0; o < OW; ++o)
      havg_pixel<T>(acc + ws[o] * C, we[o] - ws[o], out + o * C, C, static_cast<float>(div[o]), q);
    return;
  }
  for (int64_t o = 0; o < OW; ++o) {
    Acc<T> s = 0;
    for (int64_t i = ws[o]; i < we[o]; ++i) s += acc[i];
    out[o] = avg_one<T>(s, static_cast<float>(div[o]), q);
  }
}

template <typename T>
void plane_avg(const T* x, T* out, int64_t P, int64_t HW, double div, const AvgQ& q) {
  const Acc<T> bias = -static_cast<Acc<T>>(q.zp) * static_cast<Acc<T>>(HW);
  const float d = static_cast<float>(div);
  for (int64_t p = 0; p < P; ++p) {
    const T* __restrict a = x + p * HW;
    Acc<T> s = 0;
    for (int64_t i = 0; i < HW; ++i) s += static_cast<Acc<T>>(a[i]);
    out[p] = avg_one<T>(s + bias, d, q);
  }
}

template <typename T>
void gather(const T* __restrict in, T* __restrict out, int64_t OW, const int32_t* __restrict idx) {
  for (int64_t o = 0; o < OW; ++o) out[o] = in[idx[o]];
}

template <typename T>
void dup2(const T* __restrict in, T* __restrict out, int64_t W) {
  for (int64_t i = 0; i < W; ++i) {
    out[2 * i] = in[i];
    out[2 * i + 1] = in[i];
  }
}

// The horizontal pass in W (float: the contract's two products and a sum, each rounded, no fma;
// int16_t: the dyadic pass, lerp_h8, exact): H[o*C + c] = a0[o] * x[..] + a1[o] * x[..].
template <typename T, typename W>
void lerp_h_as(const T* __restrict x, W* __restrict H, int64_t OW, int64_t C,
               const int32_t* __restrict i0, const int32_t* __restrict i1,
               const W* __restrict a0, const W* __restrict a1) {
  auto one = [](W wa, T xa, W wb, T xb) {
    const W p = static_cast<W>(wa * static_cast<W>(xa));
    const W r = static_cast<W>(wb * static_cast<W>(xb));
    return static_cast<W>(p + r);
  };
  if (C == 1) {
    for (int64_t o = 0; o < OW; ++o) H[o] = one(a0[o], x[i0[o]], a1[o], x[i1[o]]);
    return;
  }
  for (int64_t o = 0; o < OW; ++o) {
    const T* __restrict xa = x + static_cast<int64_t>(i0[o]) * C;
    const T* __restrict xb = x + static_cast<int64_t>(i1[o]) * C;
    const W wa = a0[o], wb = a1[o];
    W* __restrict h = H + o * C;
    for (int64_t c = 0; c < C; ++c) h[c] = one(wa, xa[c], wb, xb[c]);
  }
}

template <typename T>
void lerp_v(const float* __restrict H0, const float* __restrict H1, T* __restrict out, int64_t n,
            float b0, float b1, const LerpQ& q) {
  // Locals: `out` may alias `q` (a byte pointer), which would reload q's fields every element.
  const float zp = q.zp, qmin = q.qmin, qmax = q.qmax;
  if (std::fmod(zp, 2.0f) == 0.0f) {
    // Even zero point: round(v - zp) + zp == round(v) in exact arithmetic (ties to even alike),
    // and skipping the subtraction saves its rounding and ~20% of this ALU-bound loop.
    for (int64_t j = 0; j < n; ++j) {
      const float p = b0 * H0[j];
      const float r = b1 * H1[j];
      float v = std::nearbyint(p + r);
      v = v < qmin ? qmin : v;
      v = v > qmax ? qmax : v;
      out[j] = static_cast<T>(static_cast<int32_t>(v));
    }
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    const float p = b0 * H0[j];
    const float r = b1 * H1[j];
    float v = std::nearbyint((p + r) - zp) + zp;
    v = v < qmin ? qmin : v;
    v = v > qmax ? qmax : v;
    out[j] = static_cast<T>(static_cast<int32_t>(v));
  }
}

// Dyadic weights (pool_dispatch.h, lerp_h8 = lerp_h_as<T, int16_t> / lerp_v8): A0 + A1 = 8 and
// codes within [-128, 255], so |H8| <= 8 * 255 = 2040; B0 + B1 = 8, so
// |B0 H8_0 + B1 H8_1| <= 16320, and with - 64 zp (zp in [0, 255] for quint8, [-128, 127] for
// qint8: the sum is 64 times an interpolated code minus 64 zp, a code difference in
// [-255, 255]) within 64 * 255 = 16320 < 2^15: every intermediate is an int16, so the compilers
// vectorize in 16-bit lanes (twice the lanes of the float passes, half the bytes of the rows
// of H).
template <typename T>
void lerp_v8(const int16_t* __restrict H0, const int16_t* __restrict H1, T* __restrict out,
             int64_t n, int16_t b0, int16_t b1, const AvgQ& q) {
  // Locals: `out` may alias `q` (a byte pointer).
  const int16_t zp = static_cast<int16_t>(q.zp), qmin = static_cast<int16_t>(q.qmin),
                qmax = static_cast<int16_t>(q.qmax);
  const int16_t zp64 = static_cast<int16_t>(64 * q.zp);
  auto one = [&](int64_t j) QPLUGIN_LAMBDA_INLINE {
    const int16_t t = static_cast<int16_t>(b0 * H0[j] + b1 * H1[j] - zp64);
    // round_half_even(t / 64) = floor((t + 31 + odd) / 64), odd = floor(t / 64) & 1: with
    // t = 64 f + r (0 <= r < 64) that is f + 1 exactly when r > 32, or r = 32 and f is odd.
    // (A comparison here made GCC widen to 32-bit lanes; t + 32 <= 16352 stays an int16.)
    const int16_t odd = static_cast<int16_t>((t >> 6) & 1);
    int16_t v = static_cast<int16_t>((static_cast<int16_t>(t + 31 + odd) >> 6) + zp);
    v = v < qmin ? qmin : v;
    v = v > qmax ? qmax : v;
    out[j] = static_cast<T>(v);
  };
  // Blocks of 32, then of 16, in GCC vector types (avx512vnni: a zmm, then a ymm; avx2: two ymm,
  // then one; SSE2 quarters on the scalar tier: the same integer operations), then element by
  // element. NCHW rows are short (112 for a 56-wide plane upsampled x2): the plain loop,
  // vectorized 32 wide on avx512vnni, left them a 16-element scalar tail (slower than the float
  // passes), and a fixed 16-trip inner loop went to xmm halves.
  int64_t j = 0;
  auto block = [&](auto vec) QPLUGIN_LAMBDA_INLINE {
    using V = decltype(vec);
    constexpr int kL = sizeof(V) / sizeof(int16_t);
    typedef T B __attribute__((vector_size(kL)));
    const V vb0 = V{} + b0, vb1 = V{} + b1, vz64 = V{} + zp64, vzp = V{} + zp;
    const V vlo = V{} + qmin, vhi = V{} + qmax;
    V h0, h1;
    std::memcpy(&h0, H0 + j, sizeof(h0));
    std::memcpy(&h1, H1 + j, sizeof(h1));
    const V t = vb0 * h0 + vb1 * h1 - vz64;
    V v = ((t + 31 + ((t >> 6) & 1)) >> 6) + vzp;
    v = v < vlo ? vlo : v;
    v = v > vhi ? vhi : v;
    const B o = __builtin_convertvector(v, B);
    std::memcpy(out + j, &o, sizeof(o));
    j += kL;
  };
  typedef int16_t V32 __attribute__((vector_size(64)));
  typedef int16_t V16 __attribute__((vector_size(32)));
  while (j + 32 <= n) block(V32{});
  if (j + 16 <= n) block(V16{});
  for (; j < n; ++j) one(j);
}

template <typename T>
TypedPoolKernels<T> typed() {
  TypedPoolKernels<T> k{};
  k.max_rows = &max_rows<T>;
  k.sum_rows = &sum_rows<T>;
  k.avg_rows = &avg_rows<T>;
  k.hmax = &hmax<T>;
  k.havg = &havg<T>;
  k.havg_win = &havg_win<T>;
  k.plane_avg = &plane_avg<T>;
  k.gather = &gather<T>;
  k.dup2 = &dup2<T>;
  k.lerp_h = &lerp_h_as<T, float>;
  k.lerp_v = &lerp_v<T>;
  if constexpr (sizeof(T) == 1) {
    k.lerp_h8 = &lerp_h_as<T, int16_t>;
    k.lerp_v8 = &lerp_v8<T>;
  }
  return k;
}

}  // namespace pool_generic
}  // namespace QPLUGIN_ISA_NS
}  // namespace kernels
}  // namespace qplugin
