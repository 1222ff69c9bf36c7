// avx2 embedding-bag kernels: the loop of embedding_generic_impl.h with row operations 8 floats
// wide (vpmovzxbd + vcvtdq2ps + vfmadd); the tail runs std::fma (vfmadd231ss with -mfma), so the
// bytes equal the scalar kernels'. 4-bit rows: 8 bytes -> 16 nibbles in order (low nibble first)
// by mask, shift and vpunpcklbw; 2-bit rows: 2 bytes -> 8 codes by broadcast and vpsrlvd.
// Changes with: embedding_generic_impl.h, embedding.h.
#define QPLUGIN_ISA_NS avx2
#include <immintrin.h>

#include "kernels/embedding/embedding_generic_impl.h"

namespace qplugin {
namespace kernels {
namespace avx2 {
namespace {

using embedding_generic::PortableOps;

inline __m256 cvt8(__m128i bytes) {  // the low 8 bytes as 8 floats
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
}

// 16 codes of a 4-bit row from 8 bytes at p, in element order.
inline __m128i nibbles16(const uint8_t* p) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(15);
  const __m128i lo = _mm_and_si128(v, m);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
  return _mm_unpacklo_epi8(lo, hi);
}

// 8 codes of a 2-bit row from the 2 bytes at p: element i is bits [2i, 2i + 2) of the
// little-endian halfword (embedding.h), so one broadcast and a per-lane shift by 2i.
inline __m256 codes2x8(const uint8_t* p) {
  uint16_t w;
  std::memcpy(&w, p, sizeof(w));
  const __m256i sh = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
  return _mm256_cvtepi32_ps(_mm256_and_si256(
      _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(w)), sh), _mm256_set1_epi32(3)));
}

struct Ops {
  static constexpr int64_t kRegCols = 0;  // 128 columns would need all 16 ymm registers
  template <int Bits>
  struct RegAcc {
    explicit RegAcc(int64_t) {}
    void add(const uint8_t*, float) {}
    void store(float*) const {}
  };
  static void acc8(float* o, const uint8_t* q, int64_t n, float a) {
    const __m256 av = _mm256_set1_ps(a);
    int64_t d = 0;
    for (; d + 32 <= n; d += 32) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + d));
      const __m128i v0 = _mm256_castsi256_si128(v), v1 = _mm256_extracti128_si256(v, 1);
      _mm256_storeu_ps(o + d, _mm256_fmadd_ps(av, cvt8(v0), _mm256_loadu_ps(o + d)));
      _mm256_storeu_ps(o + d + 8, _mm256_fmadd_ps(av, cvt8(_mm_srli_si128(v0, 8)),
                                                  _mm256_loadu_ps(o + d + 8)));
      _mm256_storeu_ps(o + d + 16, _mm256_fmadd_ps(av, cvt8(v1), _mm256_loadu_ps(o + d + 16)));
      _mm256_storeu_ps(o + d + 24, _mm256_fmadd_ps(av, cvt8(_mm_srli_si128(v1, 8)),
                                                   _mm256_loadu_ps(o + d + 24)));
    }
    for (; d + 8 <= n; d += 8) {
      const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + d));
      _mm256_storeu_ps(o + d, _mm256_fmadd_ps(av, cvt8(v), _mm256_loadu_ps(o + d)));
    }
    PortableOps::acc8(o + d, q + d, n - d, a);
  }
  static void set8(float* o, const uint8_t* q, int64_t n, float s, float b) {
    const __m256 sv = _mm256_set1_ps(s), bv = _mm256_set1_ps(b);
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) {
      const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + d));
      _mm256_storeu_ps(o + d, _mm256_fmadd_ps(sv, cvt8(v), bv));
    }
    PortableOps::set8(o + d, q + d, n - d, s, b);
  }
  static void max8(float* o, const uint8_t* q, int64_t n, float s, float b) {
    const __m256 sv = _mm256_set1_ps(s), bv = _mm256_set1_ps(b);
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) {
      const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + d));
      // max_ps(x, y) = x > y ? x : y, the portable order.
      _mm256_storeu_ps(o + d, _mm256_max_ps(_mm256_fmadd_ps(sv, cvt8(v), bv),
                                            _mm256_loadu_ps(o + d)));
    }
    PortableOps::max8(o + d, q + d, n - d, s, b);
  }
  static void acc4(float* o, const uint8_t* p, int64_t n, float a) {
    const __m256 av = _mm256_set1_ps(a);
    int64_t d = 0;
    for (; d + 16 <= n; d += 16) {
      const __m128i c = nibbles16(p + d / 2);
      _mm256_storeu_ps(o + d, _mm256_fmadd_ps(av, cvt8(c), _mm256_loadu_ps(o + d)));
      _mm256_storeu_ps(o + d + 8, _mm256_fmadd_ps(av, cvt8(_mm_srli_si128(c, 8)),
                                                  _mm256_loadu_ps(o + d + 8)));
    }
    PortableOps::acc4(o + d, p + d / 2, n - d, a);
  }
  static void set4(float* o, const uint8_t* p, int64_t n, float s, float b) {
    const __m256 sv = _mm256_set1_ps(s), bv = _mm256_set1_ps(b);
    int64_t d = 0;
    for (; d + 16 <= n; d += 16) {
      const __m128i c = nibbles16(p + d / 2);
      _mm256_storeu_ps(o + d, _mm256_fmadd_ps(sv, cvt8(c), bv));
      _mm256_storeu_ps(o + d + 8, _mm256_fmadd_ps(sv, cvt8(_mm_srli_si128(c, 8)), bv));
    }
    PortableOps::set4(o + d, p + d / 2, n - d, s, b);
  }
  static void max4(float* o, const uint8_t* p, int64_t n, float s, float b) {
    const __m256 sv = _mm256_set1_ps(s), bv = _mm256_set1_ps(b);
    int64_t d = 0;
    for (; d + 16 <= n; d += 16) {
      const __m128i c = nibbles16(p + d / 2);
      _mm256_storeu_ps(o + d, _mm256_max_ps(_mm256_fmadd_ps(sv, cvt8(c), bv),
                                            _mm256_loadu_ps(o + d)));
      _mm256_storeu_ps(o + d + 8,
                       _mm256_max_ps(_mm256_fmadd_ps(sv, cvt8(_mm_srli_si128(c, 8)), bv),
                                     _mm256_loadu_ps(o + d + 8)));
    }
    PortableOps::max4(o + d, p + d / 2, n - d, s, b);
  }
  static void acc2(float* o, const uint8_t* p, int64_t n, float a) {
    const __m256 av = _mm256_set1_ps(a);
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) {
      _mm256_storeu_ps(o + d, _mm256_fmadd_ps(av, codes2x8(p + d / 4), _mm256_loadu_ps(o + d)));
    }
    PortableOps::acc2(o + d, p + d / 4, n - d, a);
  }
  static void set2(float* o, const uint8_t* p, int64_t n, float s, float b) {
    const __m256 sv = _mm256_set1_ps(s), bv = _mm256_set1_ps(b);
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) {
      _mm256_storeu_ps(o + d, _mm256_fmadd_ps(sv, codes2x8(p + d / 4), bv));
    }
    PortableOps::set2(o + d, p + d / 4, n - d, s, b);
  }
  static void max2(float* o, const uint8_t* p, int64_t n, float s, float b) {
    const __m256 sv = _mm256_set1_ps(s), bv = _mm256_set1_ps(b);
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) {
      _mm256_storeu_ps(o + d, _mm256_max_ps(_mm256_fmadd_ps(sv, codes2x8(p + d / 4), bv),
                                            _mm256_loadu_ps(o + d)));
    }
    PortableOps::max2(o + d, p + d / 4, n - d, s, b);
  }
  // Register-blocked batch sum: 64 columns (8 accumulators) at a time across all n rows; the
  // < 64-column tail row by row. Same per-element fma sequence as sum_rows_by_row.
  template <int Bits>
  static void sum_rows(float* o, const uint8_t* const* rows, const float* a, int64_t n,
                       int64_t dim, bool init) {
    int64_t d0 = 0;
    for (; d0 + 64 <= dim; d0 += 64) {
      __m256 acc[8];
      for (int j = 0; j < 8; ++j) {
        acc[j] = init ? _mm256_setzero_ps() : _mm256_loadu_ps(o + d0 + 8 * j);
      }
      for (int64_t r = 0; r < n; ++r) {
        const __m256 av = _mm256_set1_ps(a[r]);
        if (Bits == 8) {
          const uint8_t* q = rows[r] + d0;
          for (int j = 0; j < 8; ++j) {
            const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 8 * j));
            acc[j] = _mm256_fmadd_ps(av, cvt8(v), acc[j]);
          }
        } else if (Bits == 2) {
          const uint8_t* p = rows[r] + d0 / 4;
          for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(av, codes2x8(p + 2 * j), acc[j]);
        } else {
          const uint8_t* p = rows[r] + d0 / 2;
          for (int j = 0; j < 4; ++j) {
            const __m128i c = nibbles16(p + 8 * j);
            acc[2 * j] = _mm256_fmadd_ps(av, cvt8(c), acc[2 * j]);
            acc[2 * j + 1] = _mm256_fmadd_ps(av, cvt8(_mm_srli_si128(c, 8)), acc[2 * j + 1]);
          }
        }
      }
      for (int j = 0; j < 8; ++j) _mm256_storeu_ps(o + d0 + 8 * j, acc[j]);
    }
    if (d0 < dim) {
      const uint8_t* shifted[32];
      for (int64_t r = 0; r < n; ++r) shifted[r] = rows[r] + d0 * Bits / 8;
      embedding_generic::sum_rows_by_row<Bits, Ops>(o + d0, shifted, a, n, dim - d0, init);
    }
  }
};

}  // namespace

const EmbeddingKernelTable& make_embedding_table() {
  static const EmbeddingKernelTable t = embedding_generic::make<Ops>(
      Isa::kAvx2, "embedding_bag_8bit_8x__avx2", "embedding_bag_4bit_16x__avx2",
      "embedding_bag_2bit__avx2");
  return t;
}

}  // namespace avx2
}  // namespace kernels
}  // namespace qplugin
