// The exact GEMM body (exact_gemm.h), included once per ISA file inside that ISA's namespace and
// compiled with its flags. Written for the auto-vectorizer: int16 differences (staged once per
// 16 x 64 tile and k-chunk) multiplied into int32 sums (a widening multiply-add, VPMADDWD), four
// rows of A per column of B so each B load serves four dot products. An ISA file may replace the
// u8 x s8 kernel by defining QPLUGIN_EXACT_GEMM_U8S8_FN (exact_gemm_avx512vnni.cpp: VPDPBUSD).
// Changes with: exact_gemm.h, exact_gemm_<isa>.cpp.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/gemm/exact_gemm.h"

#ifndef QPLUGIN_EXACT_GEMM_NS
#error "define QPLUGIN_EXACT_GEMM_NS (the ISA namespace) before including exact_gemm_impl.h"
#endif

namespace qplugin {
namespace kernels {
namespace gemm {
namespace QPLUGIN_EXACT_GEMM_NS {
namespace {

// 16384 * 255 * 255 < 2^31: an int32 sum of this many products never overflows.
constexpr int64_t kKBlock = 16384;
// k-chunk staged as int16 differences: A [<= kMaxM][kChunk] and B [<= kMaxN][kChunk] (83 KB).
constexpr int64_t kChunk = 512;
constexpr int64_t kMaxM = 16, kMaxN = 64;

// One tile: M <= kMaxM rows, N <= kMaxN columns (the driver's tile, exact_gemm.cpp); larger
// problems are cut into such tiles here.
template <class TA, class TB>
void exact_tile(const TA* a, int64_t lda, int64_t M, int64_t K, int32_t za, const TB* b,
                int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) acc[m * ldc + n] = 0;
  // Heap, not stack: 83 KB would be a lot for threads with small stacks.
  std::vector<int16_t> abuf(static_cast<std::size_t>((kMaxM + 3) * kChunk));
  std::vector<int16_t> bbuf(static_cast<std::size_t>(kMaxN * kChunk));
  int16_t* ad[kMaxM + 3];
  int16_t* bd[kMaxN];
  for (int64_t r = 0; r < kMaxM + 3; ++r) ad[r] = abuf.data() + r * kChunk;
  for (int64_t n = 0; n < kMaxN; ++n) bd[n] = bbuf.data() + n * kChunk;
  const int64_t Mp = (M + 3) / 4 * 4;
  for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
    const int64_t kc = K - k0 < kChunk ? K - k0 : kChunk;
    // Differences from the zero points, once per chunk; A padded to a multiple of 4 rows.
    for (int64_t r = 0; r < Mp; ++r) {
      if (r < M) {
        const TA* ar = a + r * lda + k0;
        for (int64_t k = 0; k < kc; ++k)
          ad[r][k] = static_cast<int16_t>(static_cast<int32_t>(ar[k]) - za);
      } else {
        for (int64_t k = 0; k < kc; ++k) ad[r][k] = 0;
      }
    }
    for (int64_t n = 0; n < N; ++n) {
      const TB* br = b + n * ldb + k0;
      const int32_t z = zb[n];
      for (int64_t k = 0; k < kc; ++k)
        bd[n][k] = static_cast<int16_t>(static_cast<int32_t>(br[k]) - z);
    }
    // kChunk <= kKBlock: each chunk's int32 sums are exact; chunks add up in int64.
    for (int64_t m0 = 0; m0 < Mp; m0 += 4) {
      const int64_t mr = M - m0 < 4 ? M - m0 : 4;
      for (int64_t n = 0; n < N; ++n) {
        const int16_t* bv = bd[n];
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (int64_t k = 0; k < kc; ++k) {
          const int32_t v = bv[k];
          s0 += static_cast<int32_t>(ad[m0][k]) * v;
          s1 += static_cast<int32_t>(ad[m0 + 1][k]) * v;
          s2 += static_cast<int32_t>(ad[m0 + 2][k]) * v;
          s3 += static_cast<int32_t>(ad[m0 + 3][k]) * v;
        }
        int64_t* c = acc + m0 * ldc + n;
        c[0] += s0;
        if (mr > 1) c[ldc] += s1;
        if (mr > 2) c[2 * ldc] += s2;
        if (mr > 3) c[3 * ldc] += s3;
      }
    }
  }
  static_assert(kChunk <= kKBlock, "chunk sums must stay exact in int32");
}

template <class TA, class TB>
void exact_gemm_impl(const TA* a, int64_t lda, int64_t M, int64_t K, int32_t za, const TB* b,
                     int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc) {
  for (int64_t m0 = 0; m0 < M; m0 += kMaxM) {
    const int64_t mc = M - m0 < kMaxM ? M - m0 : kMaxM;
    for (int64_t n0 = 0; n0 < N; n0 += kMaxN) {
      const int64_t nc = N - n0 < kMaxN ? N - n0 : kMaxN;
      exact_tile(a + m0 * lda, lda, mc, K, za, b + n0 * ldb, ldb, nc, zb + n0,
                 acc + m0 * ldc + n0, ldc);
    }
  }
}

void u8s8(const uint8_t* a, int64_t lda, int64_t M, int64_t K, int32_t za, const int8_t* b,
          int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc) {
  exact_gemm_impl(a, lda, M, K, za, b, ldb, N, zb, acc, ldc);
}
void u8u8(const uint8_t* a, int64_t lda, int64_t M, int64_t K, int32_t za, const uint8_t* b,
          int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc) {
  exact_gemm_impl(a, lda, M, K, za, b, ldb, N, zb, acc, ldc);
}
void s8s8(const int8_t* a, int64_t lda, int64_t M, int64_t K, int32_t za, const int8_t* b,
          int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc) {
  exact_gemm_impl(a, lda, M, K, za, b, ldb, N, zb, acc, ldc);
}

// -fno-trapping-math for the finishing pass below only: results are the same IEEE operations,
// but GCC 12 then if-converts the double compares and vectorizes both loops.
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")

// round half to even of |u| < 2^51 (default rounding mode; -ffp-contract=off, no fast-math).
inline double round_even(double u) {
  constexpr double kMagic = 6755399441055744.0;  // 1.5 * 2^52
  return (u + kMagic) - kMagic;
}

// exp(x) for x in [-40, 0] with relative error < 2e-13 (the bound act_requant's tanh margin
// uses), in double arithmetic only (so it vectorizes): e^x = (e^(x/64))^64. x/64 in [-0.625, 0]
// is exact; e^(x/64) by its Taylor polynomial of degree 16 (remainder < 0.625^17 / 17! < 1e-18),
// Horner form (17 roundings: relative error < 17 * 2^-53 < 2e-15); six squarings multiply the
// relative error by 64 and add 6 roundings: < 64 * 2e-15 + 6 * 2^-53 * 64 < 2e-13.
inline double exp_neg(double x) {
  // 1/16!, 1/15!, ..., 1/1!, 1/0!: the Taylor coefficients, highest degree first.
  static constexpr double kInvFactorial[17] = {
      1.0 / 20922789888000.0, 1.0 / 1307674368000.0, 1.0 / 87178291200.0, 1.0 / 6227020800.0,
      1.0 / 479001600.0,      1.0 / 39916800.0,      1.0 / 3628800.0,     1.0 / 362880.0,
      1.0 / 40320.0,          1.0 / 5040.0,          1.0 / 720.0,         1.0 / 120.0,
      1.0 / 24.0,             1.0 / 6.0,             0.5,                 1.0,
      1.0};
  const double r = x * (1.0 / 64.0);
  double p = kInvFactorial[0];
#pragma GCC unroll 16
  for (int i = 1; i < 17; ++i) p = p * r + kInvFactorial[i];
#pragma GCC unroll 6
  for (int i = 0; i < 6; ++i) p = p * p;  // (e^(x/64))^64
  return p;
}

template <int Act>
int64_t act_requant_impl(const int32_t* acc, int64_t n, const double* mult, const double* bias,
                         double slope, double s, int64_t zp, uint8_t* __restrict out,
                         uint8_t* __restrict unsure) {
  const double zpd = static_cast<double>(zp);
  // tanh: |t - std::tanh(v)| <= |t - tanh| + |tanh - std::tanh| < 4e-13 + 1e-15 (t = (1 - e) /
  // (1 + e) with e = exp_neg(-2|v|) in (0, 1]: e's relative error < 2e-13 moves t by < 4e-13
  // (|dt/de| <= 2), the three operations by < 4e-16; glibc's tanh is within 2 ulp). In units of
  // s: 4.1e-13 / s; doubled.
  // leaky_relu: w and w / s are computed as quantize_exact does, so only range matters.
  const double margin = Act == kActTanh ? 8.2e-13 / s : 0.0;
  constexpr double kOut = 1e300;  // u of a flagged element (outside the +-1e15 range)
  int32_t count = 0;
  // Chunks of 256: one loop computes the bytes and keeps u, a second one flags; each is
  // branch-free (selects), so GCC 12 vectorizes both (not so when fused).
  double ub[256];
  for (int64_t c = 0; c < n; c += 256) {
    const int64_t len = n - c < 256 ? n - c : 256;
    for (int64_t j = 0; j < len; ++j) {
      const int64_t i = c + j;
      const double v = static_cast<double>(acc[i]) * mult[i] + bias[i];
      double w;
      if constexpr (Act == kActTanh) {
        // tanh(20) rounds to 1 in double; e = exp(-40) changes nothing (NaN: flagged below).
        double a = v < 0.0 ? -v : v;
        a = a < 20.0 ? a : 20.0;
        const double e = exp_neg(-2.0 * a);
        const double t = (1.0 - e) / (1.0 + e);
        w = v < 0.0 ? -t : t;
      } else {
        w = v >= 0.0 ? v : v * slope;
      }
      const double u = w / s;
      // NaN fails every comparison, so NaN and infinite u are out of range; a NaN v too
      // (tanh's fmin would turn it into 20).
      const bool in_range = (u < 1e15) & (u > -1e15) & (v == v);
      ub[j] = in_range ? u : kOut;
      const double r = round_even(in_range ? u : 0.0);
      double q = r + zpd;
      q = q < 0.0 ? 0.0 : q;
      q = q > 255.0 ? 255.0 : q;
      out[i] = static_cast<uint8_t>(static_cast<int32_t>(q));
    }
    for (int64_t j = 0; j < len; ++j) {
      const double u = ub[j];
      const bool in_range = u < 1e15;
      const double d = u - round_even(in_range ? u : 0.0);  // in [-0.5, 0.5] when in range
      const double dist = 0.5 - std::fabs(d);              // to the nearest rounding boundary
      const int32_t bad = (in_range & (dist > margin)) ? 0 : 1;
      unsure[c + j] = static_cast<uint8_t>(bad);
      count += bad;
    }
  }
  return count;
}

// out[i] = clamp(nearbyint(acc[i] * m / s) + zp, 0, 255), as quantize_exact(acc[i] * m, s, zp,
// 0, 255) computes it (a product then a quotient in double), but with one product p = acc * r,
// r = m / s rounded once: p and the reference quotient are each within 2 roundings (2^-52
// relative) of the real acc * m / s, so they round alike unless p lies within 2^-50 |p| of a
// .5 boundary; such elements, and |p| >= 2^50, are flagged for the caller's quantize_exact.
int64_t requant_i32(const int32_t* acc, int64_t n, double m, double s, int64_t zp,
                    uint8_t* __restrict out, uint8_t* __restrict unsure) {
  const double r = m / s;
  const double zpd = static_cast<double>(zp);
  constexpr double kMax = 1125899906842624.0;  // 2^50
  constexpr double kRel = 8.881784197001252e-16;  // 2^-50
  int32_t count = 0;
  double pb[256];
  for (int64_t c = 0; c < n; c += 256) {
    const int64_t len = n - c < 256 ? n - c : 256;
    for (int64_t j = 0; j < len; ++j) {
      const double p = static_cast<double>(acc[c + j]) * r;
      const bool in_range = (p < kMax) & (p > -kMax);
      pb[j] = in_range ? p : kMax;
      double q = round_even(in_range ? p : 0.0) + zpd;
      q = q < 0.0 ? 0.0 : q;
      q = q > 255.0 ? 255.0 : q;
      out[c + j] = static_cast<uint8_t>(static_cast<int32_t>(q));
    }
    for (int64_t j = 0; j < len; ++j) {
      const double p = pb[j];
      const double a = p < 0.0 ? -p : p;
      const double d = p - round_even(p);                 // in [-0.5, 0.5]
      const double dist = 0.5 - (d < 0.0 ? -d : d);       // to the nearest rounding boundary
      const int32_t bad = (a < kMax) & (dist > a * kRel) ? 0 : 1;
      unsure[c + j] = static_cast<uint8_t>(bad);
      count += bad;
    }
  }
  return count;
}

// conv2d_add's pass (exact_gemm.h ExactGemmKernels::add_requant): the same IEEE operations as
// quantize_exact(v, s, zp, 0, 255) on the same v (a quotient, then round half to even), so no
// margin is needed; only NaN and huge quotients are left to the caller. Branch-free (selects).
int64_t add_requant(const int32_t* acc, const uint8_t* a, int64_t n, const double* mult,
                    const double* bias, int64_t a_zp, double a_scale, bool relu, double s,
                    int64_t zp, uint8_t* __restrict out, uint8_t* __restrict unsure) {
  const double zpd = static_cast<double>(zp);
  const int32_t azp = static_cast<int32_t>(a_zp);
  const double lo = relu ? 0.0 : -std::numeric_limits<double>::infinity();
  int32_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = static_cast<double>(acc[i]) * mult[i] + bias[i] +
               static_cast<double>(static_cast<int32_t>(a[i]) - azp) * a_scale;
    v = v < lo ? lo : v;  // relu: max(v, 0), NaN kept (a NaN compare is false)
    const double u = v / s;
    const bool in_range = (u < 1e15) & (u > -1e15);  // false for NaN
    double q = round_even(in_range ? u : 0.0) + zpd;
    q = q < 0.0 ? 0.0 : q;
    q = q > 255.0 ? 255.0 : q;
    out[i] = static_cast<uint8_t>(static_cast<int32_t>(q));
    const int32_t bad = in_range ? 0 : 1;
    unsure[i] = static_cast<uint8_t>(bad);
    count += bad;
  }
  return count;
}

#pragma GCC pop_options

int64_t act_requant(const int32_t* acc, int64_t n, const double* mult, const double* bias,
                    int act, double slope, double s, int64_t zp, uint8_t* out, uint8_t* unsure) {
  return act == kActTanh
             ? act_requant_impl<kActTanh>(acc, n, mult, bias, slope, s, zp, out, unsure)
             : act_requant_impl<kActLeakyRelu>(acc, n, mult, bias, slope, s, zp, out, unsure);
}

}  // namespace

const ExactGemmKernels& exact_gemm_table() {
#ifndef QPLUGIN_EXACT_GEMM_U8S8_FN
#define QPLUGIN_EXACT_GEMM_U8S8_FN u8s8
#endif
  static const ExactGemmKernels t{QPLUGIN_EXACT_GEMM_ISA, QPLUGIN_EXACT_GEMM_NAME,
                                  &QPLUGIN_EXACT_GEMM_U8S8_FN, &u8u8, &s8s8,
                                  &act_requant, &requant_i32, &add_requant};
  return t;
}

}  // namespace QPLUGIN_EXACT_GEMM_NS
}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
