// avx512vnni embedding-bag kernels: the loop of embedding_generic_impl.h with row operations 16
// floats wide (vpmovzxbd + vcvtdq2ps + vfmadd), masked tails for 8-bit rows; the same IEEE
// operations per element as the scalar kernels, so the bytes are equal. 4-bit rows: 16 bytes ->
// 32 nibbles in order (low nibble first) by mask, shift and vpunpck{l,h}bw.
// Changes with: embedding_generic_impl.h, embedding.h.
#define QPLUGIN_ISA_NS avx512vnni
#include <immintrin.h>

#include "kernels/embedding/embedding_generic_impl.h"

namespace qplugin {
namespace kernels {
namespace avx512vnni {
namespace {

using embedding_generic::PortableOps;

inline __m512 cvt16(__m128i bytes) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes)); }

inline __m512 load16(const uint8_t* q, __mmask16 m) {
  return _mm512_cvtepi32_ps(_mm512_maskz_cvtepu8_epi32(m, _mm_maskz_loadu_epi8(m, q)));
}

// 32 codes of a 4-bit row from 16 bytes at p, in element order: (first 16, last 16).
inline void nibbles32(const uint8_t* p, __m128i* c0, __m128i* c1) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(15);
  const __m128i lo = _mm_and_si128(v, m);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
  *c0 = _mm_unpacklo_epi8(lo, hi);
  *c1 = _mm_unpackhi_epi8(lo, hi);
}

struct Ops {
  static void acc8(float* o, const uint8_t* q, int64_t n, float a) {
    const __m512 av = _mm512_set1_ps(a);
    int64_t d = 0;
    for (; d + 32 <= n; d += 32) {
      const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + d));
      const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + d + 16));
      _mm512_storeu_ps(o + d, _mm512_fmadd_ps(av, cvt16(v0), _mm512_loadu_ps(o + d)));
      _mm512_storeu_ps(o + d + 16, _mm512_fmadd_ps(av, cvt16(v1), _mm512_loadu_ps(o + d + 16)));
    }
    for (; d < n; d += 16) {
      const __mmask16 m = n - d >= 16 ? static_cast<__mmask16>(0xffff)
                                      : static_cast<__mmask16>((1u << (n - d)) - 1);
      _mm512_mask_storeu_ps(o + d, m,
                            _mm512_fmadd_ps(av, load16(q + d, m), _mm512_maskz_loadu_ps(m, o + d)));
    }
  }
  static void set8(float* o, const uint8_t* q, int64_t n, float s, float b) {
    const __m512 sv = _mm512_set1_ps(s), bv = _mm512_set1_ps(b);
    for (int64_t d = 0; d < n; d += 16) {
      const __mmask16 m = n - d >= 16 ? static_cast<__mmask16>(0xffff)
                                      : static_cast<__mmask16>((1u << (n - d)) - 1);
      _mm512_mask_storeu_ps(o + d, m, _mm512_fmadd_ps(sv, load16(q + d, m), bv));
    }
  }
  static void max8(float* o, const uint8_t* q, int64_t n, float s, float b) {
    const __m512 sv = _mm512_set1_ps(s), bv = _mm512_set1_ps(b);
    for (int64_t d = 0; d < n; d += 16) {
      const __mmask16 m = n - d >= 16 ? static_cast<__mmask16>(0xffff)
                                      : static_cast<__mmask16>((1u << (n - d)) - 1);
      // max_ps(x, y) = x > y ? x : y, the portable order.
      _mm512_mask_storeu_ps(o + d, m,
                            _mm512_max_ps(_mm512_fmadd_ps(sv, load16(q + d, m), bv),
                                          _mm512_maskz_loadu_ps(m, o + d)));
    }
  }
  static void acc4(float* o, const uint8_t* p, int64_t n, float a) {
    const __m512 av = _mm512_set1_ps(a);
    int64_t d = 0;
    for (; d + 32 <= n; d += 32) {
      __m128i c0, c1;
      nibbles32(p + d / 2, &c0, &c1);
      _mm512_storeu_ps(o + d, _mm512_fmadd_ps(av, cvt16(c0), _mm512_loadu_ps(o + d)));
      _mm512_storeu_ps(o + d + 16, _mm512_fmadd_ps(av, cvt16(c1), _mm512_loadu_ps(o + d + 16)));
    }
    PortableOps::acc4(o + d, p + d / 2, n - d, a);
  }
  static void set4(float* o, const uint8_t* p, int64_t n, float s, float b) {
    const __m512 sv = _mm512_set1_ps(s), bv = _mm512_set1_ps(b);
    int64_t d = 0;
    for (; d + 32 <= n; d += 32) {
      __m128i c0, c1;
      nibbles32(p + d / 2, &c0, &c1);
      _mm512_storeu_ps(o + d, _mm512_fmadd_ps(sv, cvt16(c0), bv));
      _mm512_storeu_ps(o + d + 16, _mm512_fmadd_ps(sv, cvt16(c1), bv));
    }
    PortableOps::set4(o + d, p + d / 2, n - d, s, b);
  }
  static void max4(float* o, const uint8_t* p, int64_t n, float s, float b) {
    const __m512 sv = _mm512_set1_ps(s), bv = _mm512_set1_ps(b);
    int64_t d = 0;
    for (; d + 32 <= n; d += 32) {
      __m128i c0, c1;
      nibbles32(p + d / 2, &c0, &c1);
      _mm512_storeu_ps(o + d, _mm512_max_ps(_mm512_fmadd_ps(sv, cvt16(c0), bv),
                                            _mm512_loadu_ps(o + d)));
      _mm512_storeu_ps(o + d + 16, _mm512_max_ps(_mm512_fmadd_ps(sv, cvt16(c1), bv),
                                                 _mm512_loadu_ps(o + d + 16)));
    }
    PortableOps::max4(o + d, p + d / 2, n - d, s, b);
  }
};

}  // namespace

const EmbeddingKernelTable& make_embedding_table() {
  static const EmbeddingKernelTable t = embedding_generic::make<Ops>(
      Isa::kAvx512Vnni, "embedding_bag_8bit_16x__avx512vnni", "embedding_bag_4bit_32x__avx512vnni");
  return t;
}

}  // namespace avx512vnni
}  // namespace kernels
}  // namespace qplugin
