// AVX-512 (F/BW/VL/DQ, the avx512vnni tier) softmax kernels: 16 lanes per vector, exp(-k s) as
// the product of two in-register table lookups (softmax.h), sums in double, the float fast path
// of softmax.h; the lanes it leaves undecided take the reference, so the bytes equal the scalar
// kernels'. Changes with: softmax_generic_impl.h, softmax.h.
#define QPLUGIN_ISA_NS avx512vnni
#include <immintrin.h>

#include <type_traits>

#include "kernels/softmax/softmax_generic_impl.h"

namespace qplugin {
namespace kernels {
namespace softmax {
namespace avx512vnni {
namespace {

#include "kernels/simd/widen.h"  // inside this ISA namespace

struct Consts {
  __m512 rcap, thr, absmask, e_hi, e_lo0, e_lo1;
  __m512i zp, qmin, qmax;
  explicit Consts(const Params& p)
      : rcap(_mm512_set1_ps(p.rcap)), thr(_mm512_set1_ps(p.thr)),
        absmask(_mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF))),
        e_hi(_mm512_load_ps(p.e_hi)), e_lo0(_mm512_load_ps(p.e_lo)),
        e_lo1(_mm512_load_ps(p.e_lo + 16)), zp(_mm512_set1_epi32(p.zp)),
        qmin(_mm512_set1_epi32(p.qmin)), qmax(_mm512_set1_epi32(p.qmax)) {}
};

// e ~ etab[k] for 16 lanes of k in [0, 255]: e_hi[k >> 5] * e_lo[k & 31].
inline __m512 exp16(__m512i k, const Consts& c) {
  const __m512 hi = _mm512_permutexvar_ps(_mm512_srli_epi32(k, 5), c.e_hi);
  const __m512 lo = _mm512_permutex2var_ps(c.e_lo0, k, c.e_lo1);  // low 5 bits of k
  return _mm512_mul_ps(hi, lo);
}

// s0 (lanes 0-7) and s1 (8-15) += e as doubles.
inline void add16(__m512 e, __m512d* s0, __m512d* s1) {
  *s0 = _mm512_add_pd(*s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
  *s1 = _mm512_add_pd(*s1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
}

// float(1 / (S * os)) of 16 lanes of S (s0: lanes 0-7, s1: 8-15).
inline __m512 inverse16(__m512d s0, __m512d s1, double os) {
  const __m512d one = _mm512_set1_pd(1.0), o = _mm512_set1_pd(os);
  const __m256 a = _mm512_cvtpd_ps(_mm512_div_pd(one, _mm512_mul_pd(s0, o)));
  const __m256 b = _mm512_cvtpd_ps(_mm512_div_pd(one, _mm512_mul_pd(s1, o)));
  return _mm512_insertf32x8(_mm512_castps256_ps512(a), b, 1);
}

// The fast path's codes of 16 lanes of k (softmax.h); *und gets the lanes it cannot decide.
inline __m128i codes16(__m512i k, __m512 inv, const Consts& c, __mmask16* und) {
  const __m512 r = _mm512_min_ps(_mm512_mul_ps(exp16(k, c), inv), c.rcap);
  // r - nearbyint(r), exact (VREDUCEPS with no fraction bits kept, round to nearest even).
  const __m512 d = _mm512_reduce_ps(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  *und = _mm512_cmp_ps_mask(_mm512_and_ps(d, c.absmask), c.thr, _CMP_GT_OQ);
  const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(r), c.zp);
  return _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(q, c.qmin), c.qmax));
}

template <typename T>
void cols(const T* x, T* y, int64_t D, int64_t inner, int64_t j0, int64_t j1, const Params& p) {
  if (!p.fast) {
    generic::cols(x, y, D, inner, j0, j1, p);
    return;
  }
  const Consts c(p);
  for (int64_t j = j0; j < j1; j += 16) {
    const int64_t n = j1 - j < 16 ? j1 - j : 16;
    const __mmask16 lm = static_cast<__mmask16>(n == 16 ? 0xFFFFu : (1u << n) - 1u);
    __m128i mb = _mm_maskz_loadu_epi8(lm, x + j);
    for (int64_t t = 1; t < D; ++t) mb = max16<T>(mb, _mm_maskz_loadu_epi8(lm, x + t * inner + j));
    const __m512i m = widen<T>(mb);
    // Off lanes read 0 and have m = 0: k = 0 (their sums and codes are not used).
    auto k_at = [&](int64_t t) {
      return _mm512_maskz_sub_epi32(lm, m, widen<T>(_mm_maskz_loadu_epi8(lm, x + t * inner + j)));
    };
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int64_t t = 0; t < D; ++t) add16(exp16(k_at(t), c), &s0, &s1);
    const __m512 inv = inverse16(s0, s1, p.os);
    double S[16];  // the reference's S per lane, summed when a lane needs it (< 0: not yet)
    alignas(64) int32_t mm[16];
    bool have_m = false;
    for (int64_t t = 0; t < D; ++t) {
      __mmask16 und;
      __m128i b = codes16(k_at(t), inv, c, &und);
      und &= lm;
      if (und) {
        if (!have_m) {
          _mm512_store_si512(mm, m);
          for (int l = 0; l < 16; ++l) S[l] = -1.0;
          have_m = true;
        }
        alignas(16) T tmp[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(tmp), b);
        generic::fix_columns(tmp, und, x, t, inner, j, D, mm, S, p);
        b = _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
      }
      _mm_mask_storeu_epi8(y + t * inner + j, lm, b);
    }
  }
}

// The max code of a row of D codes.
template <typename T>
inline int32_t row_max(const T* xr, int64_t D) {
  const __m512i lowest = _mm512_set1_epi8(std::is_signed<T>::value ? -128 : 0);
  __m512i mv = lowest;
  for (int64_t i = 0; i < D; i += 64) {
    const int64_t n = D - i < 64 ? D - i : 64;
    const __mmask64 lm = n == 64 ? ~0ull : (1ull << n) - 1ull;
    const __m512i v = _mm512_mask_loadu_epi8(lowest, lm, xr + i);
    mv = std::is_signed<T>::value ? _mm512_max_epi8(mv, v) : _mm512_max_epu8(mv, v);
  }
  const __m128i m16 = max16<T>(
      max16<T>(_mm512_castsi512_si128(mv), _mm512_extracti32x4_epi32(mv, 1)),
      max16<T>(_mm512_extracti32x4_epi32(mv, 2), _mm512_extracti32x4_epi32(mv, 3)));
  return _mm512_reduce_max_epi32(widen<T>(m16));
}

// k = m - code for the 16 codes at x (lanes off in lm: 0).
template <typename T>
inline __m512i k16(const T* x, __m512i m) {
  return _mm512_sub_epi32(m, widen<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x))));
}
template <typename T>
inline __m512i k16(const T* x, __m512i m, __mmask16 lm) {
  return _mm512_maskz_sub_epi32(lm, m, widen<T>(_mm_maskz_loadu_epi8(lm, x)));
}

// S' of a row (max code mx): sixteen codes at a time, two pairs of accumulators.
template <typename T>
inline double row_sum16(const T* xr, int64_t D, int32_t mx, const Consts& c) {
  const __m512i m = _mm512_set1_epi32(mx);
  const int64_t D16 = D & ~int64_t(15);
  __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
  __m512d s2 = _mm512_setzero_pd(), s3 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 32 <= D16; i += 32) {
    add16(exp16(k16(xr + i, m), c), &s0, &s1);
    add16(exp16(k16(xr + i + 16, m), c), &s2, &s3);
  }
  if (i < D16) add16(exp16(k16(xr + i, m), c), &s0, &s1);
  if (D16 < D) {
    const __mmask16 tm = static_cast<__mmask16>((1u << (D - D16)) - 1u);
    add16(_mm512_maskz_mov_ps(tm, exp16(k16(xr + D16, m, tm), c)), &s2, &s3);
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(s0, s1), _mm512_add_pd(s2, s3)));
}

// The codes of one row given its max code and float(1 / (S' * os)).
template <typename T>
inline void row_out(const T* xr, T* yr, int64_t D, int32_t mx, float invf, const Params& p,
                    const Consts& c) {
  const __m512i m = _mm512_set1_epi32(mx);
  const __m512 inv = _mm512_set1_ps(invf);
  const int64_t D16 = D & ~int64_t(15);
  double S = -1.0;  // the reference's S, summed when a lane needs it
  auto fix = [&](int64_t i0, __m128i b, __mmask16 und) {
    alignas(16) T tmp[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), b);
    generic::fix_row(tmp, und, xr + i0, xr, D, mx, &S, p);
    return _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
  };
  for (int64_t i = 0; i < D16; i += 16) {
    __mmask16 und;
    __m128i b = codes16(k16(xr + i, m), inv, c, &und);
    if (und) b = fix(i, b, und);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(yr + i), b);
  }
  if (D16 < D) {
    const __mmask16 tm = static_cast<__mmask16>((1u << (D - D16)) - 1u);
    __mmask16 und;
    __m128i b = codes16(k16(xr + D16, m, tm), inv, c, &und);
    und &= tm;
    if (und) b = fix(D16, b, und);
    _mm_mask_storeu_epi8(yr + D16, tm, b);
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
      x, y, D, nrows, p, [&](const T* xr) { return row_max(xr, D); },
      [&](const T* xr, int32_t mx) { return row_sum16(xr, D, mx, c); },
      [&](const T* xr, T* yr, int32_t mx, float inv) { row_out(xr, yr, D, mx, inv, p, c); });
}

}  // namespace

const Table& make_table() {
  static const Table t = {{&cols<uint8_t>, &rows<uint8_t>}, {&cols<int8_t>, &rows<int8_t>}};
  return t;
}

}  // namespace avx512vnni
}  // namespace softmax
}  // namespace kernels
}  // namespace qplugin
