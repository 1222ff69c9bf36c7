// AVX-512 (F/BW/VL/DQ, the avx512vnni tier) add/mul kernels: 16 lanes of float per vector, four
// vectors per iteration. Same float operations as binary_impl.h in the same order; the clamp is a
// saturating pack after rounding (equal for integer bounds), and every lane is either provably
// exact or fixed exactly, so the bytes equal the scalar kernel's.
// Changes with: binary_impl.h, binary.h.
#define QPLUGIN_ISA_NS avx512vnni
#include <immintrin.h>

#include <type_traits>

#include "kernels/binary/binary_impl.h"

namespace qplugin {
namespace kernels {
namespace binary {
namespace avx512vnni {
namespace {

#include "kernels/simd/widen.h"  // inside this ISA namespace

struct Consts {
  __m512 ra, rb, c, lo, hi, thr, absmask;
  __m512i za, zb, zadd, blo, bhi, ilo, ihi;
  __m512i za16, zb16;  // (z & 0xFFFF, 0) word pairs for value16's 16-bit product
  explicit Consts(const Params& p)
      : ra(_mm512_set1_ps(p.ra)), rb(_mm512_set1_ps(p.rb)), c(_mm512_set1_ps(p.c)),
        lo(_mm512_set1_ps(p.lo - static_cast<float>(p.zadd))),
        hi(_mm512_set1_ps(p.hi - static_cast<float>(p.zadd))), thr(_mm512_set1_ps(p.thr)),
        absmask(_mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF))),
        za(_mm512_set1_epi32(p.za)), zb(_mm512_set1_epi32(p.zb)), zadd(_mm512_set1_epi32(p.zadd)),
        blo(_mm512_set1_epi8(static_cast<char>(static_cast<int32_t>(p.lo)))),
        bhi(_mm512_set1_epi8(static_cast<char>(static_cast<int32_t>(p.hi)))),
        ilo(_mm512_set1_epi32(static_cast<int32_t>(p.lo))),
        ihi(_mm512_set1_epi32(static_cast<int32_t>(p.hi))),
        za16(_mm512_set1_epi32(p.za & 0xFFFF)), zb16(_mm512_set1_epi32(p.zb & 0xFFFF)) {}
};

// 16 lanes of v (binary.h), unclamped.
template <typename T, bool kMul>
inline __m512 value16(__m512i ai, __m512i bi, const Consts& k) {
  if (kMul && !std::is_signed<T>::value) {
    // uint8 codes: the differences fit int16. Word-wise subtraction of (z, 0) pairs leaves
    // (code - z, 0) in each dword (the high word of a zero-extended code is 0), so VPMADDWD's
    // lo*lo + hi*hi is the exact product (one uop; VPMULLD is two on many cores). Sign-extended
    // int8 codes have a nonzero high word: they take VPMULLD.
    const __m512i prod =
        _mm512_madd_epi16(_mm512_sub_epi16(ai, k.za16), _mm512_sub_epi16(bi, k.zb16));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(prod), k.ra, k.c);
  }
  if (kMul) {
    const __m512i prod =
        _mm512_mullo_epi32(_mm512_sub_epi32(ai, k.za), _mm512_sub_epi32(bi, k.zb));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(prod), k.ra, k.c);
  }
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(ai), k.ra,
                         _mm512_fmadd_ps(_mm512_cvtepi32_ps(bi), k.rb, k.c));
}

// v - nearbyint(v) (exact): its magnitude tells how close v is to a tie (0.5).
inline __m512 frac_dist(__m512 v) {
  return _mm512_reduce_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// Second level (binary.h) for 16 lanes: exact codes where the lo sum decides; *unres gets the
// lanes it cannot decide (|sum| <= err), left to fix().
template <bool kMul>
inline __m512i resolve16(__m512i ai, __m512i bi, __m512 v, const Params& p, __mmask16* unres) {
  const __m512 fl = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512i x = kMul ? _mm512_mullo_epi32(_mm512_sub_epi32(ai, _mm512_set1_epi32(p.za)),
                                              _mm512_sub_epi32(bi, _mm512_set1_epi32(p.zb)))
                         : ai;
  const __m512d ra = _mm512_set1_pd(p.ra), rb = _mm512_set1_pd(p.rb), c = _mm512_set1_pd(p.c);
  const __m512d ra_lo = _mm512_set1_pd(p.ra_lo), rb_lo = _mm512_set1_pd(p.rb_lo);
  const __m512d c_lo = _mm512_set1_pd(p.c_lo), err = _mm512_set1_pd(p.err);
  const __m512d half = _mm512_set1_pd(0.5);
  const __m512d absmask = _mm512_castsi512_pd(_mm512_set1_epi64(0x7FFFFFFFFFFFFFFFll));
  __m256i k[2];
  __mmask8 un[2];
  for (int h = 0; h < 2; ++h) {
    const __m256 flh = h ? _mm512_extractf32x8_ps(fl, 1) : _mm512_castps512_ps256(fl);
    const __m256i xh = h ? _mm512_extracti64x4_epi64(x, 1) : _mm512_castsi512_si256(x);
    const __m512d fd = _mm512_cvtps_pd(flh);
    const __m512d tie = _mm512_add_pd(fd, half);
    const __m512d xd = _mm512_cvtepi32_pd(xh);
    __m512d t, s;
    if (kMul) {
      t = _mm512_fmadd_pd(xd, ra, _mm512_sub_pd(c, tie));
      s = _mm512_fmadd_pd(xd, ra_lo, _mm512_add_pd(t, c_lo));
    } else {
      const __m256i bh = h ? _mm512_extracti64x4_epi64(bi, 1) : _mm512_castsi512_si256(bi);
      const __m512d bd = _mm512_cvtepi32_pd(bh);
      t = _mm512_fmadd_pd(xd, ra, _mm512_fmadd_pd(bd, rb, _mm512_sub_pd(c, tie)));
      s = _mm512_fmadd_pd(xd, ra_lo, _mm512_fmadd_pd(bd, rb_lo, _mm512_add_pd(t, c_lo)));
    }
    const __mmask8 up = _mm512_cmp_pd_mask(s, err, _CMP_GT_OQ);
    un[h] = _mm512_cmp_pd_mask(_mm512_and_pd(s, absmask), err, _CMP_LE_OQ);
    const __m256i kf = _mm512_cvtpd_epi32(fd);
    k[h] = _mm256_mask_add_epi32(kf, up, kf, _mm256_set1_epi32(1));
  }
  *unres = static_cast<__mmask16>(un[0] | (static_cast<unsigned>(un[1]) << 8));
  return _mm512_inserti64x4(_mm512_castsi256_si512(k[0]), k[1], 1);
}

// Four vectors of rounded int32 codes -> 64 bytes in order, saturated to the 8-bit range (the
// clamp: rounding then saturating equals clamping then rounding for integer bounds), then the
// [lo, hi] byte clamp (ReLU).
// kClampB: lo/hi narrower than the type's range (ReLU); else saturation is the whole clamp.
template <typename T, bool kClampB>
inline __m512i narrow64(__m512i q0, __m512i q1, __m512i q2, __m512i q3, const Consts& k) {
  const __m512i w01 = _mm512_packs_epi32(q0, q1), w23 = _mm512_packs_epi32(q2, q3);
  // Per 128-bit lane L: dwords [q0 L, q1 L, q2 L, q3 L] (4 codes each) -> transpose to order.
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  if (std::is_signed<T>::value) {
    const __m512i b = _mm512_permutexvar_epi32(idx, _mm512_packs_epi16(w01, w23));
    return kClampB ? _mm512_min_epi8(_mm512_max_epi8(b, k.blo), k.bhi) : b;
  }
  const __m512i b = _mm512_permutexvar_epi32(idx, _mm512_packus_epi16(w01, w23));
  return kClampB ? _mm512_min_epu8(_mm512_max_epu8(b, k.blo), k.bhi) : b;
}

template <typename T, bool kMul>
inline void fixup(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t i0, uint32_t m,
                  const Params& p) {
  while (m) {
    const int l = __builtin_ctz(m);
    m &= m - 1;
    const int64_t i = i0 + l;
    y[i] = static_cast<T>(p.fix(p.ctx, a[i * as], b[i * bs]));
  }
}

// kCheck: test for near-ties (the float math is not exact); kClampF: clamp in float before the
// conversion (|v| may exceed the int32 range).
template <typename T, bool kMul, bool kCheck, bool kClampF, bool kClampB>
void run_impl(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n, const Params& p) {
  const Consts k(p);
  const __m512i abc = _mm512_set1_epi32(static_cast<int32_t>(a[0]));
  const __m512i bbc = _mm512_set1_epi32(static_cast<int32_t>(b[0]));
  // Round half to even (MXCSR default), then zadd (binary.h; 0 whenever kCheck).
  auto rnd = [&](__m512 v) {
    const __m512i q = _mm512_cvtps_epi32(v);
    return kCheck ? q : _mm512_add_epi32(q, k.zadd);
  };
  auto clampf = [&](__m512 v) {
    return kClampF ? _mm512_min_ps(_mm512_max_ps(v, k.lo), k.hi) : v;
  };
  // Main loop loads without branching on the steps: a broadcast operand (step 0) is read from a
  // 64-byte block of its value, so every load is x + i * step + 16 * j.
  alignas(64) T bca[64], bcb[64];
  const T* la = a;
  const T* lb = b;
  if (!as) {
    for (int j = 0; j < 64; ++j) bca[j] = a[0];
    la = bca;
  }
  if (!bs) {
    for (int j = 0; j < 64; ++j) bcb[j] = b[0];
    lb = bcb;
  }
  int64_t undecided = 0;  // lanes the first level left (Params::note)
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    // Load all inputs before storing (y may alias a or b).
    __m512i ai[4], bi[4];
    __m512 v[4];
    const T* pa = la + i * as;
    const T* pb = lb + i * bs;
    for (int j = 0; j < 4; ++j) {
      ai[j] = widen<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pa + 16 * j)));
      bi[j] = widen<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + 16 * j)));
      v[j] = clampf(value16<T, kMul>(ai[j], bi[j], k));
    }
    __m512i qi[4];
    for (int j = 0; j < 4; ++j) qi[j] = rnd(v[j]);
    const __m512i q = narrow64<T, kClampB>(qi[0], qi[1], qi[2], qi[3], k);
    if (kCheck) {
      // v - nearbyint(v) in one VREDUCEPS (imm 0: zero fraction bits, round to nearest even;
      // exact, and 0 for |v| >= 2^23, which is integral).
      __m512 d[4];
      for (int j = 0; j < 4; ++j) d[j] = frac_dist(v[j]);
      // VRANGEPS imm 0xB: the operand of larger magnitude, sign cleared.
      const __m512 dm = _mm512_range_ps(_mm512_range_ps(d[0], d[1], 0xB),
                                        _mm512_range_ps(d[2], d[3], 0xB), 0xB);
      if (_mm512_cmp_ps_mask(dm, k.thr, _CMP_GT_OQ)) {
        // Undecided lanes: the second level in registers, then fix() for what it leaves (in a
        // copy: y may alias the inputs fix() reads).
        __m512i q2 = q;
        uint64_t left = 0;
        for (int j = 0; j < 4; ++j) {
          __mmask16 m = _mm512_cmp_ps_mask(_mm512_and_ps(d[j], k.absmask), k.thr, _CMP_GT_OQ);
          if (!m) continue;
          undecided += __builtin_popcount(m);
          if (p.two_level) {
            __mmask16 un = 0;
            __m512i codes = resolve16<kMul>(ai[j], bi[j], v[j], p, &un);
            codes = _mm512_min_epi32(_mm512_max_epi32(codes, k.ilo), k.ihi);
            const __m512i c64 = _mm512_broadcast_i32x4(_mm512_cvtepi32_epi8(codes));
            const __mmask64 bm = static_cast<__mmask64>(static_cast<uint64_t>(
                                     static_cast<uint16_t>(m & ~un)) << (16 * j));
            q2 = _mm512_mask_blend_epi8(bm, q2, c64);
            m &= un;
          }
          left |= static_cast<uint64_t>(m) << (16 * j);
        }
        if (left) {
          alignas(64) T tmp[64];
          _mm512_store_si512(tmp, q2);
          fixup<T, kMul>(a + i * as, as, b + i * bs, bs, tmp, 0, static_cast<uint32_t>(left), p);
          fixup<T, kMul>(a + i * as, as, b + i * bs, bs, tmp, 32,
                         static_cast<uint32_t>(left >> 32), p);
          q2 = _mm512_load_si512(tmp);
        }
        _mm512_storeu_si512(y + i, q2);
        continue;
      }
    }
    _mm512_storeu_si512(y + i, q);
  }
  for (; i < n; i += 16) {
    const int64_t left = n - i < 16 ? n - i : 16;
    const __mmask16 lm = static_cast<__mmask16>((1u << left) - 1u);
    const __m512i ai = as ? widen<T>(_mm_maskz_loadu_epi8(lm, a + i)) : abc;
    const __m512i bi = bs ? widen<T>(_mm_maskz_loadu_epi8(lm, b + i)) : bbc;
    const __m512 v = clampf(value16<T, kMul>(ai, bi, k));
    const __m512i qi = rnd(v);
    const __m512i q = narrow64<T, kClampB>(qi, qi, qi, qi, k);  // first 16 bytes: the 16 codes
    const __m128i q16 = _mm512_castsi512_si128(q);
    uint32_t m = 0;
    if (kCheck) {
      m = _mm512_cmp_ps_mask(_mm512_and_ps(frac_dist(v), k.absmask), k.thr, _CMP_GT_OQ) & lm;
    }
    if (m) {
      undecided += __builtin_popcount(m);
      alignas(16) T tmp[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(tmp), q16);
      fixup<T, kMul>(a + i * as, as, b + i * bs, bs, tmp, 0, m, p);
      _mm_mask_storeu_epi8(y + i, lm, _mm_load_si128(reinterpret_cast<const __m128i*>(tmp)));
    } else {
      _mm_mask_storeu_epi8(y + i, lm, q16);
    }
  }
  if (kCheck && undecided) p.note(p.ctx, undecided);
}

template <typename T, bool kMul, bool kCheck, bool kClampF>
void run_b(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n, const Params& p) {
  constexpr float kMin = std::is_signed<T>::value ? -128.0f : 0.0f;
  constexpr float kMax = std::is_signed<T>::value ? 127.0f : 255.0f;
  if (p.lo > kMin || p.hi < kMax) {
    run_impl<T, kMul, kCheck, kClampF, true>(a, as, b, bs, y, n, p);
  } else {
    run_impl<T, kMul, kCheck, kClampF, false>(a, as, b, bs, y, n, p);
  }
}

// The table form (Params::table): 4 dword gathers per 64 outputs; y may alias a or b exactly
// (each block is read before it is written).
template <typename T>
void run_table(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n,
               const uint8_t* table) {
  const __m512i abc = _mm512_set1_epi32(static_cast<uint8_t>(a[0]));
  const __m512i bbc = _mm512_set1_epi32(static_cast<uint8_t>(b[0]));
  auto bytes16 = [](const T* x) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
  };
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m128i q[4];
    for (int j = 0; j < 4; ++j) {
      const __m512i ai = as ? bytes16(a + i + 16 * j) : abc;
      const __m512i bi = bs ? bytes16(b + i + 16 * j) : bbc;
      const __m512i key = _mm512_or_si512(_mm512_slli_epi32(ai, 8), bi);
      q[j] = _mm512_cvtepi32_epi8(_mm512_i32gather_epi32(key, table, 1));  // low bytes
    }
    for (int j = 0; j < 4; ++j) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i + 16 * j), q[j]);
    }
  }
  generic::run_table(a + i * as, as, b + i * bs, bs, y + i, n - i, table);
}

// The rational form (Params::rat, binary.h) for 16 lanes of sign- or zero-extended codes, with
// binary.h's operations (the codes, their differences and P are exact in float).
struct RatConsts {
  __m512 za, zb, c1, c1b, c0, h, da, db, dc, lo, hi, one;
  __m512i zpar;
  RatConsts(const Params& p, const Rational& r)
      : za(_mm512_set1_ps(static_cast<float>(p.za))), zb(_mm512_set1_ps(static_cast<float>(p.zb))),
        c1(_mm512_set1_ps(r.c1)), c1b(_mm512_set1_ps(r.c1b)), c0(_mm512_set1_ps(r.c0)),
        h(_mm512_set1_ps(r.h)), da(_mm512_set1_ps(r.da)), db(_mm512_set1_ps(r.db)),
        dc(_mm512_set1_ps(r.dc)), lo(_mm512_set1_ps(r.lo)), hi(_mm512_set1_ps(r.hi)),
        one(_mm512_set1_ps(1.0f)), zpar(_mm512_set1_epi32(r.zpar)) {}
};

// Lanes where q - zo is odd (binary.h): the low bit of q + (zo & 1).
inline __mmask16 odd16(__m512 q, const RatConsts& k) {
  return _mm512_test_epi32_mask(_mm512_add_epi32(_mm512_cvtps_epi32(q), k.zpar),
                                _mm512_set1_epi32(1));
}

// kMode: Rational::mode (+1, -1, 0: mul; 2: add).
template <int kMode>
inline __m128i rational16(__m512i ai, __m512i bi, const RatConsts& k) {
  const __m512 fa = _mm512_cvtepi32_ps(ai), fb = _mm512_cvtepi32_ps(bi);
  __m512 P, f;
  if (kMode == 2) {
    f = _mm512_fmadd_ps(fa, k.c1, _mm512_fmadd_ps(fb, k.c1b, k.c0));
  } else {
    P = _mm512_mul_ps(_mm512_sub_ps(fa, k.za), _mm512_sub_ps(fb, k.zb));
    f = _mm512_fmadd_ps(P, k.c1, k.c0);
  }
  __m512 q = _mm512_roundscale_ps(f, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __mmask16 half = _mm512_cmp_ps_mask(_mm512_sub_ps(f, q), k.h, _CMP_LT_OQ);
  const __m512 zero = _mm512_setzero_ps();
  __mmask16 below;
  if (kMode == 2) {
    const __m512 e = _mm512_fmadd_ps(fa, k.da, _mm512_fmadd_ps(fb, k.db, k.dc));
    below = _mm512_mask_cmp_ps_mask(half, e, zero, _CMP_LT_OQ) |
            (_mm512_mask_cmp_ps_mask(half, e, zero, _CMP_EQ_OQ) & odd16(q, k));
  } else if (kMode > 0) {
    below = _mm512_mask_cmp_ps_mask(half, P, zero, _CMP_LT_OQ);
  } else if (kMode < 0) {
    below = _mm512_mask_cmp_ps_mask(half, P, zero, _CMP_GT_OQ);
  } else {
    below = half & odd16(q, k);
  }
  q = _mm512_mask_sub_ps(q, below, q, k.one);
  q = _mm512_min_ps(_mm512_max_ps(q, k.lo), k.hi);
  return _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(q));
}

// Every output by the rational form; y may alias a or b exactly (each block is read first).
template <typename T, int kMode>
void run_rational(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n,
                  const Params& p) {
  const RatConsts k(p, *p.rat);
  const __m512i abc = _mm512_set1_epi32(static_cast<int32_t>(a[0]));
  const __m512i bbc = _mm512_set1_epi32(static_cast<int32_t>(b[0]));
  auto load16 = [](const T* x) {
    return widen<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
  };
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m128i q[4];
    for (int j = 0; j < 4; ++j) {
      q[j] = rational16<kMode>(as ? load16(a + i + 16 * j) : abc,
                               bs ? load16(b + i + 16 * j) : bbc, k);
    }
    for (int j = 0; j < 4; ++j) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i + 16 * j), q[j]);
    }
  }
  generic::run_table(a + i * as, as, b + i * bs, bs, y + i, n - i, p.table);
}

// The scaled form (binary.h, Rational::scaled; mul) for 16 lanes at a time: P = (a - za)(b - zb)
// exact in float (|P| <= 2^20), times c1s, rounded to nearest (VCVTPS2DQ), + zo, clamped to
// [lo, hi] as int32, narrowed (VPMOVDB after the clamp). Same operations as
// rational_scaled_code; 10 vector operations per 16 lanes against rational16's 15.
template <typename T>
void run_rational_scaled(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n,
                         const Params& p) {
  const Rational& r = *p.rat;
  const __m512 za = _mm512_set1_ps(static_cast<float>(p.za));
  const __m512 zb = _mm512_set1_ps(static_cast<float>(p.zb));
  const __m512 c1s = _mm512_set1_ps(r.c1s);
  const __m512i zo = _mm512_set1_epi32(r.zo);
  const __m512i lo = _mm512_set1_epi32(static_cast<int32_t>(r.lo));
  const __m512i hi = _mm512_set1_epi32(static_cast<int32_t>(r.hi));
  const __m512i abc = _mm512_set1_epi32(static_cast<int32_t>(a[0]));
  const __m512i bbc = _mm512_set1_epi32(static_cast<int32_t>(b[0]));
  auto load16 = [](const T* x) {
    return widen<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
  };
  auto part = [&](__m512i ai, __m512i bi) {
    const __m512 P = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(ai), za),
                                   _mm512_sub_ps(_mm512_cvtepi32_ps(bi), zb));
    const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(P, c1s)), zo);
    return _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi));
  };
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m128i q[4];
    for (int j = 0; j < 4; ++j) {
      q[j] = part(as ? load16(a + i + 16 * j) : abc, bs ? load16(b + i + 16 * j) : bbc);
    }
    for (int j = 0; j < 4; ++j) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i + 16 * j), q[j]);
    }
  }
  generic::run_table(a + i * as, as, b + i * bs, bs, y + i, n - i, p.table);
}

template <typename T, bool kMul>
void run(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n, const Params& p) {
  if (n <= 0) return;
  if (p.rat != nullptr && p.table != nullptr) {
    if (kMul && p.rat->scaled != 0) {
      run_rational_scaled(a, as, b, bs, y, n, p);
      return;
    }
    switch (p.rat->mode) {
      case 2: run_rational<T, 2>(a, as, b, bs, y, n, p); break;
      case 1: run_rational<T, 1>(a, as, b, bs, y, n, p); break;
      case -1: run_rational<T, -1>(a, as, b, bs, y, n, p); break;
      default: run_rational<T, 0>(a, as, b, bs, y, n, p); break;
    }
    return;
  }
  if (p.table != nullptr) {
    run_table(a, as, b, bs, y, n, p.table);
    return;
  }
  if (kMul && !std::is_signed<T>::value &&
      !(p.za >= 255 - 32767 && p.za <= 32768 && p.zb >= 255 - 32767 && p.zb <= 32768)) {
    // value16's 16-bit product needs code - z in int16: zero points far outside the dtype's
    // range (legal for quantized tensors, never produced by an observer) take the reference.
    generic::run<T, kMul>(a, as, b, bs, y, n, p);
    return;
  }
  const bool check = p.thr < 0.5f;
  if (p.clamp_float) {
    if (check) {
      run_b<T, kMul, true, true>(a, as, b, bs, y, n, p);
    } else {
      run_b<T, kMul, false, true>(a, as, b, bs, y, n, p);
    }
  } else if (check) {
    run_b<T, kMul, true, false>(a, as, b, bs, y, n, p);
  } else {
    run_b<T, kMul, false, false>(a, as, b, bs, y, n, p);
  }
}

}  // namespace

const Table& make_table() {
  static const Table t = {&run<uint8_t, false>, &run<uint8_t, true>, &run<int8_t, false>,
                          &run<int8_t, true>};
  return t;
}

}  // namespace avx512vnni
}  // namespace binary
}  // namespace kernels
}  // namespace qplugin
