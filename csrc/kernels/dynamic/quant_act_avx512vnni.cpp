// AVX-512 activation quantization of the dynamic ops (quant_act.h): 16 floats per vector, masked
// tails, VFMADD, the scalar reference's clamp and round-half-even conversion (identical bytes).
// GCC 12 reports the _mm512_undefined_* placeholders inside its own intrinsic headers as
// uninitialized (as in kernels/gemm/qgemm_u8s8_6x64c4_avx512vnni.cpp); nothing here reads them.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/dynamic/quant_act.h"

namespace qplugin {
namespace kernels {
namespace dynamic {
namespace avx512vnni {
namespace {

void minmax(const float* x, int64_t n, float* mn, float* mx, float* nonfinite_sum) {
  __m512 lo = _mm512_set1_ps(x[0]), hi = lo, s = _mm512_setzero_ps();
  __m512 lo2 = lo, hi2 = lo, s2 = s;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 v = _mm512_loadu_ps(x + i), w = _mm512_loadu_ps(x + i + 16);
    lo = _mm512_min_ps(lo, v);
    hi = _mm512_max_ps(hi, v);
    s = _mm512_add_ps(s, _mm512_sub_ps(v, v));
    lo2 = _mm512_min_ps(lo2, w);
    hi2 = _mm512_max_ps(hi2, w);
    s2 = _mm512_add_ps(s2, _mm512_sub_ps(w, w));
  }
  for (; i < n; i += 16) {
    const int64_t r = n - i < 16 ? n - i : 16;
    const __mmask16 k = static_cast<__mmask16>(r >= 16 ? 0xFFFFu : (1u << r) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
    lo = _mm512_mask_min_ps(lo, k, lo, v);
    hi = _mm512_mask_max_ps(hi, k, hi, v);
    s = _mm512_mask_add_ps(s, k, s, _mm512_sub_ps(v, v));
  }
  lo = _mm512_min_ps(lo, lo2);
  hi = _mm512_max_ps(hi, hi2);
  s = _mm512_add_ps(s, s2);
  *mn = _mm512_reduce_min_ps(lo);
  *mx = _mm512_reduce_max_ps(hi);
  *nonfinite_sum = _mm512_reduce_add_ps(s);
}

void quantize(const float* x, int64_t n, float inv_scale, float zp, float top, uint8_t* q) {
  const __m512 inv = _mm512_set1_ps(inv_scale), z = _mm512_set1_ps(zp);
  const __m512 zero = _mm512_setzero_ps(), vtop = _mm512_set1_ps(top);
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t r = n - i < 16 ? n - i : 16;
    const __mmask16 k = static_cast<__mmask16>(r >= 16 ? 0xFFFFu : (1u << r) - 1u);
    __m512 t = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, x + i), inv, z);
    t = _mm512_min_ps(_mm512_max_ps(t, zero), vtop);
    _mm_mask_storeu_epi8(q + i, k, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(t)));
  }
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
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t r = n - i < 16 ? n - i : 16;
    const __mmask16 k = static_cast<__mmask16>(r >= 16 ? 0xFFFFu : (1u << r) - 1u);
    const __m512 t = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, x + i), inv, z);
    const __m512 c = _mm512_min_ps(_mm512_max_ps(lo, t), hi);
    _mm_mask_storeu_epi8(q + i, k, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(c)));
  }
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
