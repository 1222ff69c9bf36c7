// avx2 embedding-bag kernels: the loop of embedding_generic_impl.h with rows reduced 8 floats at
// a time (vpmovzxbd + vcvtdq2ps + vfmadd, vmaxps) in ymm accumulators: rows of 16, 32 or 64
// columns as they come (RegAcc; also 4-bit rows of 96 and 128 columns of tables beyond the near
// 16 MB, partly in memory), other widths in batches of rows (reduce_rows), the columns past
// the last 8 by the single-row forms, whose tail runs std::fma (vfmadd231ss with -mfma); so the
// bytes equal the scalar kernels'. 4-bit rows: 4 bytes -> 8 codes by broadcast and vpsrlvd in the
// register forms (8 bytes -> 16 nibbles by mask, shift and vpunpcklbw in the single-row ones);
// 2-bit rows: 2 bytes -> 8 codes by broadcast and vpsrlvd.
// Changes with: embedding_generic_impl.h, embedding.h.
#define QPLUGIN_ISA_NS avx2
#include <immintrin.h>

#include <type_traits>

#include "common/inline.h"
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

// 8 codes of a Bits-wide row (Bits = 2 or 4) from the Bits bytes at p: element i is bits
// [Bits i, Bits (i + 1)) of the little-endian halfword / word (embedding.h; 4-bit: low nibble
// first), so one broadcast and a per-lane shift by Bits i (for 4-bit rows fewer operations per
// code than nibbles16's mask, shift, unpack and widening).
template <int Bits>
inline __m256 codes_x8(const uint8_t* p) {
  uint32_t w = 0;
  std::memcpy(&w, p, Bits);  // little-endian: the low Bits bytes of w
  const __m256i sh = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                        _mm256_set1_epi32(Bits));
  return _mm256_cvtepi32_ps(_mm256_and_si256(
      _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(w)), sh),
      _mm256_set1_epi32((1 << Bits) - 1)));
}

struct Ops {
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
      _mm256_storeu_ps(o + d, _mm256_fmadd_ps(av, codes_x8<2>(p + d / 4), _mm256_loadu_ps(o + d)));
    }
    PortableOps::acc2(o + d, p + d / 4, n - d, a);
  }
  static void set2(float* o, const uint8_t* p, int64_t n, float s, float b) {
    const __m256 sv = _mm256_set1_ps(s), bv = _mm256_set1_ps(b);
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) {
      _mm256_storeu_ps(o + d, _mm256_fmadd_ps(sv, codes_x8<2>(p + d / 4), bv));
    }
    PortableOps::set2(o + d, p + d / 4, n - d, s, b);
  }
  static void max2(float* o, const uint8_t* p, int64_t n, float s, float b) {
    const __m256 sv = _mm256_set1_ps(s), bv = _mm256_set1_ps(b);
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) {
      _mm256_storeu_ps(o + d, _mm256_max_ps(_mm256_fmadd_ps(sv, codes_x8<2>(p + d / 4), bv),
                                            _mm256_loadu_ps(o + d)));
    }
    PortableOps::max2(o + d, p + d / 4, n - d, s, b);
  }
  // The NG groups of 8 columns of a row from column d0 as floats: f(j, x) for group j.
  template <int Bits, int NG, class F>
  static QPLUGIN_ALWAYS_INLINE void groups(const uint8_t* row, int64_t d0, F f) {
    if (Bits == 8) {
      const uint8_t* q = row + d0;
      #pragma GCC unroll 8
      for (int j = 0; j < NG; ++j) {
        f(j, cvt8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 8 * j))));
      }
    } else if (Bits == 2) {
      const uint8_t* p = row + d0 / 4;
      #pragma GCC unroll 8
      for (int j = 0; j < NG; ++j) f(j, codes_x8<2>(p + 2 * j));
    } else {
      const uint8_t* p = row + d0 / 2;
      #pragma GCC unroll 8
      for (int j = 0; j < NG; ++j) f(j, codes_x8<4>(p + 4 * j));
    }
  }
  // 4-bit rows of 32, 64, 96 and 128 columns reduce in a strided order: per block h of 32
  // columns, accumulator 4h + k holds the columns 32h + 16 (k / 2) + 2m + k % 2 (m = 0..7).
  // Each 8 bytes of codes (16 columns) are one vpmovzxbd (a byte per lane), their low nibbles a
  // mask and their high ones a shift, instead of a broadcast, vpsrlvd and mask per 8 columns.
  // The accumulators return to column order once per bag (natural4). Per element the same
  // fma / max in the same row order: the same bytes. (Until 2026-12-07 a lane held 4 nibbles of
  // a vpmovzxwd, three shifts and three masks per 32 columns instead of two and two: 81,920 rows
  // within L2 on a Xeon held to avx2, 64 columns 0.45-0.48 -> 0.43 ms, 128 columns 0.68-0.77 ->
  // 0.64-0.66 ms. 8-bit rows stay with a vpmovzxbd per 8 columns: the shift-and-mask form of
  // 32-byte loads measured slower on AVX2, 0.195 -> 0.207 ms on a Zen 5.)
  template <int Bits, int NG>
  static constexpr bool kStrided = Bits == 4 && NG % 4 == 0 && NG <= 16;

  // The codes of block h of a strided 4-bit row: f(k, x) with x the floats of columns
  // 32h + 16 (k / 2) + 2m + k % 2: lane m of x0 (x1) holds byte m of the block's first (second)
  // 8 bytes, i.e. columns 2m, 2m + 1 of its first (second) 16 (low nibble first).
  template <int Bits, class F>
  static QPLUGIN_ALWAYS_INLINE void strided_codes(const uint8_t* row, int h, F f) {
    static_assert(Bits == 4, "avx2 strided rows are 4-bit rows (kStrided)");
    const __m256i x0 =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + 16 * h)));
    const __m256i x1 = _mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + 16 * h + 8)));
    const __m256i f15 = _mm256_set1_epi32(15);
    f(0, _mm256_cvtepi32_ps(_mm256_and_si256(x0, f15)));
    f(1, _mm256_cvtepi32_ps(_mm256_srli_epi32(x0, 4)));
    f(2, _mm256_cvtepi32_ps(_mm256_and_si256(x1, f15)));
    f(3, _mm256_cvtepi32_ps(_mm256_srli_epi32(x1, 4)));
  }

  // Strided accumulators r[0..4) (r[k] lane m = column 16 (k / 2) + 2m + k % 2) -> column order
  // (o[j] = columns 8j .. 8j + 7): lanes of r[0] and r[1] interleaved (columns 0..15), then
  // those of r[2] and r[3] (16..31).
  static QPLUGIN_ALWAYS_INLINE void natural4(const __m256* r, __m256* o) {
    for (int q = 0; q < 2; ++q) {
      const __m256 lo = _mm256_unpacklo_ps(r[2 * q], r[2 * q + 1]);  // 0..3 | 8..11
      const __m256 hi = _mm256_unpackhi_ps(r[2 * q], r[2 * q + 1]);  // 4..7 | 12..15
      o[2 * q] = _mm256_permute2f128_ps(lo, hi, 0x20);
      o[2 * q + 1] = _mm256_permute2f128_ps(lo, hi, 0x31);
    }
  }

  // One 4-bit row into strided accumulators (kStrided): per block h of 32 columns, acc[4h + k]
  // lane m holds column 32h + 16 (k / 2) + 2m + k % 2. Sum: acc = fma(s, q, acc); max:
  // acc = max(fma(s, q, b), acc) or, for a max bag's first row (Set), acc = fma(s, q, b). Per
  // element the operations of add_row.
  template <bool Max, bool Set, int NG>
  static QPLUGIN_ALWAYS_INLINE void add_strided_row(__m256* acc, const uint8_t* row, float s,
                                                    float b) {
    const __m256 sv = _mm256_set1_ps(s);
    const __m256 bv = _mm256_set1_ps(b);
#pragma GCC unroll 2
    for (int h = 0; h < NG / 4; ++h) {
      strided_codes<4>(row, h, [&](int k, __m256 x) QPLUGIN_LAMBDA_INLINE {
        __m256& v = acc[4 * h + k];
        if constexpr (Max) {
          const __m256 y = _mm256_fmadd_ps(sv, x, bv);
          v = Set ? y : _mm256_max_ps(y, v);
        } else {
          v = _mm256_fmadd_ps(sv, x, v);
        }
      });
    }
  }
  // reduce_block for 4-bit blocks of 32 or 64 columns (batches of rows wider than RegAcc takes,
  // e.g. 128 columns as two blocks of 64) in the strided order: the codes of a 32-column block
  // from two vpmovzxbd instead of a broadcast, vpsrlvd and mask per 8 columns (81,920 rows of
  // 96 columns within L2, held to avx2 on a Xeon: 0.72 -> 0.61 ms). A continuing batch (init
  // false) loads o into the strided order; the result returns to column order (natural4). Per
  // element the same operations in the same row order: the same bytes.
  template <bool Max, int NG>
  static QPLUGIN_ALWAYS_INLINE void reduce_block_strided(float* o, const uint8_t* const* rows,
                                                         const float* a, const float* b,
                                                         int64_t n, int64_t d0, bool init) {
    __m256 acc[NG];
    float* od = o + d0;
    for (int h = 0; h < NG / 4; ++h) {
      for (int k = 0; k < 4; ++k) {
        // columns 32h + 16 (k / 2) + 2m + k % 2, m = 0..7
        const float* c = od + 32 * h + 16 * (k / 2) + k % 2;
        acc[4 * h + k] = init ? _mm256_setzero_ps()
                              : _mm256_setr_ps(c[0], c[2], c[4], c[6], c[8], c[10], c[12],
                                               c[14]);
      }
    }
    const int64_t off = d0 / 2;
    int64_t r = 0;
    if (Max && init) {
      add_strided_row<Max, true, NG>(acc, rows[0] + off, a[0], b[0]);
      r = 1;
    }
    for (; r < n; ++r) add_strided_row<Max, false, NG>(acc, rows[r] + off, a[r], Max ? b[r] : 0.0f);
    for (int h = 0; h < NG / 4; ++h) {
      __m256 x[4];
      natural4(acc + 4 * h, x);
      for (int j = 0; j < 4; ++j) _mm256_storeu_ps(od + 32 * h + 8 * j, x[j]);
    }
  }
  // The columns [d0, d0 + 8 NG) across all n rows in NG accumulators. Sum: acc = fma(a[r], q,
  // acc) from 0 (init) or o. Max: acc = max(fma(a[r], q, b[r]), acc) (max_ps(x, y) =
  // x > y ? x : y, the portable order), the first row setting acc when init. The per-element
  // operations of sum_rows_by_row / max_rows_by_row, so the same bytes.
  template <int Bits, bool Max, int NG>
  static QPLUGIN_ALWAYS_INLINE void reduce_block(float* o, const uint8_t* const* rows,
                                                 const float* a, const float* b, int64_t n,
                                                 int64_t d0, bool init) {
    if constexpr (kStrided<Bits, NG>) {
      reduce_block_strided<Max, NG>(o, rows, a, b, n, d0, init);
      return;
    }
    __m256 acc[NG];
    for (int j = 0; j < NG; ++j) {
      acc[j] = init ? _mm256_setzero_ps() : _mm256_loadu_ps(o + d0 + 8 * j);
    }
    int64_t r = 0;
    if (Max && init) {
      add_row<Bits, NG, Max, true>(acc, rows[0], d0, a[0], b[0]);
      r = 1;
    }
    for (; r < n; ++r) add_row<Bits, NG, Max, false>(acc, rows[r], d0, a[r], Max ? b[r] : 0.0f);
    for (int j = 0; j < NG; ++j) _mm256_storeu_ps(o + d0 + 8 * j, acc[j]);
  }
  // reduce_block over the first ng groups of 8 columns from d0 (ng < 8), NG the largest count
  // tried. Returns the column after them.
  template <int Bits, bool Max, int NG>
  static QPLUGIN_ALWAYS_INLINE int64_t reduce_groups(float* o, const uint8_t* const* rows,
                                                     const float* a, const float* b, int64_t n,
                                                     int64_t d0, int64_t ng, bool init) {
    if constexpr (NG <= 0) {
      return d0;
    } else {
      if (ng >= NG) {
        reduce_block<Bits, Max, NG>(o, rows, a, b, n, d0, init);
        return d0 + 8 * NG;
      }
      return reduce_groups<Bits, Max, NG - 1>(o, rows, a, b, n, d0, ng, init);
    }
  }
  // Rows of 16, 32 or 64 columns reduce as they come, in NG = dim / 8 ymm accumulators
  // (RegAcc); so do 4-bit rows of 96 and 128 columns on a walk that prefetches far (a table
  // beyond kNearBytes: `far`, unless BagArgs::far_regs is off, as on Zen 1), their columns past
  // 64 in memory. Other widths, and those two on tables the caches hold (where the batched form
  // was faster: 81,920 rows of 128 columns within L2, 0.75 vs 0.87 ms), are batched
  // (reduce_rows). with_reg_shape calls f with the NG for dim and says whether it did.
  static constexpr int64_t kRegCols = 128;
  struct RowShape {  // nothing: the accepted widths are whole groups
    explicit RowShape(int64_t) {}
  };
  template <int Bits, class F>
  static QPLUGIN_ALWAYS_INLINE bool with_reg_shape(int64_t dim, bool far, F f) {
    if (dim == 16) {
      f(std::integral_constant<int, 2>{});
    } else if (dim == 32) {
      f(std::integral_constant<int, 4>{});
    } else if (dim == 64) {
      f(std::integral_constant<int, 8>{});
    } else {
      if constexpr (Bits == 4) {
        if (!far) return false;
        if (dim == 96) {
          f(std::integral_constant<int, 12>{});
          return true;
        }
        if (dim == 128) {
          f(std::integral_constant<int, 16>{});
          return true;
        }
      }
      return false;
    }
    return true;
  }
  // One row into the accumulators: sum: acc = fma(s, q, acc); max: acc = max(fma(s, q, b), acc)
  // or, for a bag's first row (Set), acc = fma(s, q, b). As reduce_block's per element.
  template <int Bits, int NG, bool Max, bool Set>
  static QPLUGIN_ALWAYS_INLINE void add_row(__m256* acc, const uint8_t* row, int64_t d0, float s,
                                            float b) {
    const __m256 sv = _mm256_set1_ps(s);
    if constexpr (Max) {
      const __m256 bv = _mm256_set1_ps(b);
      groups<Bits, NG>(row, d0, [&](int j, __m256 x) {
        const __m256 y = _mm256_fmadd_ps(sv, x, bv);
        acc[j] = Set ? y : _mm256_max_ps(y, acc[j]);
      });
    } else {
      groups<Bits, NG>(row, d0, [&](int j, __m256 x) { acc[j] = _mm256_fmadd_ps(sv, x, acc[j]); });
    }
  }
  // The accumulators of strided 4-bit rows past the first 64 columns (RegAcc for 96 and 128
  // columns), in memory: mem[32h + 8k + m] is column 64 + 32h + 16 (k / 2) + 2m + k % 2. Per
  // element the operations of add_strided_row.
  template <bool Max, bool Set, int NM>
  static QPLUGIN_ALWAYS_INLINE void add_strided_mem(float* mem, const uint8_t* row, float s,
                                                    float b) {
    const __m256 sv = _mm256_set1_ps(s);
    const __m256 bv = _mm256_set1_ps(b);
    for (int h = 0; h < NM / 4; ++h) {
      strided_codes<4>(row, h, [&](int k, __m256 x) QPLUGIN_LAMBDA_INLINE {
        float* m = mem + 32 * h + 8 * k;
        if constexpr (Max) {
          const __m256 y = _mm256_fmadd_ps(sv, x, bv);
          _mm256_store_ps(m, Set ? y : _mm256_max_ps(y, _mm256_load_ps(m)));
        } else {
          _mm256_store_ps(m, _mm256_fmadd_ps(sv, x, _mm256_load_ps(m)));
        }
      });
    }
  }
  template <int Bits, bool Max, class S>
  struct RegAcc {
    static constexpr int NG = S::value;
    static constexpr bool kStr = kStrided<Bits, NG>;
    // 4-bit rows of 96 and 128 columns (NG 12, 16): the first 64 columns in 8 ymm registers,
    // the rest in memory (AVX2 has 16 ymm registers; as one array of 16, GCC kept all of them in
    // memory). Rows reduce as they come, so the prefetching walk keeps issuing while rows are
    // reduced (the batched form for 128 columns reduced each bag's rows after collecting them,
    // and DRAM went idle meanwhile. 81,920 rows of a 1M-row table, held to avx2 on a Xeon: 128
    // columns 1.50-1.68 -> 1.29-1.36 ms, 96 columns 1.25-1.35 -> 1.00-1.06 ms).
    static constexpr int NR = NG > 8 ? 8 : NG;
    static constexpr int NM = NG - NR;
    static_assert(NM == 0 || kStr, "memory accumulators: strided 4-bit rows");
    __m256 v[NR];
    alignas(32) float mem[NM > 0 ? 8 * NM : 8];
    bool first = true;
    QPLUGIN_ALWAYS_INLINE explicit RegAcc(const RowShape&) {
      for (int j = 0; j < NR; ++j) v[j] = _mm256_setzero_ps();
      for (int j = 0; j < NM; ++j) _mm256_store_ps(mem + 8 * j, _mm256_setzero_ps());
    }
    QPLUGIN_ALWAYS_INLINE void add(const uint8_t* row, float s, float b) {
      if constexpr (kStr) {
        if (Max && first) {
          add_strided_row<Max, true, NR>(v, row, s, b);
          if constexpr (NM > 0) add_strided_mem<Max, true, NM>(mem, row + 32, s, b);
          first = false;
        } else {
          add_strided_row<Max, false, NR>(v, row, s, b);
          if constexpr (NM > 0) add_strided_mem<Max, false, NM>(mem, row + 32, s, b);
        }
      } else if (Max && first) {
        add_row<Bits, NG, true, true>(v, row, 0, s, b);
        first = false;
      } else {
        add_row<Bits, NG, Max, false>(v, row, 0, s, b);
      }
    }
    // The accumulators in column order.
    QPLUGIN_ALWAYS_INLINE void natural(__m256* o) const {
      if constexpr (kStr) {
        for (int h = 0; h < NR / 4; ++h) natural4(v + 4 * h, o + 4 * h);
        for (int h = 0; h < NM / 4; ++h) {
          __m256 r[4];
          for (int k = 0; k < 4; ++k) r[k] = _mm256_load_ps(mem + 32 * h + 8 * k);
          natural4(r, o + NR + 4 * h);
        }
      } else {
        for (int j = 0; j < NG; ++j) o[j] = v[j];
      }
    }
    QPLUGIN_ALWAYS_INLINE void store(float* o) const {
      __m256 x[NG];
      natural(x);
      for (int j = 0; j < NG; ++j) _mm256_storeu_ps(o + 8 * j, x[j]);
    }
    // A sum's finish in registers, the operations of bag_loop's finish_sum: o = v + add, then
    // / div when div != 0.
    QPLUGIN_ALWAYS_INLINE void store_sum(float* o, float add, float div) const {
      const __m256 av = _mm256_set1_ps(add), dv = _mm256_set1_ps(div);
      __m256 y[NG];
      natural(y);
      for (int j = 0; j < NG; ++j) {
        __m256 x = _mm256_add_ps(y[j], av);
        if (div != 0.0f) x = _mm256_div_ps(x, dv);
        _mm256_storeu_ps(o + 8 * j, x);
      }
    }
  };
  // Sum / mean bags of 16 columns on a lean walk with no prefetch (a table within L2), two bags
  // at a time: their rows alternate, so four fma chains are in flight instead of two. One bag's
  // rows wait on each other (acc = fma(s, q, acc), ~4 cycles a row), and the out-of-order window
  // did not overlap consecutive bags. Per bag the same operations in the same order as RegAcc
  // (fma per row from 0, the biases summed in row order, then acc + bsum and / count for a
  // mean): the same bytes. Returns the first bag not done (b1, or b1 - 1 for an odd count).
  static constexpr bool kPairSum16 = true;
  template <int Bits, typename I>
  static int64_t pair_sum16(const BagArgs& a, int64_t b0, int64_t b1) {
    static_assert(Bits == 8 || Bits == 4, "pair_sum16: 8- and 4-bit rows");
    const I* __restrict idx = static_cast<const I*>(a.indices);
    const uint8_t* __restrict table = a.table;
    const int64_t rb = a.row_bytes;
    constexpr int64_t kCodeBytes = Bits == 8 ? 16 : 8;
    const bool mean = a.mode == BagMode::kMean;
    int64_t bag = b0;
    for (; bag + 2 <= b1; bag += 2) {
      const int64_t p0 = a.offsets[bag], p1 = a.offsets[bag + 1], p2 = a.offsets[bag + 2];
      const int64_t n0 = p1 - p0, n1 = p2 - p1, n = n0 < n1 ? n0 : n1;
      __m256 x0 = _mm256_setzero_ps(), x1 = x0, y0 = x0, y1 = x0;
      // The biases' sums in lane 1 of bs0 / bs1: the row's (scale, bias) pair as converted is
      // added whole (lane 0 sums the scales, unused), one vaddps instead of a shuffle and a
      // vaddss; lane 1 sees the same additions in the same order.
      __m128 bs0 = _mm_setzero_ps(), bs1 = bs0;
      auto row = [&](int64_t i, __m256& u, __m256& v, __m128& bs) QPLUGIN_LAMBDA_INLINE {
        const uint8_t* r = table + static_cast<int64_t>(idx[i]) * rb;
        const __m128 sb = embedding_generic::row_scale_bias_x4<Bits>(r, kCodeBytes);
        const __m256 sv = _mm256_broadcastss_ps(sb);
        if constexpr (Bits == 4) {
          // Byte m of the 8 code bytes in lane m: u takes its low nibble (column 2m), v its high
          // one (2m + 1); finish interleaves them back to column order.
          const __m256i x =
              _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(r)));
          u = _mm256_fmadd_ps(sv, _mm256_cvtepi32_ps(_mm256_and_si256(x, _mm256_set1_epi32(15))),
                              u);
          v = _mm256_fmadd_ps(sv, _mm256_cvtepi32_ps(_mm256_srli_epi32(x, 4)), v);
        } else {
          groups<Bits, 2>(r, 0, [&](int j, __m256 q) QPLUGIN_LAMBDA_INLINE {
            if (j == 0) u = _mm256_fmadd_ps(sv, q, u);
            else v = _mm256_fmadd_ps(sv, q, v);
          });
        }
        bs = _mm_add_ps(bs, sb);
      };
      for (int64_t k = 0; k < n; ++k) {
        row(p0 + k, x0, x1, bs0);
        row(p1 + k, y0, y1, bs1);
      }
      for (int64_t k = n; k < n0; ++k) row(p0 + k, x0, x1, bs0);
      for (int64_t k = n; k < n1; ++k) row(p1 + k, y0, y1, bs1);
      auto finish = [&](float* o, __m256 u, __m256 v, __m128 bsv, int64_t cnt)
                        QPLUGIN_LAMBDA_INLINE {
        if constexpr (Bits == 4) {  // (columns 2m, 2m + 1) -> columns 0..7, 8..15
          const __m256 lo = _mm256_unpacklo_ps(u, v), hi = _mm256_unpackhi_ps(u, v);
          u = _mm256_permute2f128_ps(lo, hi, 0x20);
          v = _mm256_permute2f128_ps(lo, hi, 0x31);
        }
        const __m256 av = _mm256_set1_ps(_mm_cvtss_f32(_mm_movehdup_ps(bsv)));
        u = _mm256_add_ps(u, av);
        v = _mm256_add_ps(v, av);
        if (mean && cnt > 0) {
          const __m256 dv = _mm256_set1_ps(static_cast<float>(cnt));
          u = _mm256_div_ps(u, dv);
          v = _mm256_div_ps(v, dv);
        }
        _mm256_storeu_ps(o, u);
        _mm256_storeu_ps(o + 8, v);
      };
      finish(a.out + bag * 16, x0, x1, bs0, n0);
      finish(a.out + (bag + 1) * 16, y0, y1, bs1, n1);
    }
    return bag;
  }
  // Register-blocked batch reduction: 64 columns (8 accumulators) at a time, then the full
  // 8-column groups left, each block across all n rows; the last < 8 columns row by row.
  template <int Bits, bool Max>
  static void reduce_rows(float* o, const uint8_t* const* rows, const float* a, const float* b,
                          int64_t n, int64_t dim, bool init) {
    int64_t d0 = 0;
    for (; d0 + 64 <= dim; d0 += 64) reduce_block<Bits, Max, 8>(o, rows, a, b, n, d0, init);
    // The full 8-column groups left (fewer than 8), in one pass over the rows.
    d0 = reduce_groups<Bits, Max, 7>(o, rows, a, b, n, d0, (dim - d0) / 8, init);
    if (d0 < dim) {
      const uint8_t* shifted[32];
      for (int64_t r = 0; r < n; ++r) shifted[r] = rows[r] + d0 * Bits / 8;
      if constexpr (Max) {
        embedding_generic::max_rows_by_row<Bits, Ops>(o + d0, shifted, a, b, n, dim - d0, init);
      } else {
        embedding_generic::sum_rows_by_row<Bits, Ops>(o + d0, shifted, a, n, dim - d0, init);
      }
    }
  }
};

// indices[i0, i1) all in [0, limit) (embedding.h), as unsigned compares: a negative index is a
// huge unsigned one. int32: VPMAXUD of every index. int64: AVX2 has no 64-bit min/max (the
// generic scan's compare-and-blend emulation was ~20% of a 16-column bag call on a Zen 5 held to
// avx2), so the index is valid iff its high dword is 0 and its low dword < limit: VPMAXUD over
// all dwords (the high ones then 0) and an OR of all of them, whose high dwords must stay 0.
bool indices_in_range_avx2(const void* indices, bool indices_64, int64_t i0, int64_t i1,
                           int64_t limit) {
  if (i1 <= i0) return true;
  if (limit <= 0) return false;
  const uint64_t lim = static_cast<uint64_t>(limit);
  __m256i mx = _mm256_setzero_si256(), orr = _mm256_setzero_si256();
  uint64_t tail_mx = 0, tail_or = 0;
  if (indices_64) {
    const int64_t* p = static_cast<const int64_t*>(indices);
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
      mx = _mm256_max_epu32(mx, v);
      orr = _mm256_or_si256(orr, v);
    }
    for (; i < i1; ++i) {
      const uint64_t u = static_cast<uint64_t>(p[i]);
      tail_mx = u > tail_mx ? u : tail_mx;
    }
    alignas(32) uint32_t m[8], o[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(m), mx);
    _mm256_store_si256(reinterpret_cast<__m256i*>(o), orr);
    for (int k = 0; k < 8; k += 2) {
      tail_or |= o[k + 1];  // the high dwords
      tail_mx = m[k] > tail_mx ? m[k] : tail_mx;
    }
    return tail_or == 0 && tail_mx < lim;
  }
  const int32_t* p = static_cast<const int32_t*>(indices);
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8)
    mx = _mm256_max_epu32(mx, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
  for (; i < i1; ++i) {
    const uint64_t u = static_cast<uint32_t>(p[i]);
    tail_mx = u > tail_mx ? u : tail_mx;
  }
  alignas(32) uint32_t m[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(m), mx);
  for (int k = 0; k < 8; ++k) tail_mx = m[k] > tail_mx ? m[k] : tail_mx;
  (void)orr;
  return tail_mx < lim;
}

EmbeddingKernelTable make_table_avx2() {
  EmbeddingKernelTable t = embedding_generic::make<Ops>(
      Isa::kAvx2, "embedding_bag_8bit_8x__avx2", "embedding_bag_4bit_16x__avx2",
      "embedding_bag_2bit__avx2");
  t.indices_in_range = &indices_in_range_avx2;
  return t;
}

}  // namespace

const EmbeddingKernelTable& make_embedding_table() {
  static const EmbeddingKernelTable t = make_table_avx2();
  return t;
}

}  // namespace avx2
}  // namespace kernels
}  // namespace qplugin
