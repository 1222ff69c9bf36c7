// AVX-512 (F/BW/VL/DQ, the avx512vnni tier) elementwise and affine kernels; the 256-entry
// lookup uses VPERMI2B when the CPU has AVX512-VBMI (function-level target, so nothing else in
// this file may use VBMI). Must equal the scalar kernels byte for byte.
// Changes with: generic_impl.h (tails), dispatch.h.
#define QPLUGIN_ISA_NS avx512vnni
#include <immintrin.h>

#include <type_traits>

#include "common/inline.h"
#include "kernels/elementwise/generic_impl.h"

namespace qplugin::kernels::QPLUGIN_ISA_NS {
namespace {

template <typename T>
inline __m512 load16_minus_zp(const T* x, __m512i zp) {
  __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x));
  __m512i w = std::is_signed<T>::value ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
  return _mm512_cvtepi32_ps(_mm512_sub_epi32(w, zp));
}

template <typename T>
inline __m512 maskload16_minus_zp(const T* x, __mmask16 m, __m512i zp) {
  __m128i b = _mm_maskz_loadu_epi8(m, x);
  __m512i w = std::is_signed<T>::value ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
  return _mm512_cvtepi32_ps(_mm512_sub_epi32(w, zp));
}

// fma, clamp in float, round half to even (MXCSR default), add zero point, narrow (in range).
inline __m128i requant16(__m512 v, __m512 a, __m512 b, __m512 lo, __m512 hi, __m512i out_zp) {
  __m512 r = _mm512_fmadd_ps(a, v, b);
  r = _mm512_max_ps(r, lo);
  r = _mm512_min_ps(r, hi);
  __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(r), out_zp);
  return _mm512_cvtepi32_epi8(q);
}

template <typename T>
void affine_rows(const T* x, T* y, int64_t rows, int64_t C, const AffineParams& p) {
  const __m512i in_zp = _mm512_set1_epi32(p.in_zp), out_zp = _mm512_set1_epi32(p.out_zp);
  const __m512 lo = _mm512_set1_ps(p.lo), hi = _mm512_set1_ps(p.hi);
  if (C < 16) {
    generic::affine_rows<T>(x, y, rows, C, p);
    return;
  }
  const int64_t tail = C % 16;
  const __mmask16 tm = static_cast<__mmask16>((1u << tail) - 1u);
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    int64_t c = 0;
    for (; c + 16 <= C; c += 16) {
      __m512 v = load16_minus_zp(xr + c, in_zp);
      __m128i q = requant16(v, _mm512_loadu_ps(p.alpha + c), _mm512_loadu_ps(p.beta + c), lo, hi,
                            out_zp);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(yr + c), q);
    }
    if (tail) {
      __m512 v = maskload16_minus_zp(xr + c, tm, in_zp);
      __m128i q = requant16(v, _mm512_maskz_loadu_ps(tm, p.alpha + c),
                            _mm512_maskz_loadu_ps(tm, p.beta + c), lo, hi, out_zp);
      _mm_mask_storeu_epi8(yr + c, tm, q);
    }
  }
}

template <typename T>
void affine_plane(const T* x, T* y, int64_t n, int64_t ch, const AffineParams& p) {
  const __m512i in_zp = _mm512_set1_epi32(p.in_zp), out_zp = _mm512_set1_epi32(p.out_zp);
  const __m512 lo = _mm512_set1_ps(p.lo), hi = _mm512_set1_ps(p.hi);
  const __m512 a = _mm512_set1_ps(p.alpha[ch]), b = _mm512_set1_ps(p.beta[ch]);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m128i q0 = requant16(load16_minus_zp(x + i, in_zp), a, b, lo, hi, out_zp);
    __m128i q1 = requant16(load16_minus_zp(x + i + 16, in_zp), a, b, lo, hi, out_zp);
    __m128i q2 = requant16(load16_minus_zp(x + i + 32, in_zp), a, b, lo, hi, out_zp);
    __m128i q3 = requant16(load16_minus_zp(x + i + 48, in_zp), a, b, lo, hi, out_zp);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), q0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i + 16), q1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i + 32), q2);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i + 48), q3);
  }
  for (; i < n; i += 16) {
    const int64_t left = n - i < 16 ? n - i : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << left) - 1u);
    __m128i q = requant16(maskload16_minus_zp(x + i, m, in_zp), a, b, lo, hi, out_zp);
    _mm_mask_storeu_epi8(y + i, m, q);
  }
}

// transpose16x16 (r[k] = row k of 16 bytes -> out[j] = column j; per 128-bit lane on __m512i),
// store_columns, nchw_to_nhwc_blocks.
#include "kernels/simd/byte_transpose.h"  // inside this ISA namespace

template <typename T>
void affine_nchw_to_nhwc(const T* x, T* y, int64_t C, int64_t HW, int64_t p0, int64_t p1,
                         const AffineParams& p) {
  const __m512i in_zp = _mm512_set1_epi32(p.in_zp), out_zp = _mm512_set1_epi32(p.out_zp);
  const __m512 lo = _mm512_set1_ps(p.lo), hi = _mm512_set1_ps(p.hi);
  const int64_t pb = nchw_to_nhwc_blocks<__m128i>(
      reinterpret_cast<uint8_t*>(y), C, p0, p1,
      [&](int64_t c, int64_t px) {
        return requant16(load16_minus_zp(x + c * HW + px, in_zp), _mm512_set1_ps(p.alpha[c]),
                         _mm512_set1_ps(p.beta[c]), lo, hi, out_zp);
      },
      [&](int64_t c, int64_t px) {
        const float a = p.alpha[c], b = p.beta[c];
        for (int64_t i = px; i < px + 16; ++i) {
          y[i * C + c] = generic::affine_one<T>(x[c * HW + i], a, b, p.in_zp, p.out_zp, p.lo, p.hi);
        }
      });
  if (pb < p1) generic::affine_nchw_to_nhwc<T>(x, y, C, HW, pb, p1, p);
}

template <typename T>
void clamp(const T* x, T* y, int64_t n, T lo, T hi) {
  constexpr bool kSigned = std::is_signed<T>::value;
  const __m512i vlo = _mm512_set1_epi8(static_cast<char>(lo));
  const __m512i vhi = _mm512_set1_epi8(static_cast<char>(hi));
  auto clamp64 = [&](__m512i v) {
    return kSigned ? _mm512_min_epi8(_mm512_max_epi8(v, vlo), vhi)
                   : _mm512_min_epu8(_mm512_max_epu8(v, vlo), vhi);
  };
  int64_t i = 0;
  for (; i + 256 <= n; i += 256) {
    __m512i a = _mm512_loadu_si512(x + i), b = _mm512_loadu_si512(x + i + 64);
    __m512i c = _mm512_loadu_si512(x + i + 128), d = _mm512_loadu_si512(x + i + 192);
    _mm512_storeu_si512(y + i, clamp64(a));
    _mm512_storeu_si512(y + i + 64, clamp64(b));
    _mm512_storeu_si512(y + i + 128, clamp64(c));
    _mm512_storeu_si512(y + i + 192, clamp64(d));
  }
  for (; i < n; i += 64) {
    const __mmask64 m = _bzhi_u64(~0ull, static_cast<unsigned>(n - i < 64 ? n - i : 64));
    _mm512_mask_storeu_epi8(y + i, m, clamp64(_mm512_maskz_loadu_epi8(m, x + i)));
  }
}

__attribute__((target("avx512vbmi"))) inline __m512i lut64(const uint8_t* t, __m512i idx) {
  const __m512i t0 = _mm512_loadu_si512(t), t1 = _mm512_loadu_si512(t + 64);
  const __m512i t2 = _mm512_loadu_si512(t + 128), t3 = _mm512_loadu_si512(t + 192);
  __m512i lo = _mm512_permutex2var_epi8(t0, idx, t1);
  __m512i hi = _mm512_permutex2var_epi8(t2, idx, t3);
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi);
}

// Per-channel 256-entry tables (VPERMI2B) on 16 channels x 64 pixels, then four 16x16 byte
// transposes in one zmm network. flatten: the row lambda has no VBMI target of its own, so lut64
// inlines only once everything is inlined here.
__attribute__((target("avx512vbmi"), flatten)) void lut8_nchw_to_nhwc_vbmi(
    const uint8_t* x, uint8_t* y, int64_t C, int64_t HW, int64_t p0, int64_t p1,
    const uint8_t* tables) {
  const int64_t pb = nchw_to_nhwc_blocks<__m512i>(
      y, C, p0, p1,
      [&](int64_t c, int64_t px) {
        return lut64(tables + c * 256, _mm512_loadu_si512(x + c * HW + px));
      },
      [&](int64_t c, int64_t px) {
        const uint8_t* t = tables + c * 256;
        for (int64_t i = px; i < px + 64; ++i) y[i * C + c] = t[x[c * HW + i]];
      });
  if (pb < p1) generic::lut8_nchw_to_nhwc(x, y, C, HW, pb, p1, tables);
}

// Transposing copy (KernelTable::copy8_nchw_to_nhwc): 16 channels x 64 pixels per step through
// transpose16x16 on __m512i; leftover channels (C % 16) and pixels bytewise.
void copy8_nchw_to_nhwc(const uint8_t* x, uint8_t* y, int64_t C, int64_t HW, int64_t p0,
                        int64_t p1) {
  int64_t pb = nchw_to_nhwc_blocks<__m512i>(
      y, C, p0, p1, [&](int64_t c, int64_t px) { return _mm512_loadu_si512(x + c * HW + px); },
      [&](int64_t c, int64_t px) {
        for (int64_t i = px; i < px + 64; ++i) y[i * C + c] = x[c * HW + i];
      });
  for (; pb < p1; ++pb)
    for (int64_t c = 0; c < C; ++c) y[pb * C + c] = x[c * HW + pb];
}

__attribute__((target("avx512vbmi"))) void lut8_vbmi(const uint8_t* x, uint8_t* y, int64_t n,
                                                      const uint8_t* table) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512i idx = _mm512_loadu_si512(x + i);
    __m512i lo = _mm512_permutex2var_epi8(t0, idx, t1);  // entries 0..127 (7 low bits)
    __m512i hi = _mm512_permutex2var_epi8(t2, idx, t3);  // entries 128..255
    __mmask64 top = _mm512_movepi8_mask(idx);             // bit 7 picks the half
    _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(top, lo, hi));
  }
  if (i < n) {
    const __mmask64 m = _bzhi_u64(~0ull, static_cast<unsigned>(n - i));
    __m512i idx = _mm512_maskz_loadu_epi8(m, x + i);
    __m512i lo = _mm512_permutex2var_epi8(t0, idx, t1);
    __m512i hi = _mm512_permutex2var_epi8(t2, idx, t3);
    __mmask64 top = _mm512_movepi8_mask(idx);
    _mm512_mask_storeu_epi8(y + i, m, _mm512_mask_blend_epi8(top, lo, hi));
  }
}

__attribute__((target("avx512vbmi"))) void lut8_rows_vbmi(const uint8_t* x, int64_t xs,
                                                           uint8_t* y, int64_t ys, int64_t width,
                                                           int64_t rows, const uint8_t* table) {
  for (int64_t r = 0; r < rows; ++r) lut8_vbmi(x + r * xs, y + r * ys, width, table);
}

// Channels-last to contiguous with one table: for 16 channels x 64 pixels, lane L of row k holds
// pixel 16L+k's 16 channels; after the lane-wise 16x16 transposes, out[j] holds channel c0+j for
// 64 consecutive pixels: one 64-byte store.
__attribute__((target("avx512vbmi"))) void lut8_nhwc_to_nchw_vbmi(
    const uint8_t* x, uint8_t* y, int64_t C, int64_t HW, int64_t p0, int64_t p1,
    const uint8_t* table) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  const int64_t C16 = C - C % 16;
  int64_t pb = p0;
  for (; pb + 64 <= p1; pb += 64) {
    for (int64_t c0 = 0; c0 < C16; c0 += 16) {
      __m512i rows[16], cols[16];
      for (int k = 0; k < 16; ++k) {
        const uint8_t* src = x + (pb + k) * C + c0;
        __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
        v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16 * C)), 1);
        v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32 * C)), 2);
        v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48 * C)), 3);
        __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);
        __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);
        rows[k] = _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi);
      }
      transpose16x16(rows, cols);
      for (int j = 0; j < 16; ++j) _mm512_storeu_si512(y + (c0 + j) * HW + pb, cols[j]);
    }
    for (int64_t c = C16; c < C; ++c) {
      for (int64_t i = pb; i < pb + 64; ++i) y[c * HW + i] = table[x[i * C + c]];
    }
  }
  if (pb < p1) generic::lut8_nhwc_to_nchw(x, y, C, HW, pb, p1, table);
}

template <typename T>
constexpr TypedKernels<T> typed() {
  return {&affine_rows<T>, &affine_plane<T>, &affine_nchw_to_nhwc<T>, &clamp<T>};
}

}  // namespace

const KernelTable& make_table() {
  static const bool has_vbmi = cpu_has_vbmi();
  static const KernelTable t{
      .isa = Isa::kAvx512Vnni,
      .lut8 = has_vbmi ? &lut8_vbmi : &generic::lut8,
      .lut8_rows = has_vbmi ? &lut8_rows_vbmi : &generic::lut8_rows,
      .lut8_nchw_to_nhwc = has_vbmi ? &lut8_nchw_to_nhwc_vbmi : &generic::lut8_nchw_to_nhwc,
      .lut8_nhwc_to_nchw = has_vbmi ? &lut8_nhwc_to_nchw_vbmi : &generic::lut8_nhwc_to_nchw,
      .copy8_nchw_to_nhwc = &copy8_nchw_to_nhwc,
      .pw_affine8 = nullptr,
      .u8 = typed<uint8_t>(),
      .s8 = typed<int8_t>()};
  return t;
}

}  // namespace qplugin::kernels::QPLUGIN_ISA_NS
