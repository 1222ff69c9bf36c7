// AVX2 softmax kernels: 8 lanes per vector, as the avx512vnni ones (exp(-k s) as a product of three
// in-register lookups, sums in double, the float fast path of softmax.h, the reference for
// undecided lanes); columns that do not fill a vector take the reference forms. Bytes equal the
// scalar kernels'.
// Changes with: softmax_generic_impl.h, softmax.h.
#define QPLUGIN_ISA_NS avx2
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/softmax/softmax_generic_impl.h"

namespace qplugin {
namespace kernels {
namespace softmax {
namespace avx2 {
namespace {

#include "kernels/simd/widen.h"  // inside this ISA namespace

struct Consts {
  __m256 rcap, thr, absmask, e_a, e_b, e_c;
  __m256i zp, qmin, qmax;
  explicit Consts(const Params& p)
      : rcap(_mm256_set1_ps(p.rcap)), thr(_mm256_set1_ps(p.thr)),
        absmask(_mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF))),
        e_a(_mm256_load_ps(p.e_a)), e_b(_mm256_load_ps(p.e_b)), e_c(_mm256_load_ps(p.e_c)),
        zp(_mm256_set1_epi32(p.zp)), qmin(_mm256_set1_epi32(p.qmin)),
        qmax(_mm256_set1_epi32(p.qmax)) {}
};

// e ~ etab[k] for 8 lanes of k in [0, 255]: (e_a[k >> 6] * e_b[(k >> 3) & 7]) * e_c[k & 7]
// (VPERMPS reads the low 3 bits of each index).
inline __m256 exp8(__m256i k, const Consts& c) {
  const __m256 a = _mm256_permutevar8x32_ps(c.e_a, _mm256_srli_epi32(k, 6));
  const __m256 b = _mm256_permutevar8x32_ps(c.e_b, _mm256_srli_epi32(k, 3));
  const __m256 e = _mm256_permutevar8x32_ps(c.e_c, k);
  return _mm256_mul_ps(_mm256_mul_ps(a, b), e);
}

// s0 (lanes 0-3) and s1 (4-7) += e as doubles.
inline void add8(__m256 e, __m256d* s0, __m256d* s1) {
  *s0 = _mm256_add_pd(*s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
  *s1 = _mm256_add_pd(*s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
}

// float(1 / (S * os)) of 8 lanes of S (s0: lanes 0-3, s1: 4-7).
inline __m256 inverse8(__m256d s0, __m256d s1, double os) {
  const __m256d one = _mm256_set1_pd(1.0), o = _mm256_set1_pd(os);
  const __m128 a = _mm256_cvtpd_ps(_mm256_div_pd(one, _mm256_mul_pd(s0, o)));
  const __m128 b = _mm256_cvtpd_ps(_mm256_div_pd(one, _mm256_mul_pd(s1, o)));
  return _mm256_set_m128(b, a);
}

// The fast path's codes of 8 lanes of k (softmax.h) in the low 8 bytes; *und gets the lanes it
// cannot decide.
template <typename T>
inline __m128i codes8(__m256i k, __m256 inv, const Consts& c, uint32_t* und) {
  const __m256 r = _mm256_min_ps(_mm256_mul_ps(exp8(k, c), inv), c.rcap);
  // r - nearbyint(r): exact.
  const __m256 d =
      _mm256_sub_ps(r, _mm256_round_ps(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  *und = static_cast<uint32_t>(
      _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(d, c.absmask), c.thr, _CMP_GT_OQ)));
  const __m256i q = _mm256_min_epi32(
      _mm256_max_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(r), c.zp), c.qmin), c.qmax);
  // In [qmin, qmax]: the saturating packs keep every value.
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  return std::is_signed<T>::value ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
}

template <typename T>
void cols(const T* x, T* y, int64_t D, int64_t inner, int64_t j0, int64_t j1, const Params& p) {
  if (!p.fast) {
    generic::cols(x, y, D, inner, j0, j1, p);
    return;
  }
  const Consts c(p);
  int64_t j = j0;
  for (; j + 8 <= j1; j += 8) {
    __m128i mb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + j));
    for (int64_t t = 1; t < D; ++t) {
      mb = max16<T>(mb, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + t * inner + j)));
    }
    const __m256i m =
        std::is_signed<T>::value ? _mm256_cvtepi8_epi32(mb) : _mm256_cvtepu8_epi32(mb);
    auto k_at = [&](int64_t t) { return _mm256_sub_epi32(m, widen8(x + t * inner + j)); };
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (int64_t t = 0; t < D; ++t) add8(exp8(k_at(t), c), &s0, &s1);
    const __m256 inv = inverse8(s0, s1, p.os);
    double S[8];  // the reference's S per lane, summed when a lane needs it (< 0: not yet)
    alignas(32) int32_t mm[8];
    bool have_m = false;
    for (int64_t t = 0; t < D; ++t) {
      uint32_t und;
      __m128i b = codes8<T>(k_at(t), inv, c, &und);
      if (und) {
        if (!have_m) {
          _mm256_store_si256(reinterpret_cast<__m256i*>(mm), m);
          for (int l = 0; l < 8; ++l) S[l] = -1.0;
          have_m = true;
        }
        alignas(16) T tmp[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(tmp), b);
        generic::fix_columns(tmp, und, x, t, inner, j, D, mm, S, p);
        b = _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
      }
      _mm_storel_epi64(reinterpret_cast<__m128i*>(y + t * inner + j), b);
    }
  }
  if (j < j1) generic::cols(x, y, D, inner, j, j1, p);
}

// S' of a row (max code mx): eight codes at a time, two pairs of accumulators, the last codes
// added one by one.
template <typename T>
inline double row_sum8(const T* xr, int64_t D, int32_t mx, const Params& p, const Consts& c) {
  const __m256i m = _mm256_set1_epi32(mx);
  const int64_t D8 = D & ~int64_t(7);
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  __m256d s2 = _mm256_setzero_pd(), s3 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= D8; i += 16) {
    add8(exp8(_mm256_sub_epi32(m, widen8(xr + i)), c), &s0, &s1);
    add8(exp8(_mm256_sub_epi32(m, widen8(xr + i + 8)), c), &s2, &s3);
  }
  if (i < D8) add8(exp8(_mm256_sub_epi32(m, widen8(xr + i)), c), &s0, &s1);
  double Sv = 0.0;
  for (i = D8; i < D; ++i) Sv += p.etab[mx - static_cast<int32_t>(xr[i])];
  alignas(32) double s[4];
  _mm256_store_pd(s, _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
  return Sv + ((s[0] + s[1]) + (s[2] + s[3]));
}

// The codes of one row given its max code and float(1 / (S' * os)).
template <typename T>
inline void row_out(const T* xr, T* yr, int64_t D, int32_t mx, float invf, const Params& p,
                    const Consts& c) {
  const __m256i m = _mm256_set1_epi32(mx);
  const __m256 inv = _mm256_set1_ps(invf);
  const int64_t D8 = D & ~int64_t(7), tail = D - D8;
  // The last partial vector, padded with the max (k = 0; those lanes are not stored).
  alignas(8) T last[8];
  for (int l = 0; l < 8; ++l) last[l] = static_cast<T>(l < tail ? xr[D8 + l] : mx);
  double S = -1.0;  // the reference's S, summed when a lane needs it
  for (int64_t i = 0; i < D; i += 8) {
    const T* xi = i < D8 ? xr + i : last;
    const int n = i < D8 ? 8 : static_cast<int>(tail);
    uint32_t und;
    __m128i b = codes8<T>(_mm256_sub_epi32(m, widen8(xi)), inv, c, &und);
    und &= (1u << n) - 1u;
    if (und) {
      alignas(16) T tmp[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(tmp), b);
      generic::fix_row(tmp, und, xi, xr, D, mx, &S, p);
      b = _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
    }
    if (n == 8) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(yr + i), b);
    } else {
      alignas(16) T tmp[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(tmp), b);
      std::memcpy(yr + i, tmp, static_cast<size_t>(n));
    }
  }
}

template <typename T>
void rows(const T* x, T* y, int64_t D, int64_t nrows, const Params& p) {
  if (!p.fast) {
    generic::rows(x, y, D, nrows, p);
    return;
  }
  const Consts c(p);
  generic::rows_in_phases(
      x, y, D, nrows, p, [&](const T* xr) { return generic::row_max(xr, 1, D); },
      [&](const T* xr, int32_t mx) { return row_sum8(xr, D, mx, p, c); },
      [&](const T* xr, T* yr, int32_t mx, float inv) { row_out(xr, yr, D, mx, inv, p, c); });
}

}  // namespace

const Table& make_table() {
  static const Table t = {{&cols<uint8_t>, &rows<uint8_t>}, {&cols<int8_t>, &rows<int8_t>}};
  return t;
}

}  // namespace avx2
}  // namespace softmax
}  // namespace kernels
}  // namespace qplugin
