// AVX-512 (F/BW/VL/DQ, the avx512vnni tier) add/mul kernels: 16 lanes of float per vector, four
// vectors per iteration. Same float operations as binary_impl.h in the same order; the clamp is a
// saturating pack after rounding (equal for integer bounds), and every lane is either provably
// exact or fixed exactly, so the bytes equal the scalar kernel's. Changes with: binary_impl.h, binary.h.
#define QPLUGIN_ISA_NS avx512vnni
#include <immintrin.h>

#include <type_traits>

#include "kernels/binary/binary_impl.h"

namespace qplugin {
namespace kernels {
namespace binary {
namespace avx512vnni {
namespace {

template <typename T>
inline __m512i widen(__m128i v) {
  return std::is_signed<T>::value ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v);
}

struct Consts {
  __m512 ra, rb, c, lo, hi, thr, absmask;
  __m512i za, zb, blo, bhi;
  explicit Consts(const Params& p)
      : ra(_mm512_set1_ps(p.ra)), rb(_mm512_set1_ps(p.rb)), c(_mm512_set1_ps(p.c)),
        lo(_mm512_set1_ps(p.lo)), hi(_mm512_set1_ps(p.hi)), thr(_mm512_set1_ps(p.thr)),
        absmask(_mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF))),
        za(_mm512_set1_epi32(p.za)), zb(_mm512_set1_epi32(p.zb)),
        blo(_mm512_set1_epi8(static_cast<char>(static_cast<int32_t>(p.lo)))),
        bhi(_mm512_set1_epi8(static_cast<char>(static_cast<int32_t>(p.hi)))) {}
};

// 16 lanes of v (binary.h), unclamped.
template <bool kMul>
inline __m512 value16(__m512i ai, __m512i bi, const Consts& k) {
  if (kMul) {
    const __m512i prod =
        _mm512_mullo_epi32(_mm512_sub_epi32(ai, k.za), _mm512_sub_epi32(bi, k.zb));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(prod), k.ra, k.c);
  }
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(ai), k.ra,
                         _mm512_fmadd_ps(_mm512_cvtepi32_ps(bi), k.rb, k.c));
}

// v - nearbyint(v): its magnitude tells how close v is to a tie (0.5).
inline __m512 frac_dist(__m512 v) {
  return _mm512_sub_ps(v, _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// Four vectors of rounded int32 codes -> 64 bytes in order, saturated to the 8-bit range (the
// clamp: rounding then saturating equals clamping then rounding for integer bounds), then the
// [lo, hi] byte clamp (ReLU).
template <typename T>
inline __m512i narrow64(__m512i q0, __m512i q1, __m512i q2, __m512i q3, const Consts& k) {
  const __m512i w01 = _mm512_packs_epi32(q0, q1), w23 = _mm512_packs_epi32(q2, q3);
  // Per 128-bit lane L: dwords [q0 L, q1 L, q2 L, q3 L] (4 codes each) -> transpose to order.
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  if (std::is_signed<T>::value) {
    const __m512i b = _mm512_permutexvar_epi32(idx, _mm512_packs_epi16(w01, w23));
    return _mm512_min_epi8(_mm512_max_epi8(b, k.blo), k.bhi);
  }
  const __m512i b = _mm512_permutexvar_epi32(idx, _mm512_packus_epi16(w01, w23));
  return _mm512_min_epu8(_mm512_max_epu8(b, k.blo), k.bhi);
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
template <typename T, bool kMul, bool kCheck, bool kClampF>
void run_impl(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n, const Params& p) {
  const Consts k(p);
  const __m512i abc = _mm512_set1_epi32(static_cast<int32_t>(a[0]));
  const __m512i bbc = _mm512_set1_epi32(static_cast<int32_t>(b[0]));
  auto load = [](const T* x, int64_t step, int64_t i, __m512i bc) {
    return step ? widen<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))) : bc;
  };
  auto clampf = [&](__m512 v) {
    return kClampF ? _mm512_min_ps(_mm512_max_ps(v, k.lo), k.hi) : v;
  };
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    // Load all inputs before storing (y may alias a or b).
    const __m512 v0 = clampf(value16<kMul>(load(a, as, i, abc), load(b, bs, i, bbc), k));
    const __m512 v1 = clampf(value16<kMul>(load(a, as, i + 16, abc), load(b, bs, i + 16, bbc), k));
    const __m512 v2 = clampf(value16<kMul>(load(a, as, i + 32, abc), load(b, bs, i + 32, bbc), k));
    const __m512 v3 = clampf(value16<kMul>(load(a, as, i + 48, abc), load(b, bs, i + 48, bbc), k));
    const __m512i q = narrow64<T>(_mm512_cvtps_epi32(v0), _mm512_cvtps_epi32(v1),
                                  _mm512_cvtps_epi32(v2), _mm512_cvtps_epi32(v3), k);
    if (kCheck) {
      const __m512 d0 = frac_dist(v0), d1 = frac_dist(v1), d2 = frac_dist(v2), d3 = frac_dist(v3);
      // VRANGEPS imm 0xB: the operand of larger magnitude, sign cleared.
      const __m512 dm = _mm512_range_ps(_mm512_range_ps(d0, d1, 0xB), _mm512_range_ps(d2, d3, 0xB),
                                        0xB);
      if (_mm512_cmp_ps_mask(dm, k.thr, _CMP_GT_OQ)) {
        // Fix the undecided lanes in a copy first: y may alias the inputs the fixup reads.
        alignas(64) T tmp[64];
        _mm512_store_si512(tmp, q);
        const uint64_t m =
            static_cast<uint64_t>(_mm512_cmp_ps_mask(_mm512_and_ps(d0, k.absmask), k.thr, _CMP_GT_OQ)) |
            (static_cast<uint64_t>(_mm512_cmp_ps_mask(_mm512_and_ps(d1, k.absmask), k.thr, _CMP_GT_OQ)) << 16) |
            (static_cast<uint64_t>(_mm512_cmp_ps_mask(_mm512_and_ps(d2, k.absmask), k.thr, _CMP_GT_OQ)) << 32) |
            (static_cast<uint64_t>(_mm512_cmp_ps_mask(_mm512_and_ps(d3, k.absmask), k.thr, _CMP_GT_OQ)) << 48);
        fixup<T, kMul>(a + i * as, as, b + i * bs, bs, tmp, 0, static_cast<uint32_t>(m), p);
        fixup<T, kMul>(a + i * as, as, b + i * bs, bs, tmp, 32, static_cast<uint32_t>(m >> 32), p);
        _mm512_storeu_si512(y + i, _mm512_load_si512(tmp));
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
    const __m512 v = clampf(value16<kMul>(ai, bi, k));
    const __m512i qi = _mm512_cvtps_epi32(v);
    const __m512i q = narrow64<T>(qi, qi, qi, qi, k);  // first 16 bytes: the 16 codes
    const __m128i q16 = _mm512_castsi512_si128(q);
    uint32_t m = 0;
    if (kCheck) {
      m = _mm512_cmp_ps_mask(_mm512_and_ps(frac_dist(v), k.absmask), k.thr, _CMP_GT_OQ) & lm;
    }
    if (m) {
      alignas(16) T tmp[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(tmp), q16);
      fixup<T, kMul>(a + i * as, as, b + i * bs, bs, tmp, 0, m, p);
      _mm_mask_storeu_epi8(y + i, lm, _mm_load_si128(reinterpret_cast<const __m128i*>(tmp)));
    } else {
      _mm_mask_storeu_epi8(y + i, lm, q16);
    }
  }
}

template <typename T, bool kMul>
void run(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n, const Params& p) {
  if (n <= 0) return;
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

}  // namespace avx512vnni
}  // namespace binary
}  // namespace kernels
}  // namespace qplugin
