// AVX512-VNNI GEMM kernel qgemm_u8s8_6x64c4__avx512vnni: VPDPBUSD (u8 x s8, four products
// summed into s32, no saturation) on a 6-row x 64-column register tile (24 zmm accumulators),
// weights packed in 64-column panels of k-groups of 4. Must equal the scalar kernel byte for byte.
// Changes with: qgemm.h (contract), qgemm_generic.h (packing, scalar epilogue).
#define QPLUGIN_ISA_NS avx512vnni
// GCC 12 reports the _mm512_undefined_* placeholders inside its own intrinsic headers as
// uninitialized once they are inlined into the asm-using tile below; nothing here reads them.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <vector>

#include "kernels/gemm/qgemm_amx.h"
#include "kernels/gemm/qgemm_generic.h"

namespace qplugin {
namespace kernels {
namespace gemm {
namespace avx512vnni {
namespace {

constexpr int kMR = 6;
constexpr int kNV = 4;  // zmm vectors of 16 columns per panel
// Row tiles of a GEMM whose columns fit one zmm (N <= 16, e.g. a 16-channel conv3d): 12 rows, so
// that 12 accumulators hide VPDPBUSD's latency (4 cycles on a Zen 5, two issued a cycle: 6
// independent chains reach 1.5 a cycle, 8 1.8, 12 2.0; measured with a register-only loop).
constexpr int kMRNarrow = 12;
constexpr int kNR = 16 * kNV;
constexpr int kKR = 4;
// Columns of B processed per pass over the rows of A: the packed chunk (Kp x nc bytes) stays in
// L2 while every row tile of A streams over it.
constexpr int64_t kBChunkBytes = 384 * 1024;
// Packed weights above this size get software prefetch of the next chunk (gemm()).
constexpr int64_t kPrefetchMinBytes = 4 * 1024 * 1024;

// acc + u8(a) . s8(b) per 4-byte group (VPDPBUSD). Inline asm because GCC 12's register allocator
// copies and spills the tied accumulators of the builtin (measured: half the speed).
inline __m512i dpbusd(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpbusd %[b], %[a], %[acc]" : [acc] "+v"(acc) : [a] "v"(a), [b] "v"(b));
  return acc;
}

inline __m512i broadcast_a4(const uint8_t* p) {
  int32_t x;
  std::memcpy(&x, p, 4);
  return _mm512_set1_epi32(x);
}

// The last, partial k-group of a row: only `kt` (1..3) bytes exist; the masked load never
// touches the others (no read past the end of A). The packed weights there are zero.
inline __m512i broadcast_a_tail(const uint8_t* p, int kt) {
  const __m128i v = _mm_maskz_loadu_epi8(static_cast<__mmask16>((1u << kt) - 1u), p);
  return _mm512_broadcastd_epi32(v);
}

// Accumulator c<i><j>: row i, columns [16j, 16j + 16) of the tile. Named variables (not an
// array) so that GCC keeps all 24 in registers. Rows 6..11 exist only in the one-vector tiles
// (kMRNarrow).
#define QP_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

// One MR x (16*NV) tile over the whole K: A rows a[0..MR) (stride lda), B a panel of `width`
// columns (width*4 bytes per k-group), C columns [n, n + width) of rows [m, m + MR).
// pf, pf_lines: cache lines of the next B chunk to prefetch into L2 during this tile, spread
// over its k-loop (see gemm()); none when pf_lines = 0.
// IND (indirect, igemm()): row i of A is the concatenation over s < nseg of the
// segs[s].len bytes at rows[i] + segs[s].a_off, against the panel's K positions from segs[s].k
// (multiples of kKR; a, lda and K unused, no prefetch). crow (IND only, may be null): row i of C
// is C's row crow[i] instead of m + i.
template <int MR, int NV, bool IND>
void tile(const uint8_t* a, int64_t lda, int64_t K, const int8_t* b, int64_t width, int64_t m,
          int64_t n, const QGemmEpilogue& e, uint8_t* c, int64_t ldc, const char* pf,
          int64_t pf_lines, const uint8_t* const* rows, const IgemmSeg* segs, int64_t nseg,
          const int64_t* crow) {
#define QP_DECL(i)                                                                          \
  __m512i c##i##0 = _mm512_setzero_si512(), c##i##1 = c##i##0, c##i##2 = c##i##0,           \
          c##i##3 = c##i##0;                                                                \
  const uint8_t* a##i = IND ? nullptr : MR > i ? a + i * lda : a;
  QP_ROWS(QP_DECL)
#undef QP_DECL
  const int64_t bstride = width * kKR;
  const int64_t kg = K / kKR;
  const int kt = static_cast<int>(K % kKR);
#define QP_FMA_ROW(i, LOAD)                                                                 \
  if constexpr (MR > i) {                                                                   \
    const __m512i av = LOAD;                                                                \
    c##i##0 = dpbusd(c##i##0, av, b0);                                                      \
    if constexpr (NV > 1) c##i##1 = dpbusd(c##i##1, av, b1);                                \
    if constexpr (NV > 2) c##i##2 = dpbusd(c##i##2, av, b2);                                \
    if constexpr (NV > 3) c##i##3 = dpbusd(c##i##3, av, b3);                                \
  }
#define QP_STEP(i) QP_FMA_ROW(i, broadcast_a4(a##i))
#define QP_TAIL(i) QP_FMA_ROW(i, broadcast_a_tail(a##i, kt))
#define QP_ADVANCE(i) a##i += kKR;
#define QP_LOAD_B                                                                           \
  const __m512i b0 = _mm512_loadu_si512(b);                                                 \
  const __m512i b1 = NV > 1 ? _mm512_loadu_si512(b + 64) : b0;                              \
  const __m512i b2 = NV > 2 ? _mm512_loadu_si512(b + 128) : b0;                             \
  const __m512i b3 = NV > 3 ? _mm512_loadu_si512(b + 192) : b0;
  if constexpr (IND) {
    const uint8_t* r[MR];
    for (int i = 0; i < MR; ++i) r[i] = rows[i];
    const int8_t* const b_panel = b;
    for (int64_t s = 0; s < nseg; ++s) {
      const int64_t so = segs[s].a_off, sg = segs[s].len / kKR;
#define QP_SEG(i) a##i = r[MR > i ? i : 0] + so;
      QP_ROWS(QP_SEG)
#undef QP_SEG
      b = b_panel + segs[s].k * width;
      for (int64_t g = 0; g < sg; ++g) {
        QP_LOAD_B
        QP_ROWS(QP_STEP)
        QP_ROWS(QP_ADVANCE)
        b += bstride;
      }
    }
  } else {
    const int64_t pf_step = kg > 0 ? (pf_lines + kg - 1) / kg : 0;  // lines per k-group, <= 4
    const char* const pf_end = pf + pf_lines * 64;
    for (int64_t g = 0; g < kg; ++g) {
      if (pf < pf_end) {
        _mm_prefetch(pf, _MM_HINT_T1);
        if (pf_step > 1) _mm_prefetch(pf + 64, _MM_HINT_T1);
        if (pf_step > 2) _mm_prefetch(pf + 128, _MM_HINT_T1);
        if (pf_step > 3) _mm_prefetch(pf + 192, _MM_HINT_T1);
        pf += 64 * (pf_step < 4 ? pf_step : 4);
      }
      QP_LOAD_B
      QP_ROWS(QP_STEP)
      QP_ROWS(QP_ADVANCE)
      b += bstride;
    }
    if (kt != 0) {
      QP_LOAD_B
      QP_ROWS(QP_TAIL)
    }
  }
#undef QP_LOAD_B
#undef QP_ADVANCE
#undef QP_TAIL
#undef QP_STEP
#undef QP_FMA_ROW

  // Epilogue: zero-point terms, requantization, clamp, narrow, store (masked on the last vector).
  const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
  const __m512i out_zp = _mm512_set1_epi32(e.out_zp);
  const int last = static_cast<int>(width - 16 * (NV - 1));  // 1..16 columns in the last vector
  const __mmask16 last_mask = static_cast<__mmask16>(last >= 16 ? 0xFFFFu : (1u << last) - 1u);
  const bool has_rs = e.row_sums != nullptr;
  const bool i32 = e.out_i32 != 0;
  const bool f32 = !i32 && e.out_f32 != 0, f32_relu = e.f32_relu != 0;
#define QP_CROW(i)                                                                          \
  uint8_t* const o##i =                                                                     \
      MR > i ? c + ((IND && crow != nullptr) ? crow[i] : m + i) * ldc : c;
  QP_ROWS(QP_CROW)
#undef QP_CROW
#define QP_EPI_COL(j)                                                                       \
  if constexpr (NV > j) {                                                                   \
    const __mmask16 mk = j == NV - 1 ? last_mask : static_cast<__mmask16>(0xFFFF);          \
    const int64_t nj = n + 16 * j;                                                          \
    const __m512i coff = _mm512_maskz_loadu_epi32(mk, e.col_offsets + nj);                  \
    /* out_i32 reads neither vector (they may be null) */                                  \
    const __m512 bq = i32 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mk, e.bias_q + nj); \
    const __m512 mult = i32 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mk, e.mult + nj); \
    __m512i zw = _mm512_setzero_si512();                                                    \
    if (has_rs) {                                                                           \
      zw = e.w_zp != nullptr ? _mm512_maskz_loadu_epi32(mk, e.w_zp + nj)                    \
                             : _mm512_set1_epi32(e.w_zp_scalar);                            \
    }                                                                                       \
    QP_EPI_ROW(0, j) QP_EPI_ROW(1, j) QP_EPI_ROW(2, j)                                      \
    QP_EPI_ROW(3, j) QP_EPI_ROW(4, j) QP_EPI_ROW(5, j)                                      \
    QP_EPI_ROW(6, j) QP_EPI_ROW(7, j) QP_EPI_ROW(8, j)                                      \
    QP_EPI_ROW(9, j) QP_EPI_ROW(10, j) QP_EPI_ROW(11, j)                                    \
  }
#define QP_EPI_ROW(i, j)                                                                    \
  if constexpr (MR > i) {                                                                   \
    __m512i v = _mm512_sub_epi32(c##i##j, coff);                                            \
    if (has_rs) {                                                                           \
      v = _mm512_sub_epi32(v, _mm512_mullo_epi32(zw, _mm512_set1_epi32(e.row_sums[m + i]))); \
    }                                                                                       \
    if (i32) { /* exact int32 accumulator (qgemm.h, out_i32) */                           \
      _mm512_mask_storeu_epi32(reinterpret_cast<int32_t*>(o##i) + nj, mk, v);  \
    } else if (f32) { /* float output (qgemm.h, out_f32): y = fma(acc, mult, bias) */      \
      __m512 f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), mult, bq);                          \
      if (f32_relu) f = _mm512_max_ps(_mm512_setzero_ps(), f);                              \
      _mm512_mask_storeu_ps(reinterpret_cast<float*>(o##i) + nj, mk, f);       \
    } else {                                                                                \
      __m512 f = _mm512_add_ps(_mm512_cvtepi32_ps(v), bq);                                  \
      f = _mm512_mul_ps(f, mult);                                                           \
      f = _mm512_max_ps(f, lo);                                                             \
      f = _mm512_min_ps(f, hi);                                                             \
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), out_zp);                    \
      _mm_mask_storeu_epi8(o##i + nj, mk, _mm512_cvtepi32_epi8(q));            \
    }                                                                                       \
  }
  QP_EPI_COL(0) QP_EPI_COL(1) QP_EPI_COL(2) QP_EPI_COL(3)
#undef QP_EPI_ROW
#undef QP_EPI_COL
}
#undef QP_ROWS

using TileFn = void (*)(const uint8_t*, int64_t, int64_t, const int8_t*, int64_t, int64_t,
                        int64_t, const QGemmEpilogue&, uint8_t*, int64_t, const char*, int64_t,
                        const uint8_t* const*, const IgemmSeg*, int64_t, const int64_t*);

template <int MR, bool IND>
constexpr TileFn tile_of(int nv) {
  return nv == 1   ? &tile<MR, 1, IND>
         : nv == 2 ? &tile<MR, 2, IND>
         : nv == 3 ? &tile<MR, 3, IND>
                   : &tile<MR, 4, IND>;
}

#define QP_TILE_ROW(mr, ind) \
  {tile_of<mr, ind>(1), tile_of<mr, ind>(2), tile_of<mr, ind>(3), tile_of<mr, ind>(4)}
// kTiles[mr - 1][nv - 1] (direct A), kITiles: the same for igemm().
const TileFn kTiles[kMR][kNV] = {QP_TILE_ROW(1, false), QP_TILE_ROW(2, false),
                                 QP_TILE_ROW(3, false), QP_TILE_ROW(4, false),
                                 QP_TILE_ROW(5, false), QP_TILE_ROW(6, false)};
const TileFn kITiles[kMR][kNV] = {QP_TILE_ROW(1, true), QP_TILE_ROW(2, true),
                                  QP_TILE_ROW(3, true), QP_TILE_ROW(4, true),
                                  QP_TILE_ROW(5, true), QP_TILE_ROW(6, true)};
#undef QP_TILE_ROW
// kNarrow[ind][mr - 1]: the one-vector tiles of 1..kMRNarrow rows (N <= 16).
const TileFn kNarrow[2][kMRNarrow] = {
    {&tile<1, 1, false>, &tile<2, 1, false>, &tile<3, 1, false>, &tile<4, 1, false>,
     &tile<5, 1, false>, &tile<6, 1, false>, &tile<7, 1, false>, &tile<8, 1, false>,
     &tile<9, 1, false>, &tile<10, 1, false>, &tile<11, 1, false>, &tile<12, 1, false>},
    {&tile<1, 1, true>, &tile<2, 1, true>, &tile<3, 1, true>, &tile<4, 1, true>,
     &tile<5, 1, true>, &tile<6, 1, true>, &tile<7, 1, true>, &tile<8, 1, true>,
     &tile<9, 1, true>, &tile<10, 1, true>, &tile<11, 1, true>, &tile<12, 1, true>}};

// Row-tile height for the columns [n0, n1): kMRNarrow when they fit one vector.
inline int64_t row_tile(int64_t n0, int64_t n1) { return n1 - n0 <= 16 ? kMRNarrow : kMR; }

// The tile function for mr rows and nv vectors (narrow: the kNarrow table, nv = 1).
inline TileFn tile_fn(bool ind, bool narrow, int64_t mr, int64_t nv) {
  if (narrow) return kNarrow[ind ? 1 : 0][mr - 1];
  return ind ? kITiles[mr - 1][nv - 1] : kTiles[mr - 1][nv - 1];
}

void gemm(const uint8_t* a, int64_t lda, int64_t M, int64_t K, const int8_t* packed_b,
          int64_t N, int64_t n0, int64_t n1, const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  if (M >= amx::kMinRows && n1 - n0 >= amx::kMinCols && amx_enabled() &&
      amx::gemm_prefers_amx(M, K, n1 - n0)) {
    amx::gemm(a, lda, M, K, packed_b, N, n0, n1, e, c, ldc);
    return;
  }
  const int64_t Kp = generic::round_up(K, kKR);
  int64_t chunk = kBChunkBytes / (Kp > 0 ? Kp : 1) / kNR * kNR;
  if (chunk < kNR) chunk = kNR;
  // Row tiles as even as possible (M = 32: 5,5,6,5,5,6 rather than 6,6,6,6,6,2).
  const int64_t mrt = row_tile(n0, n1);
  const bool narrow = mrt == kMRNarrow;
  const int64_t ntiles = (M + mrt - 1) / mrt;
  // Every row tile after the first reads the chunk from L2, but the first pass waits on L3 or,
  // when other processes share the L3, on DRAM. So with several row tiles and weights too large
  // to stay cached (> kPrefetchMinBytes), each (tile, panel) step prefetches its share of the
  // next chunk into L2 (measured at K = 4096: M = 8 +25%, M = 32 +5..15%; on small, cached
  // weights it only costs load slots, ~2%, hence the threshold). One row tile: a single pass,
  // which the hardware prefetcher serves best.
  const bool prefetch = ntiles > 1 && N * Kp > kPrefetchMinBytes;
  for (int64_t c0 = n0; c0 < n1; c0 += chunk) {
    const int64_t c1 = c0 + chunk < n1 ? c0 + chunk : n1;
    const char* pf_base = reinterpret_cast<const char*>(packed_b + c1 * Kp);
    const int64_t next_cols = prefetch ? (c1 + chunk < n1 ? chunk : n1 - c1) : 0;
    const int64_t pf_total = (next_cols * Kp + 63) / 64;
    const int64_t steps = ntiles * ((c1 - c0 + kNR - 1) / kNR);
    int64_t step = 0;
    for (int64_t t = 0; t < ntiles; ++t) {
      const int64_t m0 = t * M / ntiles;
      const int64_t mr = (t + 1) * M / ntiles - m0;
      for (int64_t p0 = c0; p0 < c1; p0 += kNR, ++step) {
        const int64_t width = N - p0 < kNR ? N - p0 : kNR;
        const int64_t nv = (width + 15) / 16;
        const int64_t l0 = step * pf_total / steps, l1 = (step + 1) * pf_total / steps;
        tile_fn(false, narrow, mr, nv)(a + m0 * lda, lda, K, packed_b + p0 * Kp, width, m0, p0,
                                       e, c, ldc, pf_base + l0 * 64, l1 - l0, nullptr, nullptr,
                                       1, nullptr);
      }
    }
  }
}

// Indirect GEMM over K ranges (qgemm.h igemm): the same chunk and tile order as gemm(), A rows
// through pointers, C rows through c_rows.
void igemm(const uint8_t* const* rows, const int64_t* c_rows, int64_t M,
                const IgemmSeg* segs, int64_t nseg, int64_t Kp, const int8_t* packed_b, int64_t N,
                int64_t n0, int64_t n1, const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  if (M >= amx::kMinRows && n1 - n0 >= amx::kMinCols && amx_enabled() &&
      amx::igemm_prefers_amx(segs, nseg, Kp, n1 - n0)) {
    amx::igemm(rows, c_rows, M, segs, nseg, Kp, packed_b, N, n0, n1, e, c, ldc);
    return;
  }
  int64_t chunk = kBChunkBytes / (Kp > 0 ? Kp : 1) / kNR * kNR;
  if (chunk < kNR) chunk = kNR;
  const int64_t mrt = row_tile(n0, n1);
  const bool narrow = mrt == kMRNarrow;
  const int64_t ntiles = (M + mrt - 1) / mrt;
  for (int64_t c0 = n0; c0 < n1; c0 += chunk) {
    const int64_t c1 = c0 + chunk < n1 ? c0 + chunk : n1;
    for (int64_t t = 0; t < ntiles; ++t) {
      const int64_t m0 = t * M / ntiles;
      const int64_t mr = (t + 1) * M / ntiles - m0;
      for (int64_t p0 = c0; p0 < c1; p0 += kNR) {
        const int64_t width = N - p0 < kNR ? N - p0 : kNR;
        const int64_t nv = (width + 15) / 16;
        tile_fn(true, narrow, mr, nv)(nullptr, 0, 0, packed_b + p0 * Kp, width, m0, p0, e, c,
                                      ldc, nullptr, 0, rows + m0, segs, nseg,
                                      c_rows != nullptr ? c_rows + m0 : nullptr);
      }
    }
  }
}

// row_sums[m] = sum_k A[m][k] with VPSADBW (exact: sums of u8 into u64 lanes).
void row_sums(const uint8_t* a, int64_t lda, int64_t M, int64_t K, int32_t* out) {
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t m = 0; m < M; ++m) {
    const uint8_t* ar = a + m * lda;
    __m512i s = _mm512_setzero_si512();
    int64_t k = 0;
    for (; k + 64 <= K; k += 64) {
      s = _mm512_add_epi64(s, _mm512_sad_epu8(_mm512_loadu_si512(ar + k), zero));
    }
    if (k < K) {
      const __mmask64 mk = (~0ULL) >> (64 - (K - k));
      s = _mm512_add_epi64(s, _mm512_sad_epu8(_mm512_maskz_loadu_epi8(mk, ar + k), zero));
    }
    out[m] = static_cast<int32_t>(_mm512_reduce_add_epi64(s));
  }
}

}  // namespace

const QGemmKernels& qgemm_table() {
  static const QGemmKernels t{Isa::kAvx512Vnni,
                              "qgemm_u8s8_6x64c4__avx512vnni",
                              kMR,
                              kNR,
                              kKR,
                              &generic::packed_b_bytes<kNR, kKR>,
                              &generic::pack_b<kNR, kKR>,
                              &row_sums,
                              &gemm,
                              &igemm};
  return t;
}

}  // namespace avx512vnni
}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
