// AVX-512 activation quantization of the dynamic ops (quant_act.h): 16 floats per vector, masked
// tails, VFMADD, the scalar reference's clamp and round-half-even conversion (identical bytes).
// GCC 12 reports the _mm512_undefined_* placeholders inside its own intrinsic headers as
// uninitialized (as in kernels/gemm/qgemm_u8s8_6x64c4_avx512vnni.cpp); nothing here reads them.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "common/inline.h"
#include "kernels/dynamic/quant_act.h"

namespace qplugin {
namespace kernels {
namespace dynamic {
namespace avx512vnni {
namespace {

// s collects fma(v, 0, s): +-0 for a finite v, NaN for an infinite or NaN one (sticky), so
// nonfinite_sum is 0 exactly when every value is finite; one FMA-pipe op instead of sub + add on
// the adder pipes that min and max use.
void minmax(const float* x, int64_t n, float* mn, float* mx, float* nonfinite_sum) {
  const __m512 zero = _mm512_setzero_ps();
  __m512 lo = _mm512_set1_ps(x[0]), hi = lo, s = zero;
  __m512 lo2 = lo, hi2 = lo, s2 = zero;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 v = _mm512_loadu_ps(x + i), w = _mm512_loadu_ps(x + i + 16);
    lo = _mm512_min_ps(lo, v);
    hi = _mm512_max_ps(hi, v);
    s = _mm512_fmadd_ps(v, zero, s);
    lo2 = _mm512_min_ps(lo2, w);
    hi2 = _mm512_max_ps(hi2, w);
    s2 = _mm512_fmadd_ps(w, zero, s2);
  }
  for (; i < n; i += 16) {
    const int64_t r = n - i < 16 ? n - i : 16;
    const __mmask16 k = static_cast<__mmask16>(r >= 16 ? 0xFFFFu : (1u << r) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
    lo = _mm512_mask_min_ps(lo, k, lo, v);
    hi = _mm512_mask_max_ps(hi, k, hi, v);
    s = _mm512_fmadd_ps(v, zero, s);  // masked-off lanes load 0
  }
  lo = _mm512_min_ps(lo, lo2);
  hi = _mm512_max_ps(hi, hi2);
  s = _mm512_add_ps(s, s2);
  *mn = _mm512_reduce_min_ps(lo);
  *mx = _mm512_reduce_max_ps(hi);
  *nonfinite_sum = _mm512_reduce_add_ps(s);
}

// q[i] = codes(x[i..i+16)) over x[0, n): full vectors unmasked (no mask set-up per vector), a
// masked step for the last n % 16 values only.
template <class Codes>
QPLUGIN_ALWAYS_INLINE void store_codes(const float* x, int64_t n, uint8_t* q, Codes codes) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), codes(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm_mask_storeu_epi8(q + i, k, codes(_mm512_maskz_loadu_ps(k, x + i)));
  }
}

void quantize(const float* x, int64_t n, float inv_scale, float zp, float top, uint8_t* q) {
  const __m512 inv = _mm512_set1_ps(inv_scale), z = _mm512_set1_ps(zp);
  const __m512 zero = _mm512_setzero_ps(), vtop = _mm512_set1_ps(top);
  const auto codes = [&](__m512 v) {
    const __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_fmadd_ps(v, inv, z), zero), vtop);
    return _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(t));
  };
  store_codes(x, n, q, codes);
}

// max(lo, t) first: maxps returns its second operand when one is NaN, so NaN survives it and
// minps(NaN, hi) then gives hi (the scalar reference's NaN -> hi). In-range int32 -> 8 bits by
// truncation is exact for both code types.
void quantize_affine(const float* x, int64_t n, float inv_scale, float zp, bool is_signed,
                     void* qv) {
  uint8_t* q = static_cast<uint8_t*>(qv);
  const __m512 inv = _mm512_set1_ps(inv_scale), z = _mm512_set1_ps(zp);
  const __m512 lo = _mm512_set1_ps(is_signed ? -128.0f : 0.0f);
  const __m512 hi = _mm512_set1_ps(is_signed ? 127.0f : 255.0f);
  const auto codes = [&](__m512 v) {
    const __m512 c = _mm512_min_ps(_mm512_max_ps(lo, _mm512_fmadd_ps(v, inv, z)), hi);
    return _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(c));
  };
  store_codes(x, n, q, codes);
}

}  // namespace

const QuantActKernels& quant_act_table() {
  static const QuantActKernels t{Isa::kAvx512Vnni, &minmax, &quantize, &quantize_affine};
  return t;
}

}  // namespace avx512vnni
}  // namespace dynamic
}  // namespace kernels
}  // namespace qplugin
