// AVX2 + FMA add/mul kernels: 8 lanes of float per vector, four vectors (32 elements) per
// iteration. Same float operations as binary_impl.h in the same order; clamp by saturating packs
// after rounding (equal for integer bounds); lanes are provably exact or fixed exactly.
// Changes with: binary_impl.h, binary.h.
#define QPLUGIN_ISA_NS avx2
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/binary/binary_impl.h"

namespace qplugin {
namespace kernels {
namespace binary {
namespace avx2 {
namespace {

#include "kernels/simd/widen.h"  // inside this ISA namespace

struct Consts {
  __m256 ra, rb, c, lo, hi, thr, absmask;
  __m256i za, zb, zadd, blo, bhi;
  explicit Consts(const Params& p)
      : ra(_mm256_set1_ps(p.ra)), rb(_mm256_set1_ps(p.rb)), c(_mm256_set1_ps(p.c)),
        lo(_mm256_set1_ps(p.lo - static_cast<float>(p.zadd))),
        hi(_mm256_set1_ps(p.hi - static_cast<float>(p.zadd))), thr(_mm256_set1_ps(p.thr)),
        absmask(_mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF))),
        za(_mm256_set1_epi32(p.za)), zb(_mm256_set1_epi32(p.zb)), zadd(_mm256_set1_epi32(p.zadd)),
        blo(_mm256_set1_epi8(static_cast<char>(static_cast<int32_t>(p.lo)))),
        bhi(_mm256_set1_epi8(static_cast<char>(static_cast<int32_t>(p.hi)))) {}
};

template <bool kMul>
inline __m256 value8(__m256i ai, __m256i bi, const Consts& k) {
  if (kMul) {
    const __m256i prod =
        _mm256_mullo_epi32(_mm256_sub_epi32(ai, k.za), _mm256_sub_epi32(bi, k.zb));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(prod), k.ra, k.c);
  }
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(ai), k.ra,
                         _mm256_fmadd_ps(_mm256_cvtepi32_ps(bi), k.rb, k.c));
}

// |v - nearbyint(v)|
inline __m256 frac_dist(__m256 v, const Consts& k) {
  return _mm256_and_ps(
      _mm256_sub_ps(v, _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)),
      k.absmask);
}

// Four int32 x8 vectors to 32 bytes in order, saturated, then the [lo, hi] byte clamp.
template <typename T>
inline __m256i narrow32(__m256i q0, __m256i q1, __m256i q2, __m256i q3, const Consts& k) {
  const __m256i w01 = _mm256_packs_epi32(q0, q1), w23 = _mm256_packs_epi32(q2, q3);
  const __m256i idx = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  if (std::is_signed<T>::value) {
    const __m256i b = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23), idx);
    return _mm256_min_epi8(_mm256_max_epi8(b, k.blo), k.bhi);
  }
  const __m256i b = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(w01, w23), idx);
  return _mm256_min_epu8(_mm256_max_epu8(b, k.blo), k.bhi);
}

// The table's results (Params::table) for 32 code pairs (4 x 8 int32 lanes, sign- or
// zero-extended codes), as 32 bytes in order: 4 dword gathers.
inline __m256i lookup32(const __m256i* ai, const __m256i* bi, const uint8_t* table) {
  const int* base = reinterpret_cast<const int*>(table);
  const __m256i ff = _mm256_set1_epi32(0xFF);
  __m256i q[4];
  for (int j = 0; j < 4; ++j) {
    const __m256i key = _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(ai[j], ff), 8),
                                        _mm256_and_si256(bi[j], ff));
    q[j] = _mm256_and_si256(_mm256_i32gather_epi32(base, key, 1), ff);
  }
  const __m256i w = _mm256_packus_epi16(_mm256_packus_epi32(q[0], q[1]),
                                        _mm256_packus_epi32(q[2], q[3]));
  return _mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

template <typename T, bool kMul>
inline void fixup(const T* a, int64_t as, const T* b, int64_t bs, T* y, uint32_t m,
                  const Params& p) {
  while (m) {
    const int l = __builtin_ctz(m);
    m &= m - 1;
    y[l] = static_cast<T>(p.fix(p.ctx, a[l * as], b[l * bs]));
  }
}

template <typename T, bool kMul, bool kCheck, bool kClampF>
inline __m256i block32(const __m256i* ai, const __m256i* bi, const Consts& k, uint32_t* amb) {
  __m256 v[4];
  for (int j = 0; j < 4; ++j) {
    v[j] = value8<kMul>(ai[j], bi[j], k);
    if (kClampF) v[j] = _mm256_min_ps(_mm256_max_ps(v[j], k.lo), k.hi);
  }
  // Round half to even (MXCSR default), then zadd (binary.h; 0 whenever kCheck).
  auto rnd = [&](__m256 x) {
    const __m256i q = _mm256_cvtps_epi32(x);
    return kCheck ? q : _mm256_add_epi32(q, k.zadd);
  };
  const __m256i q = narrow32<T>(rnd(v[0]), rnd(v[1]), rnd(v[2]), rnd(v[3]), k);
  if (kCheck) {
    const __m256 d0 = frac_dist(v[0], k), d1 = frac_dist(v[1], k);
    const __m256 d2 = frac_dist(v[2], k), d3 = frac_dist(v[3], k);
    const __m256 dm = _mm256_max_ps(_mm256_max_ps(d0, d1), _mm256_max_ps(d2, d3));
    *amb = 0;
    if (_mm256_movemask_ps(_mm256_cmp_ps(dm, k.thr, _CMP_GT_OQ))) {
      auto mask8 = [&](__m256 d) {
        return static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(d, k.thr, _CMP_GT_OQ)));
      };
      *amb = mask8(d0) | (mask8(d1) << 8) | (mask8(d2) << 16) | (mask8(d3) << 24);
    }
  }
  return q;
}

template <typename T, bool kMul, bool kCheck, bool kClampF>
void run_impl(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n, const Params& p) {
  const Consts k(p);
  const __m256i abc = _mm256_set1_epi32(static_cast<int32_t>(a[0]));
  const __m256i bbc = _mm256_set1_epi32(static_cast<int32_t>(b[0]));
  int64_t undecided = 0;  // lanes the fast path left (Params::note)
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i ai[4], bi[4];
    for (int j = 0; j < 4; ++j) {
      ai[j] = as ? widen8<T>(a + i + 8 * j) : abc;
      bi[j] = bs ? widen8<T>(b + i + 8 * j) : bbc;
    }
    uint32_t m = 0;
    // Params::table: every output looked up (then m stays 0).
    const __m256i q = kCheck && p.table != nullptr ? lookup32(ai, bi, p.table)
                                             : block32<T, kMul, kCheck, kClampF>(ai, bi, k, &m);
    if (kCheck && m) {
      undecided += __builtin_popcount(m);
      // Fix the undecided lanes in a copy first: y may alias the inputs the fixup reads.
      alignas(32) T tmp[32];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), q);
      fixup<T, kMul>(a + i * as, as, b + i * bs, bs, tmp, m, p);
      std::memcpy(y + i, tmp, 32);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), q);
    }
  }
  if (i < n) {
    // Tail: copy the inputs into padded buffers, run one more 32-element block on them.
    alignas(32) T ta[32] = {}, tb[32] = {}, ty[32];
    const int64_t left = n - i;
    for (int64_t j = 0; j < left; ++j) {
      ta[j] = a[(i + j) * as];
      tb[j] = b[(i + j) * bs];
    }
    __m256i ai[4], bi[4];
    for (int j = 0; j < 4; ++j) {
      ai[j] = widen8<T>(ta + 8 * j);
      bi[j] = widen8<T>(tb + 8 * j);
    }
    uint32_t m = 0;
    const __m256i q = kCheck && p.table != nullptr ? lookup32(ai, bi, p.table)
                                             : block32<T, kMul, kCheck, kClampF>(ai, bi, k, &m);
    _mm256_store_si256(reinterpret_cast<__m256i*>(ty), q);
    m &= (1u << left) - 1u;  // left < 32
    if (kCheck && m) {
      undecided += __builtin_popcount(m);
      fixup<T, kMul>(ta, 1, tb, 1, ty, m, p);
    }
    std::memcpy(y + i, ty, static_cast<size_t>(left));
  }
  if (kCheck && undecided) p.note(p.ctx, undecided);
}

// The rational form (Params::rat, binary.h) for 8 lanes of sign- or zero-extended codes, with
// binary.h's operations (the codes, their differences and P are exact in float): the codes as
// int32, clamped.
struct RatConsts {
  __m256 za, zb, c1, c1b, c0, h, da, db, dc, lo, hi, one, zpar;
  __m256i za16, zb16;  // (z & 0xFFFF, 0) word pairs (uint8 codes: P by VPMADDWD)
  RatConsts(const Params& p, const Rational& r)
      : za(_mm256_set1_ps(static_cast<float>(p.za))), zb(_mm256_set1_ps(static_cast<float>(p.zb))),
        c1(_mm256_set1_ps(r.c1)), c1b(_mm256_set1_ps(r.c1b)), c0(_mm256_set1_ps(r.c0)),
        h(_mm256_set1_ps(r.h)), da(_mm256_set1_ps(r.da)), db(_mm256_set1_ps(r.db)),
        dc(_mm256_set1_ps(r.dc)), lo(_mm256_set1_ps(r.lo)), hi(_mm256_set1_ps(r.hi)),
        one(_mm256_set1_ps(1.0f)), zpar(_mm256_set1_ps(static_cast<float>(r.zpar))),
        za16(_mm256_set1_epi32(p.za & 0xFFFF)), zb16(_mm256_set1_epi32(p.zb & 0xFFFF)) {}
};

// kMode: Rational::mode (+1, -1, 0: mul; 2: add). kClamp: [lo, hi] narrower than the type's
// range (else the saturating packs clamp).
// kU8: zero-extended codes, whose differences to zero points within +-4096 (binary_plan.cpp)
// fit the low word: P by one VPMADDWD of (code - z, 0) word pairs, exact like the float product.
template <int kMode, bool kClamp, bool kU8>
inline __m256i rational8(__m256i ai, __m256i bi, const RatConsts& k) {
  __m256 fa, fb, P, f;
  if (kMode == 2) {
    fa = _mm256_cvtepi32_ps(ai);
    fb = _mm256_cvtepi32_ps(bi);
    f = _mm256_fmadd_ps(fa, k.c1, _mm256_fmadd_ps(fb, k.c1b, k.c0));
  } else {
    if (kU8) {
      P = _mm256_cvtepi32_ps(
          _mm256_madd_epi16(_mm256_sub_epi16(ai, k.za16), _mm256_sub_epi16(bi, k.zb16)));
    } else {
      P = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(ai), k.za),
                        _mm256_sub_ps(_mm256_cvtepi32_ps(bi), k.zb));
    }
    f = _mm256_fmadd_ps(P, k.c1, k.c0);
  }
  __m256 q = _mm256_floor_ps(f);
  const __m256 half = _mm256_cmp_ps(_mm256_sub_ps(f, q), k.h, _CMP_LT_OQ);
  const __m256 zero = _mm256_setzero_ps();
  auto odd = [&] {  // q - zo is odd: (q + (zo & 1)) / 2 is not an integer
    const __m256 hq = _mm256_mul_ps(_mm256_add_ps(q, k.zpar), _mm256_set1_ps(0.5f));
    return _mm256_cmp_ps(hq, _mm256_floor_ps(hq), _CMP_NEQ_OQ);
  };
  __m256 below;
  if (kMode == 2) {
    const __m256 e = _mm256_fmadd_ps(fa, k.da, _mm256_fmadd_ps(fb, k.db, k.dc));
    below = _mm256_or_ps(_mm256_cmp_ps(e, zero, _CMP_LT_OQ),
                         _mm256_and_ps(_mm256_cmp_ps(e, zero, _CMP_EQ_OQ), odd()));
  } else if (kMode > 0) {
    below = _mm256_cmp_ps(P, zero, _CMP_LT_OQ);
  } else if (kMode < 0) {
    below = _mm256_cmp_ps(P, zero, _CMP_GT_OQ);
  } else {
    below = odd();
  }
  const __m256 down = _mm256_and_ps(half, below);
  if (kClamp) {
    q = _mm256_sub_ps(q, _mm256_and_ps(down, k.one));
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(q, k.lo), k.hi));
  }
  // Lanes to lower are -1 in the mask: adding it subtracts one (the packs then clamp).
  return _mm256_add_epi32(_mm256_cvtps_epi32(q), _mm256_castps_si256(down));
}

// Every output by the rational form; y may alias a or b exactly (each block is read first).
template <typename T, int kMode, bool kClamp>
void run_rational(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n,
                  const Params& p) {
  const RatConsts k(p, *p.rat);
  const __m256i abc = _mm256_set1_epi32(static_cast<int32_t>(a[0]));
  const __m256i bbc = _mm256_set1_epi32(static_cast<int32_t>(b[0]));
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i q[4];
    for (int j = 0; j < 4; ++j) {
      q[j] = rational8<kMode, kClamp, !std::is_signed<T>::value>(as ? widen8<T>(a + i + 8 * j) : abc,
                              bs ? widen8<T>(b + i + 8 * j) : bbc, k);
    }
    // In [lo, hi]: the saturating packs keep every value; then the dword order restored.
    const __m256i w01 = _mm256_packs_epi32(q[0], q[1]), w23 = _mm256_packs_epi32(q[2], q[3]);
    const __m256i w = std::is_signed<T>::value ? _mm256_packs_epi16(w01, w23)
                                               : _mm256_packus_epi16(w01, w23);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
  generic::run_table(a + i * as, as, b + i * bs, bs, y + i, n - i, p.table);
}

// The scaled form (binary.h, Rational::scaled; mul) for 32 codes at a time: P in 16-bit halves
// (VPMULLW / VPMULHW of the codes minus their zero points: |.| <= 4351, binary_plan.cpp, so
// int16), interleaved into int32 per 128-bit lane (elements 0-3 and 8-11, 4-7 and 12-15 of each
// 16), which VPACKSSDW puts back in order. The int16 results then get zo with saturation and
// the byte packs saturate: clamp(zo + r) to the type's range either way (a saturated r is beyond
// 32767 in magnitude, |zo| <= 4096). Same operations as rational_scaled_code.
template <typename T, bool kClamp>
void run_rational_scaled(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n,
                        const Params& p) {
  constexpr bool kS = std::is_signed<T>::value;
  const Rational& r = *p.rat;
  const __m256i za = _mm256_set1_epi16(static_cast<int16_t>(p.za));
  const __m256i zb = _mm256_set1_epi16(static_cast<int16_t>(p.zb));
  const __m256i zo = _mm256_set1_epi16(static_cast<int16_t>(r.zo));
  const __m256 c1s = _mm256_set1_ps(r.c1s);
  const __m256i blo = _mm256_set1_epi8(static_cast<char>(static_cast<int>(p.lo)));
  const __m256i bhi = _mm256_set1_epi8(static_cast<char>(static_cast<int>(p.hi)));
  auto w16 = [](const T* q) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    return kS ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
  };
  const __m256i abc = _mm256_set1_epi16(static_cast<int16_t>(static_cast<int32_t>(a[0]) - p.za));
  const __m256i bbc = _mm256_set1_epi16(static_cast<int16_t>(static_cast<int32_t>(b[0]) - p.zb));
  auto part = [&](__m256i p32) {  // 8 products P -> nearbyint(float(P) * c1s)
    return _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(p32), c1s));
  };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i w[2];
    for (int j = 0; j < 2; ++j) {
      const __m256i da = as ? _mm256_sub_epi16(w16(a + i + 16 * j), za) : abc;
      const __m256i db = bs ? _mm256_sub_epi16(w16(b + i + 16 * j), zb) : bbc;
      const __m256i lo = _mm256_mullo_epi16(da, db), hi = _mm256_mulhi_epi16(da, db);
      w[j] = _mm256_adds_epi16(_mm256_packs_epi32(part(_mm256_unpacklo_epi16(lo, hi)),
                                                  part(_mm256_unpackhi_epi16(lo, hi))),
                               zo);
    }
    __m256i v = kS ? _mm256_packs_epi16(w[0], w[1]) : _mm256_packus_epi16(w[0], w[1]);
    v = _mm256_permute4x64_epi64(v, 0xD8);
    if (kClamp) {
      v = kS ? _mm256_min_epi8(_mm256_max_epi8(v, blo), bhi)
             : _mm256_min_epu8(_mm256_max_epu8(v, blo), bhi);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), v);
  }
  generic::run_table(a + i * as, as, b + i * bs, bs, y + i, n - i, p.table);
}

template <typename T, bool kMul>
void run(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n, const Params& p) {
  if (n <= 0) return;
  if (p.rat != nullptr && p.table != nullptr) {
    const bool clamp = p.lo > (std::is_signed<T>::value ? -128.0f : 0.0f) ||
                       p.hi < (std::is_signed<T>::value ? 127.0f : 255.0f);
    if (kMul && p.rat->scaled != 0) {
      if (clamp) {
        run_rational_scaled<T, true>(a, as, b, bs, y, n, p);
      } else {
        run_rational_scaled<T, false>(a, as, b, bs, y, n, p);
      }
      return;
    }
    auto go = [&](auto mode) {
      if (clamp) {
        run_rational<T, decltype(mode)::value, true>(a, as, b, bs, y, n, p);
      } else {
        run_rational<T, decltype(mode)::value, false>(a, as, b, bs, y, n, p);
      }
    };
    switch (p.rat->mode) {
      case 2: go(std::integral_constant<int, 2>()); break;
      case 1: go(std::integral_constant<int, 1>()); break;
      case -1: go(std::integral_constant<int, -1>()); break;
      default: go(std::integral_constant<int, 0>()); break;
    }
    return;
  }
  const bool check = p.thr < 0.5f;
  if (p.clamp_float) {
    if (check) {
      run_impl<T, kMul, true, true>(a, as, b, bs, y, n, p);
    } else {
      run_impl<T, kMul, false, true>(a, as, b, bs, y, n, p);
    }
  } else if (check) {
    run_impl<T, kMul, true, false>(a, as, b, bs, y, n, p);
  } else {
    run_impl<T, kMul, false, false>(a, as, b, bs, y, n, p);
  }
}

}  // namespace

const Table& make_table() {
  static const Table t = {&run<uint8_t, false>, &run<uint8_t, true>, &run<int8_t, false>,
                          &run<int8_t, true>};
  return t;
}

}  // namespace avx2
}  // namespace binary
}  // namespace kernels
}  // namespace qplugin
