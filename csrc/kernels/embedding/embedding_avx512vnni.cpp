// avx512vnni embedding-bag kernels: the loop of embedding_generic_impl.h with rows reduced 16
// floats at a time (vpmovzxbd + vcvtdq2ps + vfmadd, vmaxps), in zmm accumulators: rows up to 128
// columns as they come (RegAcc), wider ones in batches of rows (reduce_rows); masked loads and
// stores past the row. The same IEEE operations per element as the scalar kernels, so the bytes
// are equal. 4-bit rows: 16 bytes -> 32 nibbles in order (low nibble first) by mask, shift and
// vpunpck{l,h}bw; 2-bit rows: 4 bytes -> 16 codes by broadcast and vpsrlvd.
// Changes with: embedding_generic_impl.h, embedding.h.
#define QPLUGIN_ISA_NS avx512vnni
#include <immintrin.h>

#include <type_traits>

#include "common/inline.h"
#include "kernels/dispatch.h"
#include "kernels/embedding/embedding_generic_impl.h"

namespace qplugin {
namespace kernels {
namespace avx512vnni {
namespace {


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
inline __m512 codes2x16(uint32_t w) {
  const __m512i sh = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_cvtepi32_ps(_mm512_and_si512(
      _mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(w)), sh), _mm512_set1_epi32(3)));
}
inline __m512 codes2x16(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof(w));
  return codes2x16(w);
}

struct Ops {
  // The masks of the columns [d0, d0 + width) within a block of up to 128: m[j] for the 16
  // columns of group j (0: none), bm[j] for the bytes of 4-bit pair j (32 columns from 16 bytes;
  // dim is even for 4-bit tables), b2[j] for the 4 bytes 2-bit group j reads.
  struct Cols {
    __mmask16 m[8];
    __mmask16 bm[4];
    __mmask16 b2[8];
    QPLUGIN_ALWAYS_INLINE explicit Cols(int64_t width) {
      for (int j = 0; j < 8; ++j) {
        const int64_t left = width - 16 * j;
        m[j] = left >= 16 ? static_cast<__mmask16>(0xffff)
               : left <= 0 ? static_cast<__mmask16>(0)
                           : static_cast<__mmask16>((1u << left) - 1);
        // A 2-bit group with columns in the row reads 4 bytes at d0 / 4 + 4j < dim / 4, which
        // end before the row's fp16 scale and bias (row_bytes = dim / 4 + 4); lanes past dim
        // are masked at store.
        b2[j] = static_cast<__mmask16>(m[j] != 0 ? 0xf : 0);
      }
      for (int j = 0; j < 4; ++j) {
        const int64_t left = width - 32 * j;
        const int64_t nbytes = left >= 32 ? 16 : (left <= 0 ? 0 : left / 2);
        bm[j] = static_cast<__mmask16>((1u << nbytes) - 1);
      }
    }
  };
  // The NG groups of 16 columns of a row from column d0 as floats: f(j, x) for group j (4-bit
  // rows: NG even, pairs of groups from 16 bytes). The first W groups are whole and load
  // unmasked; the others load masked by c (a group past the row loads nothing: zeros, never
  // stored). No branch, so the accumulators f updates stay in registers.
  template <int Bits, int NG, int W, class F>
  static QPLUGIN_ALWAYS_INLINE void groups(const uint8_t* row, int64_t d0, const Cols& c, F f) {
    if (Bits == 8) {
      const uint8_t* q = row + d0;
#pragma GCC unroll 8
      for (int j = 0; j < NG; ++j) {
        f(j, j < W ? cvt16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16 * j)))
                   : load16(q + 16 * j, c.m[j]));
      }
    } else if (Bits == 2) {
      const uint8_t* p = row + d0 / 4;
#pragma GCC unroll 8
      for (int j = 0; j < NG; ++j) {
        f(j, j < W ? codes2x16(p + 4 * j)
                   : codes2x16(_mm_cvtsi128_si32(_mm_maskz_loadu_epi8(c.b2[j], p + 4 * j))));
      }
    } else if (NG == 1) {
      // A 4-bit row of 16 columns (Shape<1, 1>): its 8 code bytes in one 64-bit load, the 16
      // nibbles in order (low first), one group.
      const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + d0 / 2));
      const __m128i k15 = _mm_set1_epi8(15);
      f(0, cvt16(_mm_unpacklo_epi8(_mm_and_si128(v, k15),
                                   _mm_and_si128(_mm_srli_epi16(v, 4), k15))));
    } else {
      const uint8_t* p = row + d0 / 2;
#pragma GCC unroll 4
      for (int j = 0; j < NG / 2; ++j) {
        __m128i c0, c1;
        if (2 * j + 1 < W) {
          nibbles32(p + 16 * j, &c0, &c1);
        } else {
          const __m128i v = _mm_maskz_loadu_epi8(c.bm[j], p + 16 * j);
          const __m128i k15 = _mm_set1_epi8(15);
          const __m128i lo = _mm_and_si128(v, k15);
          const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), k15);
          c0 = _mm_unpacklo_epi8(lo, hi);
          c1 = _mm_unpackhi_epi8(lo, hi);
        }
        f(2 * j, cvt16(c0));
        f(2 * j + 1, cvt16(c1));
      }
    }
  }
  // One row into the accumulators: sum: acc = fma(s, q, acc); max: acc = max(fma(s, q, b), acc)
  // (max_ps(x, y) = x > y ? x : y, the portable order), or acc = fma(s, q, b) for a bag's first
  // row (Set). The per-element operations of sum_rows_by_row / max_rows_by_row: the same bytes.
  template <int Bits, int NG, int W, bool Max, bool Set>
  static QPLUGIN_ALWAYS_INLINE void add_row(__m512* acc, const uint8_t* row, int64_t d0,
                                            const Cols& c, float s, float b) {
    const __m512 sv = _mm512_set1_ps(s);
    if constexpr (Max) {
      const __m512 bv = _mm512_set1_ps(b);
      groups<Bits, NG, W>(row, d0, c, [&](int j, __m512 x) {
        const __m512 y = _mm512_fmadd_ps(sv, x, bv);
        acc[j] = Set ? y : _mm512_max_ps(y, acc[j]);
      });
    } else {
      groups<Bits, NG, W>(row, d0, c,
                          [&](int j, __m512 x) { acc[j] = _mm512_fmadd_ps(sv, x, acc[j]); });
    }
  }
  // Rows up to 128 columns wide reduce as they come, in NG zmm accumulators of which the first
  // W groups are whole (unmasked loads): all 4 for rows of 64 columns, all 8 for 128 (the common
  // widths), both for 8-bit rows of 32 and 8- and 4-bit rows of 16 (a 4-bit one is one 8-byte
  // load: the unmasked whole group was 10% of a 16-column 8-bit row's time, and the masked pair
  // a 4-bit one had before decoded a second, empty group); otherwise 1 group for up to 16
  // columns (4-bit rows: 2, a masked pair), 2 for up to 32, 4 for up to 64, 8 for up to 128, the
  // first NG / 2 whole.
  // with_reg_shape calls f with the Shape<NG, W> for dim (any dim <= kRegCols).
  static constexpr int64_t kRegCols = 128;
  using RowShape = Cols;  // of the whole row (dim columns)
  template <int NG_, int W_, bool Str_ = true>
  struct Shape {
    static constexpr int NG = NG_, W = W_;
    static constexpr bool Str = Str_;  // may take the strided form (kStrided)
  };
  template <int Bits, class F>
  static QPLUGIN_ALWAYS_INLINE bool with_reg_shape(int64_t dim, bool /*far*/, F f) {
    if (dim == 64) {
      if (Bits == 8 && !embedding_strided8()) {
        f(Shape<4, 4, false>{});
      } else {
        f(Shape<4, 4>{});
      }
    } else if (dim == 128) {
      f(Shape<8, 8>{});
    } else if (dim == 16 && Bits != 2) {
      f(Shape<1, 1>{});
    } else if (dim == 32 && Bits == 8) {
      f(Shape<2, 2>{});
    } else if (dim <= 16 && Bits != 4) {
      f(Shape<1, 0>{});
    } else if (dim <= 32) {
      f(Shape<2, 1>{});
    } else if (dim <= 64) {
      f(Shape<4, 2>{});
    } else {
      f(Shape<8, 4>{});
    }
    return true;
  }
  // Rows of exactly 64 columns of 8- or 4-bit codes, or 128 of 4-bit codes (the common widths),
  // reduce in a strided order: per block h of 64 columns, accumulator 4h + k holds, for 8-bit
  // rows, the columns 64h + 4m + k (m = 0..15): each zmm of codes comes from one plain load (64
  // bytes, 16 lanes of 4 codes) and lane code k is a shift and a mask, no vpmovzxbd per 16
  // columns, which held a 64-column row to ~8 cycles on a Zen 5 (vs ~5 now). For 4-bit rows it
  // holds the columns 64h + 32 (k / 2) + 2m + k % 2: a vpmovzxbd of 16 bytes (a byte a lane)
  // gives 32 columns, low nibbles by a mask and high ones by a shift (before 2026-12-07: one
  // vpmovzxwd of 32 bytes, 4 nibbles a lane, three shifts and three masks; 81,920 rows within
  // L2 on an AMX Xeon, 64 columns 0.78x instead of 0.83x torch.ao's time). The accumulators
  // return to column order once per bag (natural()). Per element the same fma / max in the same
  // row order: the same bytes.
  // On Intel cores 8-bit rows of 64 columns keep the vpmovzxbd form too (embedding_strided8():
  // measured faster there). 8-bit rows of 128 columns keep the vpmovzxbd form: strided, the
  // DRAM-bound 1M x 128 lookup
  // measured 0.70-0.73x torch.ao's time instead of 0.75-0.76x (more operations per row in flight).
  template <int Bits, class S>
  static constexpr bool kStrided = (Bits == 4 && S::NG == 8 && S::W == 8) ||
                                   ((Bits == 8 || Bits == 4) && S::NG == 4 && S::W == 4 &&
                                    S::Str);

  // The codes of block h of a strided row: f(k, x) with x the floats of the columns of
  // accumulator 4h + k (kStrided's layouts).
  template <int Bits, class F>
  static QPLUGIN_ALWAYS_INLINE void strided_codes(const uint8_t* row, int h, F f) {
    if constexpr (Bits == 8) {
      __m512i x = _mm512_loadu_si512(row + 64 * h);
      // One load: GCC would fold it into each of the four uses below, and a 64-byte load of a
      // 72-byte row mostly splits two cache lines (four split loads per row: +25% time).
      asm("" : "+v"(x));
      const __m512i ff = _mm512_set1_epi32(0xff);
      f(0, _mm512_cvtepi32_ps(_mm512_and_si512(x, ff)));
      f(1, _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(x, 8), ff)));
      f(2, _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(x, 16), ff)));
      f(3, _mm512_cvtepi32_ps(_mm512_srli_epi32(x, 24)));
    } else {
      // Lane m of x0 (x1): byte m of the block's first (second) 16 bytes, i.e. columns 2m and
      // 2m + 1 of its first (second) 32 (low nibble first): f(k, .) gets the columns
      // 64h + 32 (k / 2) + 2m + k % 2.
      const __m512i x0 = _mm512_cvtepu8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 32 * h)));
      const __m512i x1 = _mm512_cvtepu8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 32 * h + 16)));
      const __m512i f15 = _mm512_set1_epi32(15);
      f(0, _mm512_cvtepi32_ps(_mm512_and_si512(x0, f15)));
      f(1, _mm512_cvtepi32_ps(_mm512_srli_epi32(x0, 4)));
      f(2, _mm512_cvtepi32_ps(_mm512_and_si512(x1, f15)));
      f(3, _mm512_cvtepi32_ps(_mm512_srli_epi32(x1, 4)));
    }
  }

  // 4-bit strided accumulators r[0..4) (r[k] lane m = column 32 (k / 2) + 2m + k % 2) -> column
  // order (o[j] = columns 16j .. 16j + 15): r[0], r[1] interleaved (columns 0..31), then r[2],
  // r[3] (32..63).
  static QPLUGIN_ALWAYS_INLINE void natural4_nibbles(const __m512* r, __m512* o) {
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi =
        _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    o[0] = _mm512_permutex2var_ps(r[0], lo, r[1]);
    o[1] = _mm512_permutex2var_ps(r[0], hi, r[1]);
    o[2] = _mm512_permutex2var_ps(r[2], lo, r[3]);
    o[3] = _mm512_permutex2var_ps(r[2], hi, r[3]);
  }

  // Strided accumulators r[0..4) (r[k] lane m = column 4m + k) -> column order (o[j] = columns
  // 16j .. 16j + 15): two rounds of vpermt2ps.
  static QPLUGIN_ALWAYS_INLINE void natural4(const __m512* r, __m512* o) {
    // p01[0]: lanes 2m + k = r[k][m] for m < 8, p01[1] for m >= 8 (k = 0, 1); p23 alike.
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi =
        _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const __m512 p01[2] = {_mm512_permutex2var_ps(r[0], lo, r[1]),
                           _mm512_permutex2var_ps(r[0], hi, r[1])};
    const __m512 p23[2] = {_mm512_permutex2var_ps(r[2], lo, r[3]),
                           _mm512_permutex2var_ps(r[2], hi, r[3])};
    // Column 16j + 4q + k = r[k][4j + q]: from p01[j / 2] (k < 2) or p23[j / 2] at lane
    // 2 (4 (j % 2) + q) + k % 2.
    const __m512i e = _mm512_setr_epi32(0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
    const __m512i odd = _mm512_add_epi32(e, _mm512_set1_epi32(8));
    for (int j = 0; j < 4; ++j) {
      o[j] = _mm512_permutex2var_ps(p01[j / 2], j % 2 ? odd : e, p23[j / 2]);
    }
  }

  // Sum / mean bags of 16 columns on a lean walk with no prefetch (a table within L2), four
  // bags at a time: a 16-column row is one zmm, so one bag is a single fma chain (~4 cycles a
  // row); four bags' rows alternate. Per bag the same operations in the same order as RegAcc
  // (fma per row from 0, the biases summed in row order, then acc + bsum and / count for a
  // mean): the same bytes. Returns the first bag not done.
  static constexpr bool kPairSum16 = true;
  template <int Bits, typename I>
  static int64_t pair_sum16(const BagArgs& a, int64_t b0, int64_t b1) {
    static_assert(Bits == 8 || Bits == 4, "pair_sum16: 8- and 4-bit rows");
    constexpr int G = 4;
    const I* __restrict idx = static_cast<const I*>(a.indices);
    const uint8_t* __restrict table = a.table;
    const int64_t rb = a.row_bytes;
    constexpr int64_t kCodeBytes = Bits == 8 ? 16 : 8;
    const bool mean = a.mode == BagMode::kMean;
    const Cols cols(16);
    int64_t bag = b0;
    for (; bag + G <= b1; bag += G) {
      int64_t p[G + 1], cnt[G];
      for (int g = 0; g <= G; ++g) p[g] = a.offsets[bag + g];
      int64_t n = p[1] - p[0];
      for (int g = 0; g < G; ++g) {
        cnt[g] = p[g + 1] - p[g];
        n = cnt[g] < n ? cnt[g] : n;
      }
      __m512 u[G];
      // The biases' sums in lane 1 of bs[g]: the row's (scale, bias) pair as converted is
      // added whole (lane 0 sums the scales, unused), one vaddps instead of a shuffle and a
      // vaddss; lane 1 sees the same additions in the same order.
      __m128 bs[G];
      for (int g = 0; g < G; ++g) {
        u[g] = _mm512_setzero_ps();
        bs[g] = _mm_setzero_ps();
      }
      // 4-bit rows: the 8 code bytes broadcast as a qword (dwords w0, w1, w0, w1, ...), lane
      // 2t shifted by 4t gives column t and lane 2t + 1 column 8 + t (w1's nibble t): one
      // broadcast load, a vpsrlvd and a mask instead of two masks, a shift, an unpack and a
      // vpmovzxbd. The columns return to order once per bag (natural).
      const __m512i sh4 = _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24,
                                            28, 28);
      auto row = [&](int64_t i, __m512& acc, __m128& b) QPLUGIN_LAMBDA_INLINE {
        const uint8_t* r = table + static_cast<int64_t>(idx[i]) * rb;
        const __m128 sb = embedding_generic::row_scale_bias_x4<Bits>(r, kCodeBytes);
        const __m512 sv = _mm512_broadcastss_ps(sb);
        if constexpr (Bits == 4) {
          int64_t w;
          std::memcpy(&w, r, sizeof(w));
          const __m512i x = _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi64(w), sh4),
                                             _mm512_set1_epi32(15));
          acc = _mm512_fmadd_ps(sv, _mm512_cvtepi32_ps(x), acc);
        } else {
          groups<Bits, 1, 1>(r, 0, cols, [&](int, __m512 q) QPLUGIN_LAMBDA_INLINE {
            acc = _mm512_fmadd_ps(sv, q, acc);
          });
        }
        b = _mm_add_ps(b, sb);
      };
      for (int64_t k = 0; k < n; ++k) {
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) row(p[g] + k, u[g], bs[g]);
      }
      for (int g = 0; g < G; ++g)
        for (int64_t k = n; k < cnt[g]; ++k) row(p[g] + k, u[g], bs[g]);
      const __m512i natural = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11,
                                                13, 15);
      for (int g = 0; g < G; ++g) {
        __m512 x = Bits == 4 ? _mm512_permutexvar_ps(natural, u[g]) : u[g];
        x = _mm512_add_ps(x, _mm512_set1_ps(_mm_cvtss_f32(_mm_movehdup_ps(bs[g]))));
        if (mean && cnt[g] > 0) x = _mm512_div_ps(x, _mm512_set1_ps(static_cast<float>(cnt[g])));
        _mm512_storeu_ps(a.out + (bag + g) * 16, x);
      }
    }
    return bag;
  }
  template <int Bits, bool Max, class S>
  struct RegAcc {
    static constexpr int NG = S::NG, W = S::W;
    static constexpr bool kStr = kStrided<Bits, S>;
    __m512 v[NG];
    Cols c;
    bool first = true;
    QPLUGIN_ALWAYS_INLINE explicit RegAcc(const Cols& cols) : c(cols) {
      for (int j = 0; j < NG; ++j) v[j] = _mm512_setzero_ps();
    }
    template <bool Set>
    QPLUGIN_ALWAYS_INLINE void add_strided(const uint8_t* row, float s, float b) {
      const __m512 sv = _mm512_set1_ps(s);
      const __m512 bv = _mm512_set1_ps(b);
#pragma GCC unroll 2
      for (int h = 0; h < NG / 4; ++h) {
        strided_codes<Bits>(row, h, [&](int k, __m512 x) QPLUGIN_LAMBDA_INLINE {
          __m512& a = v[4 * h + k];
          if constexpr (Max) {
            const __m512 y = _mm512_fmadd_ps(sv, x, bv);
            a = Set ? y : _mm512_max_ps(y, a);
          } else {
            a = _mm512_fmadd_ps(sv, x, a);
          }
        });
      }
    }
    QPLUGIN_ALWAYS_INLINE void add(const uint8_t* row, float s, float b) {
      if constexpr (kStr) {
        if (Max && first) {
          add_strided<true>(row, s, b);
          first = false;
        } else {
          add_strided<false>(row, s, b);
        }
      } else if (Max && first) {
        add_row<Bits, NG, W, true, true>(v, row, 0, c, s, b);
        first = false;
      } else {
        add_row<Bits, NG, W, Max, false>(v, row, 0, c, s, b);
      }
    }
    // The accumulators in column order.
    QPLUGIN_ALWAYS_INLINE void natural(__m512* o) const {
      if constexpr (kStr) {
        for (int h = 0; h < NG / 4; ++h) {
          if constexpr (Bits == 4) {
            natural4_nibbles(v + 4 * h, o + 4 * h);
          } else {
            natural4(v + 4 * h, o + 4 * h);
          }
        }
      } else {
        for (int j = 0; j < NG; ++j) o[j] = v[j];
      }
    }
    QPLUGIN_ALWAYS_INLINE void store(float* o) const {
      __m512 x[NG];
      natural(x);
      for (int j = 0; j < NG; ++j) _mm512_mask_storeu_ps(o + 16 * j, c.m[j], x[j]);
    }
    // A sum's finish in registers, the operations of bag_loop's finish_sum: o = v + add, then
    // / div when div != 0. (Stored first and read back, the masked store would not forward to
    // the load: a stall per bag.)
    QPLUGIN_ALWAYS_INLINE void store_sum(float* o, float add, float div) const {
      const __m512 av = _mm512_set1_ps(add), dv = _mm512_set1_ps(div);
      __m512 y[NG];
      natural(y);
      for (int j = 0; j < NG; ++j) {
        __m512 x = _mm512_add_ps(y[j], av);
        if (div != 0.0f) x = _mm512_div_ps(x, dv);
        _mm512_mask_storeu_ps(o + 16 * j, c.m[j], x);
      }
    }
  };
  // Batch reduction of rows wider than 128 columns: the columns [d0, d0 + min(width, 16 NG))
  // across all n rows in NG accumulators, from 0 (init) or o; a max batch with init starts
  // from its first row. The first W groups are whole.
  template <int Bits, int NG, int W, bool Max>
  static void reduce_block(float* o, const uint8_t* const* rows, const float* a, const float* b,
                           int64_t n, int64_t d0, int64_t width, bool init) {
    const Cols c(width);
    __m512 acc[NG];
    for (int j = 0; j < NG; ++j) {
      acc[j] = init ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(c.m[j], o + d0 + 16 * j);
    }
    int64_t r = 0;
    if (Max && init) {
      add_row<Bits, NG, W, Max, true>(acc, rows[0], d0, c, a[0], b[0]);
      r = 1;
    }
    for (; r < n; ++r) {
      add_row<Bits, NG, W, Max, false>(acc, rows[r], d0, c, a[r], Max ? b[r] : 0.0f);
    }
    for (int j = 0; j < NG; ++j) _mm512_mask_storeu_ps(o + d0 + 16 * j, c.m[j], acc[j]);
  }
  // The last width < 128 columns: reduce_block with the fewest groups that cover them (NG the
  // largest count tried; 4-bit rows: pairs of groups), all whole but the last (pair).
  template <int Bits, bool Max, int NG>
  static QPLUGIN_ALWAYS_INLINE void reduce_tail(float* o, const uint8_t* const* rows,
                                                const float* a, const float* b, int64_t n,
                                                int64_t d0, int64_t width, bool init) {
    constexpr int kStep = Bits == 4 ? 2 : 1;
    if constexpr (NG > kStep) {
      if (width <= 16 * (NG - kStep)) {
        return reduce_tail<Bits, Max, NG - kStep>(o, rows, a, b, n, d0, width, init);
      }
    }
    reduce_block<Bits, NG, NG - kStep, Max>(o, rows, a, b, n, d0, width, init);
  }
  template <int Bits, bool Max>
  static void reduce_rows(float* o, const uint8_t* const* rows, const float* a, const float* b,
                          int64_t n, int64_t dim, bool init) {
    int64_t d0 = 0;
    for (; d0 + 128 <= dim; d0 += 128) {
      reduce_block<Bits, 8, 8, Max>(o, rows, a, b, n, d0, 128, init);
    }
    if (d0 < dim) reduce_tail<Bits, Max, 8>(o, rows, a, b, n, d0, dim - d0, init);
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
