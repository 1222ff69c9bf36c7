// AVX2 + FMA elementwise and affine kernels. Must equal the scalar kernels byte for byte.
// Changes with: generic_impl.h (tails), dispatch.h.
#define QPLUGIN_ISA_NS avx2
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include <type_traits>

#include "common/inline.h"
#include "kernels/elementwise/generic_impl.h"

namespace qplugin::kernels::QPLUGIN_ISA_NS {
namespace {

template <typename T>
inline __m256 load8_minus_zp(const T* x, __m256i zp) {
  __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x));
  __m256i w = std::is_signed<T>::value ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
  return _mm256_cvtepi32_ps(_mm256_sub_epi32(w, zp));
}

inline __m256i requant8(__m256 v, __m256 a, __m256 b, __m256 lo, __m256 hi, __m256i out_zp) {
  __m256 r = _mm256_fmadd_ps(a, v, b);
  r = _mm256_max_ps(r, lo);
  r = _mm256_min_ps(r, hi);
  return _mm256_add_epi32(_mm256_cvtps_epi32(r), out_zp);
}

// Two int32 x8 vectors, already within the 8-bit range, to 16 bytes in order.
template <typename T>
inline __m128i narrow16(__m256i q0, __m256i q1) {
  __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(q0, q1), 0xD8);
  __m128i lo = _mm256_castsi256_si128(w), hi = _mm256_extracti128_si256(w, 1);
  return std::is_signed<T>::value ? _mm_packs_epi16(lo, hi) : _mm_packus_epi16(lo, hi);
}

template <typename T>
inline __m128i row16(const T* x, __m256 a0, __m256 a1, __m256 b0, __m256 b1, __m256 lo,
                     __m256 hi, __m256i in_zp, __m256i out_zp) {
  __m256i q0 = requant8(load8_minus_zp(x, in_zp), a0, b0, lo, hi, out_zp);
  __m256i q1 = requant8(load8_minus_zp(x + 8, in_zp), a1, b1, lo, hi, out_zp);
  return narrow16<T>(q0, q1);
}

// AffineParams::bounded (every |r| < 2^30): 32 codes a step, rounded by VCVTPS2DQ, out_zp added
// in int16 with saturation, narrowed by saturating packs and clamped as bytes, which equals the
// float clamp then rounding of affine_one: with |r| < 2^30 every stage either keeps the exact
// value or saturates on the side its clamp would. About 30 vector ops per 32 codes against ~46
// for row16 twice (its SSE narrowing, the float clamps).
template <typename T>
struct Bounded32 {
  __m256i in_zp, out_zp16, blo, bhi, order;
  // Whether [lo, hi] + out_zp is narrower than T's range (ReLU, or a zero point that shifts the
  // bounds); otherwise the saturating packs already clamp.
  bool clamp;
  explicit Bounded32(const AffineParams& p)
      : in_zp(_mm256_set1_epi32(p.in_zp)),
        out_zp16(_mm256_set1_epi16(static_cast<int16_t>(p.out_zp))),
        blo(_mm256_set1_epi8(static_cast<char>(static_cast<int32_t>(p.lo) + p.out_zp))),
        bhi(_mm256_set1_epi8(static_cast<char>(static_cast<int32_t>(p.hi) + p.out_zp))),
        order(_mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)),
        clamp(static_cast<int32_t>(p.lo) + p.out_zp > std::numeric_limits<T>::min() ||
              static_cast<int32_t>(p.hi) + p.out_zp < std::numeric_limits<T>::max()) {}
  // a[j], b[j]: the coefficients of codes x[8j..8j+8).
  QPLUGIN_ALWAYS_INLINE __m256i operator()(const T* x, const __m256* a, const __m256* b) const {
    __m256i q[4];
    for (int j = 0; j < 4; ++j) {
      const __m128i v8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + 8 * j));
      const __m256i w =
          std::is_signed<T>::value ? _mm256_cvtepi8_epi32(v8) : _mm256_cvtepu8_epi32(v8);
      q[j] = _mm256_cvtps_epi32(
          _mm256_fmadd_ps(a[j], _mm256_cvtepi32_ps(_mm256_sub_epi32(w, in_zp)), b[j]));
    }
    const __m256i w01 = _mm256_adds_epi16(_mm256_packs_epi32(q[0], q[1]), out_zp16);
    const __m256i w23 = _mm256_adds_epi16(_mm256_packs_epi32(q[2], q[3]), out_zp16);
    if (std::is_signed<T>::value) {
      const __m256i o = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23), order);
      return clamp ? _mm256_min_epi8(_mm256_max_epi8(o, blo), bhi) : o;
    }
    const __m256i o = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(w01, w23), order);
    return clamp ? _mm256_min_epu8(_mm256_max_epu8(o, blo), bhi) : o;
  }
};

// FixedAffine (dispatch.h): 32 codes a step in s16 lanes instead of Bounded32's 8 float lanes
// (18 vector ops per 32 codes against ~30; on a Zen 1 every 256-bit op is two). Per 16 codes:
// widen to s16, shift by k, VPMADDWD against (m, 0) pairs (even codes) and (0, m) (odd codes),
// add b, and the high s16 of each s32 is the result: the odd lanes' already sit there, the even
// lanes' move down (VPSRLD 16) and VPBLENDW interleaves them. Then the saturating pack to T (in
// 128-bit halves, VPERMQ restores the order) and the byte clamp. Exact only as checked by the op
// on all 256 codes (fixed_plane); s32 wrap-around or a rounding tie shows there as a mismatch.
// One fixed-point piece (m, b) on 16 s16 lanes u: the int32 values u * m + b of the even lanes
// (VPMADDWD against (m, 0) pairs) and of the odd lanes (against (0, m)).
struct FixedPiece {
  __m256i me, mo, b;
  explicit FixedPiece(const FixedAffine& f)
      : me(_mm256_set1_epi32(f.m & 0xFFFF)),
        mo(_mm256_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(f.m) << 16))),
        b(_mm256_set1_epi32(f.b)) {}
  QPLUGIN_ALWAYS_INLINE __m256i even(__m256i u) const {
    return _mm256_add_epi32(_mm256_madd_epi16(u, me), b);
  }
  QPLUGIN_ALWAYS_INLINE __m256i odd(__m256i u) const {
    return _mm256_add_epi32(_mm256_madd_epi16(u, mo), b);
  }
};

// The high s16 of each int32 (floor(v / 2^16)) in u's lane order: the odd lanes' already sit
// there, the even lanes' move down.
QPLUGIN_ALWAYS_INLINE __m256i high16(__m256i even, __m256i odd) {
  return _mm256_blend_epi16(_mm256_srli_epi32(even, 16), odd, 0xAA);
}

// 16 codes of type T widened to s16 (their values).
template <typename T>
QPLUGIN_ALWAYS_INLINE __m256i widen16(const T* x) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x));
  return std::is_signed<T>::value ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}

// Two s16 vectors (codes 0-15, 16-31) saturated to 32 codes of type T in order, clamped to the
// byte range [blo, bhi] when `clamp`.
template <typename T>
QPLUGIN_ALWAYS_INLINE __m256i pack16_clamp(__m256i lo16, __m256i hi16, bool clamp, __m256i blo,
                                           __m256i bhi) {
  if (std::is_signed<T>::value) {
    const __m256i o = _mm256_permute4x64_epi64(_mm256_packs_epi16(lo16, hi16), 0xD8);
    return clamp ? _mm256_min_epi8(_mm256_max_epi8(o, blo), bhi) : o;
  }
  const __m256i o = _mm256_permute4x64_epi64(_mm256_packus_epi16(lo16, hi16), 0xD8);
  return clamp ? _mm256_min_epu8(_mm256_max_epu8(o, blo), bhi) : o;
}

template <typename T>
struct Fixed32 {
  FixedPiece f;
  __m256i blo, bhi;
  __m128i k;
  bool clamp;
  Fixed32(const FixedAffine& fa, int32_t lo, int32_t hi)
      : f(fa),
        blo(_mm256_set1_epi8(static_cast<char>(lo))),
        bhi(_mm256_set1_epi8(static_cast<char>(hi))),
        k(_mm_cvtsi32_si128(fa.k)),
        clamp(lo > std::numeric_limits<T>::min() || hi < std::numeric_limits<T>::max()) {}
  QPLUGIN_ALWAYS_INLINE __m256i half(const T* x) const {
    const __m256i u = _mm256_sll_epi16(widen16<T>(x), k);
    return high16(f.even(u), f.odd(u));
  }
  QPLUGIN_ALWAYS_INLINE __m256i operator()(const T* x) const {
    return pack16_clamp<T>(half(x), half(x + 16), clamp, blo, bhi);
  }
};

template <typename T>
void fixed_plane(const T* x, T* y, int64_t n, const FixedAffine& f, int32_t blo, int32_t bhi) {
  const Fixed32<T> fx(f, blo, bhi);
  for (int64_t i = 0; i + 32 <= n; i += 32) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), fx(x + i));
  }
}

template <typename T>
void affine_rows(const T* x, T* y, int64_t rows, int64_t C, const AffineParams& p) {
  const __m256i in_zp = _mm256_set1_epi32(p.in_zp), out_zp = _mm256_set1_epi32(p.out_zp);
  const __m256 lo = _mm256_set1_ps(p.lo), hi = _mm256_set1_ps(p.hi);
  const Bounded32<T> b32(p);
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    int64_t c = 0;
    if (p.bounded) {
      for (; c + 32 <= C; c += 32) {
        const __m256 a[4] = {_mm256_loadu_ps(p.alpha + c), _mm256_loadu_ps(p.alpha + c + 8),
                             _mm256_loadu_ps(p.alpha + c + 16), _mm256_loadu_ps(p.alpha + c + 24)};
        const __m256 b[4] = {_mm256_loadu_ps(p.beta + c), _mm256_loadu_ps(p.beta + c + 8),
                             _mm256_loadu_ps(p.beta + c + 16), _mm256_loadu_ps(p.beta + c + 24)};
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(yr + c), b32(xr + c, a, b));
      }
    }
    for (; c + 16 <= C; c += 16) {
      __m128i q = row16<T>(xr + c, _mm256_loadu_ps(p.alpha + c), _mm256_loadu_ps(p.alpha + c + 8),
                           _mm256_loadu_ps(p.beta + c), _mm256_loadu_ps(p.beta + c + 8), lo, hi,
                           in_zp, out_zp);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(yr + c), q);
    }
    for (; c < C; ++c) {
      yr[c] = generic::affine_one<T>(xr[c], p.alpha[c], p.beta[c], p.in_zp, p.out_zp, p.lo, p.hi);
    }
  }
}

template <typename T>
void affine_plane(const T* x, T* y, int64_t n, int64_t ch, const AffineParams& p) {
  const __m256i in_zp = _mm256_set1_epi32(p.in_zp), out_zp = _mm256_set1_epi32(p.out_zp);
  const __m256 lo = _mm256_set1_ps(p.lo), hi = _mm256_set1_ps(p.hi);
  const __m256 a = _mm256_set1_ps(p.alpha[ch]), b = _mm256_set1_ps(p.beta[ch]);
  int64_t i = 0;
  if (p.bounded && p.fixed != nullptr && p.fixed[ch].ok) {
    const int32_t blo = static_cast<int32_t>(p.lo) + p.out_zp;
    const int32_t bhi = static_cast<int32_t>(p.hi) + p.out_zp;
    i = n / 32 * 32;
    fixed_plane<T>(x, y, i, p.fixed[ch], blo, bhi);
  } else if (p.bounded) {
    const Bounded32<T> b32(p);
    const __m256 a4[4] = {a, a, a, a}, b4[4] = {b, b, b, b};
    for (; i + 32 <= n; i += 32) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), b32(x + i, a4, b4));
    }
  }
  for (; i + 16 <= n; i += 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     row16<T>(x + i, a, a, b, b, lo, hi, in_zp, out_zp));
  }
  for (; i < n; ++i) {
    y[i] = generic::affine_one<T>(x[i], p.alpha[ch], p.beta[ch], p.in_zp, p.out_zp, p.lo, p.hi);
  }
}

// transpose16x16: r[k] = row k of 16 bytes -> out[j] = column j; nchw_to_nhwc_blocks.
#include "kernels/simd/byte_transpose.h"  // inside this ISA namespace

template <typename T>
void affine_nchw_to_nhwc(const T* x, T* y, int64_t C, int64_t HW, int64_t p0, int64_t p1,
                         const AffineParams& p) {
  const __m256i in_zp = _mm256_set1_epi32(p.in_zp), out_zp = _mm256_set1_epi32(p.out_zp);
  const __m256 lo = _mm256_set1_ps(p.lo), hi = _mm256_set1_ps(p.hi);
  auto scalar_run = [&](int64_t c, int64_t px, int64_t len) {
    const float a = p.alpha[c], b = p.beta[c];
    for (int64_t i = px; i < px + len; ++i) {
      y[i * C + c] = generic::affine_one<T>(x[c * HW + i], a, b, p.in_zp, p.out_zp, p.lo, p.hi);
    }
  };
  int64_t pb = p0;
  if (p.bounded) {
    // Tiles of 16 channels x up to 256 pixels (a multiple of 32): each channel's run computed
    // by Bounded32 into the tile (one input stream at a time, as lut8_nchw_to_nhwc reads), then
    // the ymm byte transpose (two 16x16 networks) writes the NHWC rows. Reading 16 channels 32
    // pixels at a time instead (16 strided streams) measured ~15% slower (1x64x112x112: 0.081
    // against 0.069 ms on a Zen 5 held to AVX2).
    constexpr int64_t kPix = 256;
    const Bounded32<T> b32(p);
    const int32_t fx_lo = static_cast<int32_t>(p.lo) + p.out_zp;
    const int32_t fx_hi = static_cast<int32_t>(p.hi) + p.out_zp;
    const int64_t C16 = C - C % 16;
    alignas(32) uint8_t tile[16][kPix];
    for (; pb + 32 <= p1; pb += kPix) {
      const int64_t np = std::min<int64_t>(kPix, (p1 - pb) & ~int64_t{31});
      for (int64_t c0 = 0; c0 < C16; c0 += 16) {
        for (int k = 0; k < 16; ++k) {
          const int64_t c = c0 + k;
          const T* xc = x + c * HW + pb;
          if (p.fixed != nullptr && p.fixed[c].ok) {
            const Fixed32<T> fx(p.fixed[c], fx_lo, fx_hi);
            for (int64_t j = 0; j < np; j += 32) {
              _mm256_store_si256(reinterpret_cast<__m256i*>(&tile[k][j]), fx(xc + j));
            }
            continue;
          }
          const __m256 a = _mm256_set1_ps(p.alpha[c]), b = _mm256_set1_ps(p.beta[c]);
          const __m256 a4[4] = {a, a, a, a}, b4[4] = {b, b, b, b};
          for (int64_t j = 0; j < np; j += 32) {
            _mm256_store_si256(reinterpret_cast<__m256i*>(&tile[k][j]), b32(xc + j, a4, b4));
          }
        }
        for (int64_t j0 = 0; j0 < np; j0 += 32) {
          __m256i rows[16], cols[16];
          for (int k = 0; k < 16; ++k) {
            rows[k] = _mm256_load_si256(reinterpret_cast<const __m256i*>(&tile[k][j0]));
          }
          transpose16x16(rows, cols);
          store_columns(cols, reinterpret_cast<uint8_t*>(y) + (pb + j0) * C + c0, C);
        }
      }
      for (int64_t c = C16; c < C; ++c) scalar_run(c, pb, np);
      if (np < kPix) {
        pb += np;
        break;
      }
    }
  }
  pb = nchw_to_nhwc_blocks<__m128i>(
      reinterpret_cast<uint8_t*>(y), C, pb, p1,
      [&](int64_t c, int64_t px) {
        const __m256 a = _mm256_set1_ps(p.alpha[c]), b = _mm256_set1_ps(p.beta[c]);
        return row16<T>(x + c * HW + px, a, a, b, b, lo, hi, in_zp, out_zp);
      },
      [&](int64_t c, int64_t px) { scalar_run(c, px, 16); });
  if (pb < p1) generic::affine_nchw_to_nhwc<T>(x, y, C, HW, pb, p1, p);
}

template <typename T>
void clamp(const T* x, T* y, int64_t n, T lo, T hi) {
  generic::clamp<T>(x, y, n, lo, hi);  // auto-vectorized with this file's AVX2 flags
}

// Per-channel tables into 16 channels x 256 pixels tiles: each channel's table is loaded into
// registers once per 256 pixels (lut8_32 below, 8 vectors), then 16x16 byte transposes, two
// per ymm network, write the NHWC rows. Channels past the last multiple of 16, and pixel runs
// shorter than 32, take the scalar form (exact lookups either way).
void lut8_nchw_to_nhwc(const uint8_t* x, uint8_t* y, int64_t C, int64_t HW, int64_t p0, int64_t p1,
                       const uint8_t* tables);

// y[i] = table[x[i]]: a 256-entry byte lookup as 16 VPSHUFB (one per 16-byte slice of the
// table, broadcast to both 128-bit lanes, indexed by the low nibble) and a blend tree on the high
// nibble: VPBLENDVB selects on bit 7 of each mask byte, so bit 4, 5, 6 of the code are moved
// there by 16-bit left shifts of 3, 2, 1 (bits shifted in from the neighbour byte land below bit
// 7 and do not matter), and bit 7 is the code itself. Measured on Zen 3 against the XOR-telescope
// form (16 VPSHUFB with saturating-add indexes, 47 ops per 32 bytes): the blend tree (35 ops)
// was ~15% faster; both beat the scalar loop ~3x at 802816 bytes. The tree's first level (bit 4)
// is now an OR of two VPSHUFB whose indexes zero the other half (lut8_32): 16 VPSHUFB + 7
// VPBLENDVB + 8 VPOR, 38 ops of which 23 (was 31) use the shuffle/blend pipes; on a Zen 5 held
// to AVX2 the 802816-byte lookups went 0.095 -> 0.077 ms. Exact: every output byte is a table
// byte, so it equals the scalar lookup; the n % 32 tail runs the scalar loop.
struct Lut8Slices {
  __m256i t[16];
  explicit Lut8Slices(const uint8_t* table) {
    for (int j = 0; j < 16; ++j) {
      t[j] = _mm256_broadcastsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * j)));
    }
  }
};

inline __m256i lut8_32(const Lut8Slices& s, __m256i v) {
  const __m256i k80 = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i lo = _mm256_and_si256(v, _mm256_set1_epi8(15));
  const __m256i m5 = _mm256_slli_epi16(v, 2), m6 = _mm256_slli_epi16(v, 1);
  // First level without blends: VPSHUFB writes 0 where its index has bit 7 set, so index ia
  // (the low nibble, bit 7 = bit 4 of the code) reads slice 2j only where bit 4 is 0, and ib
  // (bit 7 = not bit 4) slice 2j + 1 only where it is 1; their OR is the selected byte.
  const __m256i ia = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(v, 3), k80));
  const __m256i ib = _mm256_xor_si256(ia, k80);
  __m256i r[8];
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm256_or_si256(_mm256_shuffle_epi8(s.t[2 * j], ia),
                           _mm256_shuffle_epi8(s.t[2 * j + 1], ib));
  }
  for (int j = 0; j < 4; ++j) r[j] = _mm256_blendv_epi8(r[2 * j], r[2 * j + 1], m5);
  for (int j = 0; j < 2; ++j) r[j] = _mm256_blendv_epi8(r[2 * j], r[2 * j + 1], m6);
  return _mm256_blendv_epi8(r[0], r[1], v);
}

void lut8(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) {
  if (n < 64) {
    generic::lut8(x, y, n, table);
    return;
  }
  const Lut8Slices s(table);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), lut8_32(s, v));
  }
  generic::lut8(x + i, y + i, n - i, table);
}

// Short rows: the 16 table slices stay in registers across rows; per row whole 32-byte vectors,
// then one vector over the row's last 32 bytes (width >= 32: it overlaps codes already done,
// which it writes again with the same bytes; x and y do not overlap), or the scalar loop
// (width < 32).
void lut8_rows(const uint8_t* x, int64_t xs, uint8_t* y, int64_t ys, int64_t width,
               int64_t rows, const uint8_t* table) {
  if (width < 32) {
    generic::lut8_rows(x, xs, y, ys, width, rows, table);
    return;
  }
  const Lut8Slices s(table);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* xr = x + r * xs;
    uint8_t* yr = y + r * ys;
    int64_t i = 0;
    for (; i + 32 <= width; i += 32) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr + i));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(yr + i), lut8_32(s, v));
    }
    if (i < width) {
      const int64_t j = width - 32;
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr + j));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(yr + j), lut8_32(s, v));
    }
  }
}

void lut8_nchw_to_nhwc(const uint8_t* x, uint8_t* y, int64_t C, int64_t HW, int64_t p0, int64_t p1,
                       const uint8_t* tables) {
  constexpr int64_t kPix = 256;
  const int64_t C16 = C - C % 16;
  alignas(32) uint8_t tile[16][kPix];
  int64_t pb = p0;
  for (; pb + 32 <= p1; pb += kPix) {
    const int64_t np = std::min<int64_t>(kPix, (p1 - pb) & ~int64_t{31});  // multiple of 32
    for (int64_t c0 = 0; c0 < C16; c0 += 16) {
      for (int k = 0; k < 16; ++k) {
        const Lut8Slices s(tables + (c0 + k) * 256);
        const uint8_t* xc = x + (c0 + k) * HW + pb;
        for (int64_t j = 0; j < np; j += 32) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xc + j));
          _mm256_store_si256(reinterpret_cast<__m256i*>(&tile[k][j]), lut8_32(s, v));
        }
      }
      for (int64_t j0 = 0; j0 < np; j0 += 32) {  // two 16x16 transposes per ymm network
        __m256i rows[16], cols[16];
        for (int k = 0; k < 16; ++k) {
          rows[k] = _mm256_load_si256(reinterpret_cast<const __m256i*>(&tile[k][j0]));
        }
        transpose16x16(rows, cols);
        store_columns(cols, y + (pb + j0) * C + c0, C);
      }
    }
    for (int64_t c = C16; c < C; ++c) {
      const uint8_t* t = tables + c * 256;
      for (int64_t i = pb; i < pb + np; ++i) y[i * C + c] = t[x[c * HW + i]];
    }
    if (np < kPix) {
      pb += np;
      break;
    }
  }
  if (pb < p1) generic::lut8_nchw_to_nhwc(x, y, C, HW, pb, p1, tables);
}

// Channels-last codes to a contiguous output through one table: 32 pixels x 16 channels per
// step, looked up two pixel rows per ymm (lut8_32: a single table, so the lookup commutes with
// the transpose), then the byte transpose on ymm (two 16x16 networks at once) writes 16 channel
// rows of 32 pixels. Channels past the last multiple of 16 and the last (p1 - p0) % 32 pixels
// take the scalar form.
void lut8_nhwc_to_nchw(const uint8_t* x, uint8_t* y, int64_t C, int64_t HW, int64_t p0, int64_t p1,
                       const uint8_t* table) {
  const int64_t C16 = C - C % 16;
  if (C16 == 0 || p1 - p0 < 16) {
    generic::lut8_nhwc_to_nchw(x, y, C, HW, p0, p1, table);
    return;
  }
  const Lut8Slices s(table);
  int64_t pb = p0;
  // 32 pixels x 16 channels per step: ymm row k holds pixel pb + k's 16 channels in its low lane
  // and pixel pb + 16 + k's in its high lane, so the per-lane transpose leaves channel c0 + j's
  // 32 consecutive pixels in cols[j]: one 32-byte store.
  for (; pb + 32 <= p1; pb += 32) {
    for (int64_t c0 = 0; c0 < C16; c0 += 16) {
      __m256i rows[16], cols[16];
      for (int k = 0; k < 16; ++k) {
        rows[k] = lut8_32(s, _mm256_loadu2_m128i(
                                 reinterpret_cast<const __m128i*>(x + (pb + 16 + k) * C + c0),
                                 reinterpret_cast<const __m128i*>(x + (pb + k) * C + c0)));
      }
      transpose16x16(rows, cols);
      for (int j = 0; j < 16; ++j) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + (c0 + j) * HW + pb), cols[j]);
      }
    }
    for (int64_t c = C16; c < C; ++c) {
      for (int64_t i = pb; i < pb + 32; ++i) y[c * HW + i] = table[x[i * C + c]];
    }
  }
  if (pb < p1) generic::lut8_nhwc_to_nchw(x, y, C, HW, pb, p1, table);
}

// Transposing copy (KernelTable::copy8_nchw_to_nhwc): 16 channels x 32 pixels per step through
// the byte transpose on ymm (two 16x16 networks at once; half the unpacks of the SSE form);
// channels past the last multiple of 16 and the last (p1 - p0) % 32 pixels bytewise.
void copy8_nchw_to_nhwc(const uint8_t* x, uint8_t* y, int64_t C, int64_t HW, int64_t p0,
                        int64_t p1) {
  int64_t pb = nchw_to_nhwc_blocks<__m256i>(
      y, C, p0, p1,
      [&](int64_t c, int64_t px) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + c * HW + px));
      },
      [&](int64_t c, int64_t px) {
        for (int64_t i = px; i < px + 32; ++i) y[i * C + c] = x[c * HW + i];
      });
  for (; pb < p1; ++pb) {
    for (int64_t c = 0; c < C; ++c) y[pb * C + c] = x[c * HW + pb];
  }
}

// KernelTable::pw_affine8 (dispatch.h): the map computed, 32 codes a step. Per 8 codes: widen,
// subtract c, convert (exact), one FMA per piece, the pieces combined (kSelect on the integer
// code, x > t; kMax / kMin), optionally the float clamp, VCVTPS2DQ (round half to even); then
// saturating packs to bytes in order and the [lo, hi] byte clamp. Without fclamp every r is within
// int32 (the plan checks |r| < 2^30), so the packs' saturation and the byte clamp give exactly
// clamp(nearbyint(r)). kKeep is bytes only: a compare and a blend. On a Zen 5 held to AVX2, 802816
// codes: one piece 0.049 ms, against 0.077-0.080 for lut8 (whose 256-entry VPSHUFB tree keeps
// the two shuffle pipes busy ~12 cycles per 32 bytes).
template <bool kSigned>
inline __m256i gt_bytes(__m256i x, __m256i t1) {  // x > t as x >= t + 1 (t + 1 in range)
  return kSigned ? _mm256_cmpeq_epi8(_mm256_max_epi8(x, t1), x)
                 : _mm256_cmpeq_epi8(_mm256_max_epu8(x, t1), x);
}

template <bool kSigned, int kMode, bool kFClamp, bool kSubC>
void pw_affine8_body(const uint8_t* x, uint8_t* y, int64_t n32, const PwAffine8& p) {
  const __m256i blo = _mm256_set1_epi8(static_cast<char>(p.lo));
  const __m256i bhi = _mm256_set1_epi8(static_cast<char>(p.hi));
  auto clamp_bytes = [&](__m256i o) {
    return kSigned ? _mm256_min_epi8(_mm256_max_epi8(o, blo), bhi)
                   : _mm256_min_epu8(_mm256_max_epu8(o, blo), bhi);
  };
  if constexpr (kMode == PwAffine8::kKeep) {
    // The plan keeps kKeep to t in [min code, max code - 1], so t + 1 is a code.
    const __m256i t1 = _mm256_set1_epi8(static_cast<char>(p.t + 1));
    const __m256i kv = _mm256_set1_epi8(static_cast<char>(p.k));
    for (int64_t i = 0; i < n32; i += 32) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
      const __m256i o = _mm256_blendv_epi8(kv, v, gt_bytes<kSigned>(v, t1));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), clamp_bytes(o));
    }
    return;
  }
  const __m256 a1 = _mm256_set1_ps(p.a1), b1 = _mm256_set1_ps(p.b1);
  const __m256 a2 = _mm256_set1_ps(p.a2), b2 = _mm256_set1_ps(p.b2);
  const __m256 flo = _mm256_set1_ps(static_cast<float>(p.lo));
  const __m256 fhi = _mm256_set1_ps(static_cast<float>(p.hi));
  const __m256i c = _mm256_set1_epi32(p.c), t = _mm256_set1_epi32(p.t);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t i = 0; i < n32; i += 32) {
    __m256i q[4];
    for (int j = 0; j < 4; ++j) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i + 8 * j));
      const __m256i xi = kSigned ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
      const __m256 v = _mm256_cvtepi32_ps(kSubC ? _mm256_sub_epi32(xi, c) : xi);
      __m256 r = _mm256_fmadd_ps(a1, v, b1);
      if constexpr (kMode == PwAffine8::kSelect) {
        const __m256 upper = _mm256_castsi256_ps(_mm256_cmpgt_epi32(xi, t));
        r = _mm256_blendv_ps(_mm256_fmadd_ps(a2, v, b2), r, upper);
      } else if constexpr (kMode == PwAffine8::kMax) {
        r = _mm256_max_ps(r, _mm256_fmadd_ps(a2, v, b2));
      } else if constexpr (kMode == PwAffine8::kMin) {
        r = _mm256_min_ps(r, _mm256_fmadd_ps(a2, v, b2));
      }
      if (kFClamp) r = _mm256_min_ps(_mm256_max_ps(r, flo), fhi);
      q[j] = _mm256_cvtps_epi32(r);
    }
    const __m256i w01 = _mm256_packs_epi32(q[0], q[1]), w23 = _mm256_packs_epi32(q[2], q[3]);
    const __m256i o = kSigned ? _mm256_packs_epi16(w01, w23) : _mm256_packus_epi16(w01, w23);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        clamp_bytes(_mm256_permutevar8x32_epi32(o, order)));
  }
}

// PwAffine8::fixed (dispatch.h): 32 codes a step in s16 lanes, as Fixed32 with one or two
// pieces. Per 16 codes: widen, shift by k, VPMADDWD per piece and lane parity, the int32 values
// combined (VPMAXSD / VPMINSD: floor is monotonic, so combining before the shift is the same),
// the high halves taken; kSelect takes both pieces' s16 results and blends them on x > t (the
// widened codes compared). On a Zen 1, 401408 codes (a standalone loop, the same ops): one
// piece 0.061 ms against the float form's 0.112, the max of two 0.105 against 0.150; the
// float form's two conversions per 8 codes run on one pipe there, VPMADDWD on another.
// kUnit1: piece 1 has slope 1 in code space (f1.m << f1.k == 2^16, e.g. leaky_relu with the
// input's qparams), so its high half is x + floor(f1.b / 2^16) exactly: one VPADDW, no
// multiplies, and the max / min / select of the two pieces taken on the s16 values (floor is
// monotonic). The same bytes as the general form, for ~half its VPMADDWDs.
template <bool kSigned, int kMode, bool kUnit1>
void pw_fixed_body(const uint8_t* x, uint8_t* y, int64_t n32, const PwAffine8& p) {
  using T = std::conditional_t<kSigned, int8_t, uint8_t>;
  const FixedPiece f1(p.f1), f2(p.f2);
  const __m128i k = _mm_cvtsi32_si128(p.f1.k);
  const __m256i t16 = _mm256_set1_epi16(static_cast<int16_t>(p.t));
  const __m256i c1 = _mm256_set1_epi16(static_cast<int16_t>(p.f1.b >> 16));  // floor
  const __m256i blo = _mm256_set1_epi8(static_cast<char>(p.lo));
  const __m256i bhi = _mm256_set1_epi8(static_cast<char>(p.hi));
  const bool clamp = p.lo > std::numeric_limits<T>::min() || p.hi < std::numeric_limits<T>::max();
  auto half = [&](const uint8_t* xs) {
    const __m256i xi = widen16<T>(reinterpret_cast<const T*>(xs));
    if constexpr (kUnit1) {
      const __m256i p1 = _mm256_add_epi16(xi, c1);
      if constexpr (kMode == PwAffine8::kOne) return p1;
      const __m256i u = _mm256_sll_epi16(xi, k);
      const __m256i p2 = high16(f2.even(u), f2.odd(u));
      if constexpr (kMode == PwAffine8::kMax) return _mm256_max_epi16(p1, p2);
      if constexpr (kMode == PwAffine8::kMin) return _mm256_min_epi16(p1, p2);
      return _mm256_blendv_epi8(p2, p1, _mm256_cmpgt_epi16(xi, t16));
    }
    const __m256i u = _mm256_sll_epi16(xi, k);
    if constexpr (kMode == PwAffine8::kMax) {
      return high16(_mm256_max_epi32(f1.even(u), f2.even(u)),
                    _mm256_max_epi32(f1.odd(u), f2.odd(u)));
    } else if constexpr (kMode == PwAffine8::kMin) {
      return high16(_mm256_min_epi32(f1.even(u), f2.even(u)),
                    _mm256_min_epi32(f1.odd(u), f2.odd(u)));
    } else if constexpr (kMode == PwAffine8::kSelect) {
      return _mm256_blendv_epi8(high16(f2.even(u), f2.odd(u)), high16(f1.even(u), f1.odd(u)),
                                _mm256_cmpgt_epi16(xi, t16));
    } else {
      return high16(f1.even(u), f1.odd(u));
    }
  };
  for (int64_t i = 0; i < n32; i += 32) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        pack16_clamp<T>(half(x + i), half(x + i + 16), clamp, blo, bhi));
  }
}

// n codes through body (which takes a multiple of 32): the tail in a padded copy, so every code
// gets the same bytes wherever it sits.
template <typename Body>
QPLUGIN_ALWAYS_INLINE void with_tail(const uint8_t* x, uint8_t* y, int64_t n, const PwAffine8& p,
                                     Body body) {
  const int64_t n32 = n & ~int64_t{31};
  body(x, y, n32, p);
  if (n32 < n) {
    alignas(32) uint8_t in[32] = {}, out[32];
    std::memcpy(in, x + n32, static_cast<size_t>(n - n32));
    body(in, out, 32, p);
    std::memcpy(y + n32, out, static_cast<size_t>(n - n32));
  }
}

template <bool kSigned, int kMode, bool kFClamp, bool kSubC = true>
void pw_affine8_impl(const uint8_t* x, uint8_t* y, int64_t n, const PwAffine8& p) {
  with_tail(x, y, n, p, &pw_affine8_body<kSigned, kMode, kFClamp, kSubC>);
}

template <bool kSigned, int kMode>
void pw_fixed_impl(const uint8_t* x, uint8_t* y, int64_t n, const PwAffine8& p) {
  if ((static_cast<int64_t>(p.f1.m) << p.f1.k) == 65536) {
    with_tail(x, y, n, p, &pw_fixed_body<kSigned, kMode, true>);
  } else {
    with_tail(x, y, n, p, &pw_fixed_body<kSigned, kMode, false>);
  }
}

// c = 0 skips the subtraction (4 of ~30 vector ops per 32 codes).
template <bool kSigned, int kMode>
constexpr void (*pw_fn(const PwAffine8& p))(const uint8_t*, uint8_t*, int64_t, const PwAffine8&) {
  if (p.c == 0) {
    return p.fclamp ? &pw_affine8_impl<kSigned, kMode, true, false>
                    : &pw_affine8_impl<kSigned, kMode, false, false>;
  }
  return p.fclamp ? &pw_affine8_impl<kSigned, kMode, true>
                  : &pw_affine8_impl<kSigned, kMode, false>;
}

template <bool kSigned>
void pw_affine8_typed(const uint8_t* x, uint8_t* y, int64_t n, const PwAffine8& p) {
  if (p.fixed) {
    switch (p.mode) {
      case PwAffine8::kSelect: return pw_fixed_impl<kSigned, PwAffine8::kSelect>(x, y, n, p);
      case PwAffine8::kMax: return pw_fixed_impl<kSigned, PwAffine8::kMax>(x, y, n, p);
      case PwAffine8::kMin: return pw_fixed_impl<kSigned, PwAffine8::kMin>(x, y, n, p);
      case PwAffine8::kKeep: break;  // bytes only: the float plan's form
      default: return pw_fixed_impl<kSigned, PwAffine8::kOne>(x, y, n, p);
    }
  }
  switch (p.mode) {
    case PwAffine8::kSelect: return pw_fn<kSigned, PwAffine8::kSelect>(p)(x, y, n, p);
    case PwAffine8::kMax: return pw_fn<kSigned, PwAffine8::kMax>(p)(x, y, n, p);
    case PwAffine8::kMin: return pw_fn<kSigned, PwAffine8::kMin>(p)(x, y, n, p);
    case PwAffine8::kKeep: return pw_affine8_impl<kSigned, PwAffine8::kKeep, false>(x, y, n, p);
    default: return pw_fn<kSigned, PwAffine8::kOne>(p)(x, y, n, p);
  }
}

void pw_affine8(const uint8_t* x, uint8_t* y, int64_t n, const PwAffine8& p) {
  if (p.is_signed) {
    pw_affine8_typed<true>(x, y, n, p);
  } else {
    pw_affine8_typed<false>(x, y, n, p);
  }
}

template <typename T>
constexpr TypedKernels<T> typed() {
  return {&affine_rows<T>, &affine_plane<T>, &affine_nchw_to_nhwc<T>, &clamp<T>, &fixed_plane<T>};
}

}  // namespace

const KernelTable& make_table() {
  static const KernelTable t{.isa = Isa::kAvx2,
                             .lut8 = &lut8,
                             .lut8_rows = &lut8_rows,
                             .lut8_nchw_to_nhwc = &lut8_nchw_to_nhwc,
                             .lut8_nhwc_to_nchw = &lut8_nhwc_to_nchw,
                             .copy8_nchw_to_nhwc = &copy8_nchw_to_nhwc,
                             .pw_affine8 = &pw_affine8,
                             .compute_over_lookup = true,
                             .u8 = typed<uint8_t>(),
                             .s8 = typed<int8_t>()};
  return t;
}

}  // namespace qplugin::kernels::QPLUGIN_ISA_NS
