// AVX2 activation quantization of the dynamic ops (quant_act.h): 8 floats per vector, VFMADD, then
// the same clamp and round-half-even conversion as the scalar reference (identical bytes).
#include <immintrin.h>

#include <cmath>

#include "common/inline.h"
#include "kernels/dynamic/quant_act.h"

namespace qplugin {
namespace kernels {
namespace dynamic {
namespace avx2 {
namespace {

// Four independent accumulator sets (one chain per set: the loop is not latency-bound). s
// collects fma(v, 0, s): +-0 for a finite v, NaN for an infinite or NaN one (sticky), so
// nonfinite_sum is 0 exactly when every value is finite; one FMA-pipe op instead of sub + add.
void minmax(const float* x, int64_t n, float* mn, float* mx, float* nonfinite_sum) {
  const __m256 zero = _mm256_setzero_ps();
  __m256 lo = _mm256_set1_ps(x[0]), hi = lo, s = zero;
  int64_t i = 0;
  if (n >= 32) {
    __m256 l1 = lo, l2 = lo, l3 = lo, h1 = lo, h2 = lo, h3 = lo, s1 = zero, s2 = zero, s3 = zero;
    for (; i + 32 <= n; i += 32) {
      const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
      const __m256 c = _mm256_loadu_ps(x + i + 16), d = _mm256_loadu_ps(x + i + 24);
      lo = _mm256_min_ps(lo, a);
      l1 = _mm256_min_ps(l1, b);
      l2 = _mm256_min_ps(l2, c);
      l3 = _mm256_min_ps(l3, d);
      hi = _mm256_max_ps(hi, a);
      h1 = _mm256_max_ps(h1, b);
      h2 = _mm256_max_ps(h2, c);
      h3 = _mm256_max_ps(h3, d);
      s = _mm256_fmadd_ps(a, zero, s);
      s1 = _mm256_fmadd_ps(b, zero, s1);
      s2 = _mm256_fmadd_ps(c, zero, s2);
      s3 = _mm256_fmadd_ps(d, zero, s3);
    }
    lo = _mm256_min_ps(_mm256_min_ps(lo, l1), _mm256_min_ps(l2, l3));
    hi = _mm256_max_ps(_mm256_max_ps(hi, h1), _mm256_max_ps(h2, h3));
    s = _mm256_add_ps(_mm256_add_ps(s, s1), _mm256_add_ps(s2, s3));
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    lo = _mm256_min_ps(lo, v);
    hi = _mm256_max_ps(hi, v);
    s = _mm256_fmadd_ps(v, zero, s);
  }
  alignas(32) float l[8], h[8], t[8];
  _mm256_store_ps(l, lo);
  _mm256_store_ps(h, hi);
  _mm256_store_ps(t, s);
  float rl = l[0], rh = h[0], rs = 0.0f;
  for (int j = 0; j < 8; ++j) {
    rl = l[j] < rl ? l[j] : rl;
    rh = h[j] > rh ? h[j] : rh;
    rs += t[j];
  }
  for (; i < n; ++i) {
    const float v = x[i];
    rl = v < rl ? v : rl;
    rh = v > rh ? v : rh;
    rs += v - v;
  }
  *mn = rl;
  *mx = rh;
  *nonfinite_sum = rs;
}

// The 32-float blocks of x[0, n): quant8(p) gives the 8 floats at p as int32 codes already in
// the output range, so the saturating packs (signed ones for int8 codes) narrow them exactly; the
// permute undoes the packs' lane order. Returns the first element left (fewer than 32 remain).
template <class Quant8>
QPLUGIN_ALWAYS_INLINE int64_t quantize_blocks32(const float* x, int64_t n, bool is_signed,
                                                uint8_t* q, Quant8 quant8) {
  const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i ab = _mm256_packs_epi32(quant8(x + i), quant8(x + i + 8));
    const __m256i cd = _mm256_packs_epi32(quant8(x + i + 16), quant8(x + i + 24));
    const __m256i p = is_signed ? _mm256_packs_epi16(ab, cd) : _mm256_packus_epi16(ab, cd);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), _mm256_permutevar8x32_epi32(p, perm));
  }
  return i;
}

inline __m256i quant8(const float* x, __m256 inv, __m256 zp, __m256 zero, __m256 top) {
  __m256 t = _mm256_fmadd_ps(_mm256_loadu_ps(x), inv, zp);
  t = _mm256_min_ps(_mm256_max_ps(t, zero), top);
  return _mm256_cvtps_epi32(t);
}

void quantize(const float* x, int64_t n, float inv_scale, float zp, float top, uint8_t* q) {
  const __m256 inv = _mm256_set1_ps(inv_scale), z = _mm256_set1_ps(zp);
  const __m256 zero = _mm256_setzero_ps(), vtop = _mm256_set1_ps(top);
  int64_t i = quantize_blocks32(x, n, /*is_signed=*/false, q, [&](const float* p) {
    return quant8(p, inv, z, zero, vtop);  // in [0, 255]
  });
  for (; i < n; ++i) {
    float t = std::fma(x[i], inv_scale, zp);
    t = t > 0.0f ? t : 0.0f;
    t = t < top ? t : top;
    q[i] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(t)));
  }
}

// max(lo, t) first: maxps returns its second operand when one is NaN, so NaN survives it and
// minps(NaN, hi) then gives hi (the scalar reference's NaN -> hi).
inline __m256i quant_affine8(const float* x, __m256 inv, __m256 zp, __m256 lo, __m256 hi) {
  const __m256 t = _mm256_fmadd_ps(_mm256_loadu_ps(x), inv, zp);
  return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(lo, t), hi));
}

void quantize_affine(const float* x, int64_t n, float inv_scale, float zp, bool is_signed,
                     void* qv) {
  uint8_t* q = static_cast<uint8_t*>(qv);
  const float flo = is_signed ? -128.0f : 0.0f, fhi = is_signed ? 127.0f : 255.0f;
  const __m256 inv = _mm256_set1_ps(inv_scale), z = _mm256_set1_ps(zp);
  const __m256 lo = _mm256_set1_ps(flo), hi = _mm256_set1_ps(fhi);
  int64_t i = quantize_blocks32(x, n, is_signed, q, [&](const float* p) {
    return quant_affine8(p, inv, z, lo, hi);  // in [flo, fhi]
  });
  for (; i < n; ++i) {
    const float t = std::fma(x[i], inv_scale, zp);
    const float r = !(t < fhi) ? fhi : std::fmax(std::nearbyint(t), flo);
    q[i] = static_cast<uint8_t>(static_cast<int32_t>(r));  // int8 codes: modulo 256, C++20
  }
}

}  // namespace

const QuantActKernels& quant_act_table() {
  static const QuantActKernels t{Isa::kAvx2, &minmax, &quantize, &quantize_affine};
  return t;
}

}  // namespace avx2
}  // namespace dynamic
}  // namespace kernels
}  // namespace qplugin
