// avx512vnni embedding-bag kernels: the loop of embedding_generic_impl.h with row operations 16
// floats wide (vpmovzxbd + vcvtdq2ps + vfmadd), masked tails for 8-bit rows; the same IEEE
// operations per element as the scalar kernels, so the bytes are equal. 4-bit rows: 16 bytes ->
// 32 nibbles in order (low nibble first) by mask, shift and vpunpck{l,h}bw; 2-bit rows: 4 bytes
// -> 16 codes by broadcast and vpsrlvd.
// Changes with: embedding_generic_impl.h, embedding.h.
#define QPLUGIN_ISA_NS avx512vnni
#include <immintrin.h>

#include "common/inline.h"
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

// 16 codes of a 2-bit row from the 4 bytes at p: element i is bits [2i, 2i + 2) of the
// little-endian word (embedding.h), so one broadcast and a per-lane shift by 2i.
inline __m512 codes2x16(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof(w));
  const __m512i sh = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_cvtepi32_ps(_mm512_and_si512(
      _mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(w)), sh), _mm512_set1_epi32(3)));
}

struct Ops {
  // Bags of rows up to 128 columns wide sum in 8 zmm accumulators (masked past dim).
  static constexpr int64_t kRegCols = 128;
  template <int Bits>
  struct RegAcc {
    __m512 v[8];
    __mmask16 m[8];
    __mmask16 bm[4];  // 4-bit: bytes of each 32-column group (dim is even); 2-bit uses m
    bool full;        // dim == 128: unmasked loads
    explicit RegAcc(int64_t d) : full(d == 128) {
      for (int j = 0; j < 4; ++j) {
        const int64_t left = d - 32 * j;
        const int64_t nbytes = left >= 32 ? 16 : (left <= 0 ? 0 : left / 2);
        bm[j] = static_cast<__mmask16>((1u << nbytes) - 1);
      }
      for (int j = 0; j < 8; ++j) {
        const int64_t left = d - 16 * j;
        m[j] = left >= 16 ? static_cast<__mmask16>(0xffff)
               : left <= 0 ? static_cast<__mmask16>(0)
                           : static_cast<__mmask16>((1u << left) - 1);
        v[j] = _mm512_setzero_ps();
      }
    }
    inline void add(const uint8_t* row, float a) {
      const __m512 av = _mm512_set1_ps(a);
      if constexpr (Bits == 2) {
        // Groups of 16 columns that start inside the row (m[j] != 0) read 4 bytes at 4j:
        // 4j < dim / 4, so they end before the row's fp16 scale and bias do (row_bytes =
        // dim / 4 + 4); lanes past dim are masked at store.
        for (int j = 0; j < 8; ++j) {
          if (m[j] != 0) v[j] = _mm512_fmadd_ps(av, codes2x16(row + 4 * j), v[j]);
        }
      } else if (Bits == 8 && full) {
        for (int j = 0; j < 8; ++j) {
          const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16 * j));
          v[j] = _mm512_fmadd_ps(av, cvt16(x), v[j]);
        }
      } else if (Bits == 8) {
        for (int j = 0; j < 8; ++j) v[j] = _mm512_fmadd_ps(av, load16(row + 16 * j, m[j]), v[j]);
      } else if (full) {
        for (int j = 0; j < 4; ++j) {
          __m128i c0, c1;
          nibbles32(row + 16 * j, &c0, &c1);
          v[2 * j] = _mm512_fmadd_ps(av, cvt16(c0), v[2 * j]);
          v[2 * j + 1] = _mm512_fmadd_ps(av, cvt16(c1), v[2 * j + 1]);
        }
      } else {
        const __m128i k15 = _mm_set1_epi8(15);
        for (int j = 0; j < 4; ++j) {
          const __m128i x = _mm_maskz_loadu_epi8(bm[j], row + 16 * j);
          const __m128i lo = _mm_and_si128(x, k15);
          const __m128i hi = _mm_and_si128(_mm_srli_epi16(x, 4), k15);
          v[2 * j] = _mm512_fmadd_ps(av, cvt16(_mm_unpacklo_epi8(lo, hi)), v[2 * j]);
          v[2 * j + 1] = _mm512_fmadd_ps(av, cvt16(_mm_unpackhi_epi8(lo, hi)), v[2 * j + 1]);
        }
      }
    }
    inline void store(float* o) const {
      for (int j = 0; j < 8; ++j) _mm512_mask_storeu_ps(o + 16 * j, m[j], v[j]);
    }
  };
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
  // The 32-code blocks of a 4-bit row of n codes at p: f(v, d) for d = 32j and 32j + 16, v the
  // codes d..d+15 as floats. Returns the first code left (the portable form does the rest).
  template <class F>
  static QPLUGIN_ALWAYS_INLINE int64_t nibble_blocks(const uint8_t* p, int64_t n, F f) {
    int64_t d = 0;
    for (; d + 32 <= n; d += 32) {
      __m128i c0, c1;
      nibbles32(p + d / 2, &c0, &c1);
      f(cvt16(c0), d);
      f(cvt16(c1), d + 16);
    }
    return d;
  }
  static void acc4(float* o, const uint8_t* p, int64_t n, float a) {
    const __m512 av = _mm512_set1_ps(a);
    const int64_t d = nibble_blocks(p, n, [&](__m512 v, int64_t j) {
      _mm512_storeu_ps(o + j, _mm512_fmadd_ps(av, v, _mm512_loadu_ps(o + j)));
    });
    PortableOps::acc4(o + d, p + d / 2, n - d, a);
  }
  static void set4(float* o, const uint8_t* p, int64_t n, float s, float b) {
    const __m512 sv = _mm512_set1_ps(s), bv = _mm512_set1_ps(b);
    const int64_t d = nibble_blocks(p, n, [&](__m512 v, int64_t j) {
      _mm512_storeu_ps(o + j, _mm512_fmadd_ps(sv, v, bv));
    });
    PortableOps::set4(o + d, p + d / 2, n - d, s, b);
  }
  static void max4(float* o, const uint8_t* p, int64_t n, float s, float b) {
    const __m512 sv = _mm512_set1_ps(s), bv = _mm512_set1_ps(b);
    const int64_t d = nibble_blocks(p, n, [&](__m512 v, int64_t j) {
      _mm512_storeu_ps(o + j, _mm512_max_ps(_mm512_fmadd_ps(sv, v, bv), _mm512_loadu_ps(o + j)));
    });
    PortableOps::max4(o + d, p + d / 2, n - d, s, b);
  }
  static void acc2(float* o, const uint8_t* p, int64_t n, float a) {
    const __m512 av = _mm512_set1_ps(a);
    int64_t d = 0;
    for (; d + 16 <= n; d += 16) {
      _mm512_storeu_ps(o + d, _mm512_fmadd_ps(av, codes2x16(p + d / 4), _mm512_loadu_ps(o + d)));
    }
    PortableOps::acc2(o + d, p + d / 4, n - d, a);
  }
  static void set2(float* o, const uint8_t* p, int64_t n, float s, float b) {
    const __m512 sv = _mm512_set1_ps(s), bv = _mm512_set1_ps(b);
    int64_t d = 0;
    for (; d + 16 <= n; d += 16) {
      _mm512_storeu_ps(o + d, _mm512_fmadd_ps(sv, codes2x16(p + d / 4), bv));
    }
    PortableOps::set2(o + d, p + d / 4, n - d, s, b);
  }
  static void max2(float* o, const uint8_t* p, int64_t n, float s, float b) {
    const __m512 sv = _mm512_set1_ps(s), bv = _mm512_set1_ps(b);
    int64_t d = 0;
    for (; d + 16 <= n; d += 16) {
      _mm512_storeu_ps(o + d, _mm512_max_ps(_mm512_fmadd_ps(sv, codes2x16(p + d / 4), bv),
                                            _mm512_loadu_ps(o + d)));
    }
    PortableOps::max2(o + d, p + d / 4, n - d, s, b);
  }
  // Register-blocked batch sum: 128 columns (8 accumulators) at a time across all n rows, masked
  // for the last block. Same per-element fma sequence as sum_rows_by_row.
  template <int Bits, bool Full>
  static void sum_block(float* o, const uint8_t* const* rows, const float* a, int64_t n,
                        int64_t d0, int64_t width, bool init) {
    __m512 acc[8];
    __mmask16 m[8];
    for (int j = 0; j < 8; ++j) {
      const int64_t left = width - 16 * j;
      m[j] = Full || left >= 16 ? static_cast<__mmask16>(0xffff)
             : left <= 0        ? static_cast<__mmask16>(0)
                                : static_cast<__mmask16>((1u << left) - 1);
      acc[j] = init ? _mm512_setzero_ps()
                    : (Full ? _mm512_loadu_ps(o + d0 + 16 * j)
                            : _mm512_maskz_loadu_ps(m[j], o + d0 + 16 * j));
    }
    for (int64_t r = 0; r < n; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      if (Bits == 8) {
        const uint8_t* q = rows[r] + d0;
        for (int j = 0; j < 8; ++j) {
          const __m512 x = Full ? cvt16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16 * j)))
                                : load16(q + 16 * j, m[j]);
          acc[j] = _mm512_fmadd_ps(av, x, acc[j]);
        }
      } else if (Bits == 2) {
        // As RegAcc::add: groups starting inside the row read 4 bytes that end before the row's
        // scale and bias; lanes past the row are masked at store.
        const uint8_t* p = rows[r] + d0 / 4;
        for (int j = 0; j < 8; ++j) {
          if (Full || m[j] != 0) acc[j] = _mm512_fmadd_ps(av, codes2x16(p + 4 * j), acc[j]);
        }
      } else {
        const uint8_t* p = rows[r] + d0 / 2;
        for (int j = 0; j < 4; ++j) {
          __m128i c0, c1;
          if (Full) {
            nibbles32(p + 16 * j, &c0, &c1);
          } else {
            // Bytes of this 32-column group: (columns left) / 2, the table's dim being even.
            const int64_t left = width - 32 * j;
            const int64_t nbytes = left >= 32 ? 16 : (left <= 0 ? 0 : left / 2);
            const __mmask16 bm = static_cast<__mmask16>((1u << nbytes) - 1);
            const __m128i v = _mm_maskz_loadu_epi8(bm, p + 16 * j);
            const __m128i k15 = _mm_set1_epi8(15);
            const __m128i lo = _mm_and_si128(v, k15);
            const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), k15);
            c0 = _mm_unpacklo_epi8(lo, hi);
            c1 = _mm_unpackhi_epi8(lo, hi);
          }
          acc[2 * j] = _mm512_fmadd_ps(av, cvt16(c0), acc[2 * j]);
          acc[2 * j + 1] = _mm512_fmadd_ps(av, cvt16(c1), acc[2 * j + 1]);
        }
      }
    }
    for (int j = 0; j < 8; ++j) {
      if (Full) {
        _mm512_storeu_ps(o + d0 + 16 * j, acc[j]);
      } else {
        _mm512_mask_storeu_ps(o + d0 + 16 * j, m[j], acc[j]);
      }
    }
  }
  template <int Bits>
  static void sum_rows(float* o, const uint8_t* const* rows, const float* a, int64_t n,
                       int64_t dim, bool init) {
    int64_t d0 = 0;
    for (; d0 + 128 <= dim; d0 += 128) sum_block<Bits, true>(o, rows, a, n, d0, 128, init);
    if (d0 < dim) sum_block<Bits, false>(o, rows, a, n, d0, dim - d0, init);
  }
};

}  // namespace

const EmbeddingKernelTable& make_embedding_table() {
  static const EmbeddingKernelTable t = embedding_generic::make<Ops>(
      Isa::kAvx512Vnni, "embedding_bag_8bit_16x__avx512vnni", "embedding_bag_4bit_32x__avx512vnni",
      "embedding_bag_2bit__avx512vnni");
  return t;
}

}  // namespace avx512vnni
}  // namespace kernels
}  // namespace qplugin
