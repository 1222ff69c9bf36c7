// AVX2 GEMM kernel qgemm_u8s8_6x8c4__avx2, exact for every input. Full-range row tiles: u8
// activations and s8 weights are widened to s16 and multiplied with VPMADDWD (s16 x s16 pairs
// summed into s32, cannot saturate for these ranges). VPMADDUBSW, whose s16 pair sum saturates
// for u8 x s8 inputs such as 255*127 + 255*127 (PyTorch issue 44939), only where it provably
// cannot: row tiles whose bytes are <= 127 (tile_ubsw; a few bytes above corrected after the
// k-loop), and there two k-groups' products summed in s16 only where the packing's pair flags
// prove the weight bound (ubsw_octets_x6); row tiles whose bytes stay within the packing's own
// VPMADDUBSW bound (UbswBound, mode 4); and a one-row full-range call as |w| * ((a - o) *
// sign(w)) (the sign tile, SignRow). Design and proofs: docs/notes/avx2_gemm.md. Weights:
// 8-column panels, k-groups of 4 (the widened tile: one 16-byte load widens to 4 columns x 4 k;
// each s32 lane holds half a column's k-group and the epilogue adds the halves, VPHADDD), then
// the pair flags (PairFlags), the sign aux (SignAux) and the mode-4 bound (UbswBound). B is
// walked in L2-sized chunks of columns (run_chunks); a full-range row tile of A is widened to
// s16 once per chunk (or once per call) and reused by every panel in it. igemm (the
// implicit-GEMM conv entry) reads its rows from the segment pointers and shares everything else.
// Must equal the scalar kernel byte for byte.
// Changes with: qgemm.h (contract), qgemm_generic.h (packing, scalar epilogue).
#define QPLUGIN_ISA_NS avx2
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/inline.h"
#include "kernels/gemm/qgemm_generic.h"

namespace qplugin {
namespace kernels {
namespace gemm {
namespace avx2 {
namespace {

constexpr int kMR = 6;
constexpr int kNR = 8;
constexpr int kKR = 4;

// The next panel's prefetch, spread over a k-loop of kg groups: pf_lines cache lines from pf into
// L2, ceil(pf_lines / kg) per k-group and at most two.
struct PanelPrefetch {
  const char* pf;
  const char* end;
  int64_t lines_per_group;
  PanelPrefetch(const char* p, int64_t pf_lines, int64_t kg)
      : pf(p),
        end(p + pf_lines * 64),
        lines_per_group(kg > 0 && pf_lines > 0 ? (pf_lines + kg - 1) / kg : 0) {}
  // One k-group's share.
  QPLUGIN_ALWAYS_INLINE void step() {
    if (pf < end) {
      _mm_prefetch(pf, _MM_HINT_T1);
      if (lines_per_group > 1) _mm_prefetch(pf + 64, _MM_HINT_T1);
      pf += 64 * (lines_per_group < 2 ? lines_per_group : 2);
    }
  }
};

// A call of one row tile (M <= 6: a GEMV-like linear) reads each byte of B once, as one stream
// per panel: with weights beyond the last-level cache the hardware prefetcher alone kept that
// stream at ~9 GB/s on a Zen 1 (M = 1, 4096 x 4096: 1.9-2.1 ms, FBGEMM 1.4). So such calls also
// prefetch the panel kStreamAhead bytes ahead of the k-loop, a line every other k-group
// (1.55-1.65 ms). Calls whose weights fit in kPrefetchMinBytes did not gain and do not do this.
// Beyond kStreamNtaMinBytes the prefetch is non-temporal (PREFETCHNTA): on the Zen 1 (8 MB of L3
// a core complex) a stream into L1 with T0 ran at ~12 GB/s, with NTA at 15-18 GB/s (M = 1,
// in-process A/B, 1 thread: 4096 x 4096 1.36-1.41 -> 0.91-0.95 ms on 7-bit input, 1.44-1.47 ->
// 1.08-1.13 full range; 1024 x 8192 0.70 -> 0.51; M = 4, 4096 x 4096 0.93x), the lines no longer
// filling the caches on their way. Weights the L3 holds between calls lose that: 4096 x 1152
// (4.7 MB) 1.035x, 1280 x 4096 (5.2 MB) 0.99-1.00x, 1536 x 4096 (6.3 MB) 0.92-0.93x.
// (A prefetch distance of 4096 bytes with T0 gained 1-6%; with NTA, 2048 and 4096 were within
// 2-5% of each other either way.)
constexpr int64_t kStreamAhead = 2048;
constexpr int64_t kStreamNtaMinBytes = 5 * 1024 * 1024;
enum Stream : int { kNoStream = 0, kStreamT0 = 1, kStreamNta = 2 };
QPLUGIN_ALWAYS_INLINE void stream_prefetch(int stream, int64_t g, const int8_t* b) {
  if (stream != kNoStream && (g & 1) == 0) {
    const char* p = reinterpret_cast<const char*>(b) + kStreamAhead;
    if (stream == kStreamNta) _mm_prefetch(p, _MM_HINT_NTA);
    else _mm_prefetch(p, _MM_HINT_T0);
  }
}

// Row tile of A widened to s16 once (then reused by every panel of the B chunk): for k-group g
// and row i, the 4 values (a[4g] .. a[4g+3]) at aw[(g * MR + i) * 4]. widen_span writes the
// groups [g0, g0 + ceil(n / 4)) of row i from the n bytes at ar (a partial last group is
// zero-padded; only those n bytes are read).
template <int MR>
inline void widen_span(const uint8_t* ar, int64_t nbytes, int i, int64_t g0, int16_t* aw) {
  const int64_t kg = nbytes / kKR;
  int64_t g = 0;
  for (; g + 4 <= kg; g += 4) {
    const __m256i w =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ar + g * kKR)));
    const __m128i lo = _mm256_castsi256_si128(w), hi = _mm256_extracti128_si256(w, 1);
    int16_t* d = aw + ((g0 + g) * MR + i) * 4;
    _mm_storel_epi64(reinterpret_cast<__m128i*>(d), lo);
    _mm_storeh_pd(reinterpret_cast<double*>(d + MR * 4), _mm_castsi128_pd(lo));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(d + 2 * MR * 4), hi);
    _mm_storeh_pd(reinterpret_cast<double*>(d + 3 * MR * 4), _mm_castsi128_pd(hi));
  }
  // 1..3 whole groups left (implicit-GEMM segments of KW x C_in bytes, e.g. 28 in an RGB stem
  // padded to 4 channels): 8 and 4 bytes at a time, not byte by byte (the byte loop was ~10% of
  // a 7x7 stem on the widened tile).
  if (g + 2 <= kg) {
    uint64_t x;
    std::memcpy(&x, ar + g * kKR, 8);
    const __m128i w = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(x)));
    int16_t* d = aw + ((g0 + g) * MR + i) * 4;
    _mm_storel_epi64(reinterpret_cast<__m128i*>(d), w);
    _mm_storeh_pd(reinterpret_cast<double*>(d + MR * 4), _mm_castsi128_pd(w));
    g += 2;
  }
  if (g < kg) {
    uint32_t x;
    std::memcpy(&x, ar + g * kKR, 4);
    const __m128i w = _mm_cvtepu8_epi16(_mm_cvtsi32_si128(static_cast<int>(x)));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(aw + ((g0 + g) * MR + i) * 4), w);
    ++g;
  }
  for (; g * kKR < nbytes; ++g) {
    for (int r = 0; r < kKR; ++r) {
      const int64_t k = g * kKR + r;
      aw[((g0 + g) * MR + i) * 4 + r] = k < nbytes ? static_cast<int16_t>(ar[k]) : int16_t{0};
    }
  }
}

template <int MR>
void widen_rows(const uint8_t* a, int64_t lda, int64_t K, int16_t* aw) {
  for (int i = 0; i < MR; ++i) widen_span<MR>(a + i * lda, K, i, 0, aw);
}

// Indirect rows (igemm): row i is the concatenation over s < nseg of the segs[s].len bytes (a
// multiple of kKR) at rows[i] + segs[s].a_off, widened at the K position segs[s].k.
template <int MR>
void widen_rows_ind(const uint8_t* const* rows, const IgemmSeg* segs, int64_t nseg,
                    int16_t* aw) {
  for (int i = 0; i < MR; ++i)
    for (int64_t s = 0; s < nseg; ++s)
      widen_span<MR>(rows[i] + segs[s].a_off, segs[s].len, i, segs[s].k / kKR, aw);
}

// The 4 s16 values of one row's k-group, repeated over the 4 64-bit lanes.
inline __m256i broadcast_aw(const int16_t* p) {
  int64_t x;
  std::memcpy(&x, p, 8);
  return _mm256_set1_epi64x(x);
}

inline __m256i load_b4(const int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Lane mask of the first `n` (0..8) int32 lanes, for fault-free partial loads.
inline __m256i lane_mask(int n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}

// acc + madd(a, b): s16 x s16 pairs summed into s32 lanes (VPMADDWD + VPADDD). Inline asm
// keeps the accumulator in its register: GCC 12 otherwise spills the 12 accumulators.
inline __m256i madd_acc(__m256i acc, __m256i a, __m256i b) {
  __m256i t;
  asm("vpmaddwd %[b], %[a], %[t]\n\tvpaddd %[t], %[acc], %[acc]"
      : [acc] "+x"(acc), [t] "=&x"(t)
      : [a] "x"(a), [b] "x"(b));
  return acc;
}

// store_tile's int32 (out_i32) and float (out_f32) outputs, `cols` (1..8) columns.
template <int MR>
inline void store_tile_wide(const __m256i* acc, int cols, int64_t m, int64_t n,
                            const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  const __m256i mk = lane_mask(cols);
  const int32_t* const row_sums = e.row_sums;  // local: the stores may alias e (requant_u8)
  const __m256i coff = _mm256_maskload_epi32(e.col_offsets + n, mk);
  __m256i zw = _mm256_setzero_si256();
  if (row_sums != nullptr) {
    zw = e.w_zp != nullptr ? _mm256_maskload_epi32(e.w_zp + n, mk)
                           : _mm256_set1_epi32(e.w_zp_scalar);
  }
  if (e.out_i32) {  // exact int32 accumulator (qgemm.h, out_i32)
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      __m256i v = _mm256_sub_epi32(acc[i], coff);
      if (row_sums != nullptr) {
        v = _mm256_sub_epi32(v, _mm256_mullo_epi32(zw, _mm256_set1_epi32(row_sums[m + i])));
      }
      _mm256_maskstore_epi32(reinterpret_cast<int*>(c + (m + i) * ldc) + n, mk, v);
    }
    return;
  }
  // (out_i32 above reads neither bias_q nor mult: they may be null there.)
  const __m256 bq = _mm256_maskload_ps(e.bias_q + n, mk);
  const __m256 mult = _mm256_maskload_ps(e.mult + n, mk);
  // float output (qgemm.h, out_f32): y = fma(acc, mult, bias), optional relu
  const bool relu = e.f32_relu;
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    __m256i v = _mm256_sub_epi32(acc[i], coff);
    if (row_sums != nullptr) {
      v = _mm256_sub_epi32(v, _mm256_mullo_epi32(zw, _mm256_set1_epi32(row_sums[m + i])));
    }
    __m256 f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), mult, bq);
    if (relu) f = _mm256_max_ps(_mm256_setzero_ps(), f);
    _mm256_maskstore_ps(reinterpret_cast<float*>(c + (m + i) * ldc) + n, mk, f);
  }
}

// One 8-column panel's column constants (col_offsets, w_zp when the tile has row sums, bias_q,
// mult) for the first `cols` (1..8) columns: plain loads for a full panel (a masked load is
// several micro-ops, and a small-K tile is mostly epilogue). Locals of the caller, not a struct:
// GCC kept a struct's members in memory (2-5% on 1x1 convs of 16..32 channels).
QPLUGIN_ALWAYS_INLINE void load_panel(const QGemmEpilogue& e, int64_t n, int cols, __m256i* coff,
                                      __m256i* zw, __m256* bq, __m256* mult) {
  const bool full = cols == kNR;
  const __m256i mk = lane_mask(cols);
  auto ld_i = [&](const int32_t* p) {
    return full ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                : _mm256_maskload_epi32(p, mk);
  };
  auto ld_f = [&](const float* p) { return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mk); };
  *coff = ld_i(e.col_offsets + n);
  *zw = _mm256_setzero_si256();
  if (e.row_sums != nullptr) {
    *zw = e.w_zp != nullptr ? ld_i(e.w_zp + n) : _mm256_set1_epi32(e.w_zp_scalar);
  }
  *bq = ld_f(e.bias_q + n);
  *mult = ld_f(e.mult + n);
}

// A panel row's requantization up to the rounding (u8 output): acc - col_offsets
// (- w_zp * row_sum), (+ bias) * mult, clamped to [lo, hi], rounded half to even. row_sums is
// the caller's local copy of e.row_sums: the u8 stores may alias e's fields, which would make
// the compiler reload and test e.row_sums once per row.
QPLUGIN_ALWAYS_INLINE __m256i requant_u8(__m256i v, __m256i coff, __m256i zw, __m256 bq,
                                         __m256 mult, __m256 lo, __m256 hi,
                                         const int32_t* row_sums, int64_t row) {
  v = _mm256_sub_epi32(v, coff);
  if (row_sums != nullptr) {
    v = _mm256_sub_epi32(v, _mm256_mullo_epi32(zw, _mm256_set1_epi32(row_sums[row])));
  }
  __m256 f = _mm256_mul_ps(_mm256_add_ps(_mm256_cvtepi32_ps(v), bq), mult);
  f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
  return _mm256_cvtps_epi32(f);
}

// Two vectors of rounded values (requant_u8) to 16 output bytes, q0's 8 then q1's 8, each
// + out_zp. Exact: the clamped values lie in [lo, hi] (|.| <= 255, an s16: VPACKSSDW does not
// saturate), VPADDW of out_zp gives [0, 255], which VPACKUSWB keeps. VPACKSSDW works per 128-bit
// half, so the bytes come out as q0[0..3] q1[0..3] q0[4..7] q1[4..7]; VPSHUFB restores the order.
inline __m128i narrow2_u8(__m256i q0, __m256i q1, __m128i zp16) {
  const __m256i w16 = _mm256_packs_epi32(q0, q1);
  const __m128i lo = _mm_add_epi16(_mm256_castsi256_si128(w16), zp16);
  const __m128i hi = _mm_add_epi16(_mm256_extracti128_si256(w16, 1), zp16);
  const __m128i order = _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15);
  return _mm_shuffle_epi8(_mm_packus_epi16(lo, hi), order);
}

// The first n (1..16) bytes of v to dst.
inline void store_bytes(uint8_t* dst, __m128i v, int n) {
  if (n == 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), v);
  } else if (n == 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), v);
  } else {
    alignas(16) uint8_t tmp[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), v);
    std::memcpy(dst, tmp, static_cast<size_t>(n));
  }
}

// Epilogue of an MR x 8 tile whose accumulators acc[i] hold columns 0..7 of row m + i: zero-point
// terms, requantization, clamp, narrow, store of the first `width` (1..8) columns. u8 output
// narrows two rows at a time (narrow2_u8). Always inlined, as store_tile2_u8: GCC called both
// (the accumulators through memory), and a 6 x 8 tile of a small-K call spent a third of its time
// in that call (Zen 1: the 3x3 s2 3 -> 32 stem at batch 32 5-8% faster inlined, a 3136 x 16 -> 96
// GEMM 5%, MobileNetV2 batch 8 1.3-3%; K >= 768: within 1%).
template <int MR>
QPLUGIN_ALWAYS_INLINE void store_tile(const __m256i* acc, int64_t width, int64_t m, int64_t n,
                                      const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  const int cols = static_cast<int>(width);  // 1..8
  if (e.out_i32 || e.out_f32) {
    store_tile_wide<MR>(acc, cols, m, n, e, c, ldc);
    return;
  }
  __m256i coff, zw;
  __m256 bq, mult;
  load_panel(e, n, cols, &coff, &zw, &bq, &mult);
  const int32_t* const row_sums = e.row_sums;
  const __m256 lo = _mm256_set1_ps(e.lo), hi = _mm256_set1_ps(e.hi);
  const __m128i zp16 = _mm_set1_epi16(static_cast<int16_t>(e.out_zp));
  auto rq = [&](__m256i v, int64_t row) __attribute__((always_inline)) {
    return requant_u8(v, coff, zw, bq, mult, lo, hi, row_sums, row);
  };
#pragma GCC unroll 8
  for (int i = 0; i < MR; i += 2) {
    const __m256i q0 = rq(acc[i], m + i);
    const __m256i q1 = i + 1 < MR ? rq(acc[i + 1], m + i + 1) : q0;
    const __m128i bytes = narrow2_u8(q0, q1, zp16);
    store_bytes(c + (m + i) * ldc + n, bytes, cols);
    if (i + 1 < MR) store_bytes(c + (m + i + 1) * ldc + n, _mm_unpackhi_epi64(bytes, bytes), cols);
  }
}

// Epilogue of an MR x 16 tile to u8 (two panels: acc0[i] columns n .. n + 7 of row m + i,
// acc1[i] the next width1 (1..8)): a row's two halves narrowed together and stored at once.
template <int MR>
QPLUGIN_ALWAYS_INLINE void store_tile2_u8(const __m256i* acc0, const __m256i* acc1,
                                          int64_t width1, int64_t m, int64_t n,
                                          const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  __m256i coff0, zw0, coff1, zw1;
  __m256 bq0, mult0, bq1, mult1;
  load_panel(e, n, kNR, &coff0, &zw0, &bq0, &mult0);
  load_panel(e, n + kNR, static_cast<int>(width1), &coff1, &zw1, &bq1, &mult1);
  const int32_t* const row_sums = e.row_sums;
  const __m256 lo = _mm256_set1_ps(e.lo), hi = _mm256_set1_ps(e.hi);
  const __m128i zp16 = _mm_set1_epi16(static_cast<int16_t>(e.out_zp));
  // The store width is decided once per tile, not per row (a branch per row cost ~5% of a
  // K = 16 tile).
  auto rows = [&](auto full) __attribute__((always_inline)) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m128i bytes =
          narrow2_u8(requant_u8(acc0[i], coff0, zw0, bq0, mult0, lo, hi, row_sums, m + i),
                     requant_u8(acc1[i], coff1, zw1, bq1, mult1, lo, hi, row_sums, m + i), zp16);
      uint8_t* dst = c + (m + i) * ldc + n;
      if constexpr (decltype(full)::value) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), bytes);
      } else {
        store_bytes(dst, bytes, static_cast<int>(kNR + width1));
      }
    }
  };
  if (width1 == kNR) {
    rows(std::true_type{});
  } else {
    rows(std::false_type{});
  }
}

#define QP_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

// The end of a widened tile (tile, tile_regions): row i's accumulators c<i>0 (columns 0..3) and
// c<i>1 (columns 4..7) hold two partial sums per column, [c0 c1 c4 c5 | c2 c3 c6 c7] after
// VPHADDD; VPERMQ puts them in column order for store_tile.
#define QP_WIDE_GATHER(i)                                                                   \
  if constexpr (MR > i) {                                                                   \
    acc[i] = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c##i##0, c##i##1), 0xD8);           \
  }
#define QP_WIDE_STORE                                                                       \
  __m256i acc[kMR];                                                                         \
  QP_ROWS(QP_WIDE_GATHER)                                                                   \
  store_tile<MR>(acc, width, m, n, e, c, ldc);

// One MR x 8 tile over the whole K (see the avx512vnni kernel for the argument convention).
// Accumulators c<i>0 (columns 0..3) and c<i>1 (columns 4..7) of row i hold two partial sums per
// column (k-pairs 01 and 23); the epilogue adds them.
// aw: the row tile widened by widen_rows<MR>; kgp: k-groups including a partial last one.
// pf, pf_lines: cache lines of the next B chunk to prefetch into L2 during this tile, spread over
// its k-loop (see gemm()); none when pf_lines = 0.
template <int MR>
void tile(const int16_t* aw, int64_t kgp, const int8_t* b, int64_t width, int64_t m, int64_t n,
          const QGemmEpilogue& e, uint8_t* c, int64_t ldc, const char* pf, int64_t pf_lines,
          int stream) {
#define QP_DECL(i) __m256i c##i##0 = _mm256_setzero_si256(), c##i##1 = c##i##0;
  QP_ROWS(QP_DECL)
#undef QP_DECL
  const int64_t bstride = width * kKR;
#define QP_ROW(i)                                                                           \
  if constexpr (MR > i) {                                                                   \
    const __m256i av = broadcast_aw(aw + i * 4);                                            \
    c##i##0 = madd_acc(c##i##0, av, b0);                                                    \
    c##i##1 = madd_acc(c##i##1, av, b1);                                                    \
  }
  PanelPrefetch next_panel(pf, pf_lines, kgp);
  for (int64_t g = 0; g < kgp; ++g) {
    next_panel.step();
    stream_prefetch(stream, g, b);
    const __m256i b0 = load_b4(b), b1 = load_b4(b + 16);
    QP_ROWS(QP_ROW)
    aw += MR * 4;
    b += bstride;
  }
#undef QP_ROW
  QP_WIDE_STORE
}

// n bytes at src zero-extended to s16 at dst (contiguous: 16 bytes in, one 32-byte store out).
inline void widen_contig(const uint8_t* src, int64_t n, int16_t* dst) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_cvtepu8_epi16(
                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = static_cast<int16_t>(src[i]);
}

// The widened tile's A for an implicit GEMM, widened by region instead of row tile by row tile.
// A conv's rows overlap: a 3x3x3 conv reads each input byte in up to 27 rows, and
// widen_rows_ind widens it once for each (8-byte stores, one per row k-group: on a Zen 1 ~16% of
// a full-range 16 -> 16 conv3d). Segment s of every row of the call lies in
// [rmin + a_off, rmax + a_off + len) (rmin, rmax: the lowest and highest row pointer); that
// region is widened once, contiguously, at buf + base[s], and row i's segment s is read in place
// at buf + base[s] + (rows[i] - rmin). Built only when the regions hold at most half the bytes
// that widening row tile by row tile would (rows far apart, e.g. a row block crossing a conv3d
// input plane, make them mostly bytes no row reads). qgemm.h's igemm contract keeps every row of
// a call in one buffer, so the bytes between two rows' reads are readable.
struct WideRegions {
  std::vector<int16_t>& buf = storage();  // reused by the calls of a thread
  std::vector<int64_t> base;
  const uint8_t* rmin = nullptr;
  bool built = false, ok = false;
  void build(const uint8_t* const* rows, const IgemmSeg* segs, int64_t nseg, int64_t M) {
    built = true;
    if (M <= 0 || nseg <= 0) return;
    const uint8_t* lo = rows[0];
    const uint8_t* hi = rows[0];
    for (int64_t i = 1; i < M; ++i) {
      lo = rows[i] < lo ? rows[i] : lo;
      hi = rows[i] > hi ? rows[i] : hi;
    }
    int64_t total = 0, covered = 0;
    base.resize(static_cast<size_t>(nseg));
    for (int64_t s = 0; s < nseg; ++s) {
      base[s] = total;
      total += (hi - lo) + segs[s].len;
      covered += segs[s].len;
    }
    if (2 * total > M * covered) return;
    buf.resize(static_cast<size_t>(total));
    for (int64_t s = 0; s < nseg; ++s)
      widen_contig(lo + segs[s].a_off, (hi - lo) + segs[s].len, buf.data() + base[s]);
    rmin = lo;
    ok = true;
  }
  static std::vector<int16_t>& storage() {
    thread_local std::vector<int16_t> v;
    return v;
  }
};

// tile<MR> on WideRegions: the same k-loop, row i's k-groups read from its place in segment s's
// widened region (k positions no segment covers count as zero bytes, as in the zero-filled
// widened copy, and are skipped).
template <int MR>
void tile_regions(const uint8_t* const* rows, const WideRegions& W, const IgemmSeg* segs,
                  int64_t nseg, const int8_t* b_panel, int64_t width, int64_t kgp, int64_t m,
                  int64_t n, const QGemmEpilogue& e, uint8_t* c, int64_t ldc, const char* pf,
                  int64_t pf_lines) {
#define QP_DECL(i)                                                                          \
  __m256i c##i##0 = _mm256_setzero_si256(), c##i##1 = c##i##0;                              \
  const int64_t r##i = MR > i ? rows[i] - W.rmin : 0;                                       \
  const int16_t* a##i = nullptr;
  QP_ROWS(QP_DECL)
#undef QP_DECL
  const int64_t bstride = width * kKR;
#define QP_ROW(i)                                                                           \
  if constexpr (MR > i) {                                                                   \
    const __m256i av = broadcast_aw(a##i);                                                  \
    c##i##0 = madd_acc(c##i##0, av, b0);                                                    \
    c##i##1 = madd_acc(c##i##1, av, b1);                                                    \
    a##i += kKR;                                                                            \
  }
#define QP_SEG(i) if constexpr (MR > i) a##i = seg + r##i;
  PanelPrefetch next_panel(pf, pf_lines, kgp);
  for (int64_t s = 0; s < nseg; ++s) {
    const int16_t* const seg = W.buf.data() + W.base[s];
    const int64_t sg = segs[s].len / kKR;
    QP_ROWS(QP_SEG)
    const int8_t* b = b_panel + segs[s].k * width;
    for (int64_t g = 0; g < sg; ++g) {
      next_panel.step();
      const __m256i b0 = load_b4(b), b1 = load_b4(b + 16);
      QP_ROWS(QP_ROW)
      b += bstride;
    }
  }
#undef QP_SEG
#undef QP_ROW
  QP_WIDE_STORE
}

// One MR x 8 tile with VPMADDUBSW (u8 x s8 pairs into s16) + VPMADDWD by ones (pairs of s16 into
// s32) + VPADDD: twice the multiply rate of the widened VPMADDWD tile on Zen 3 (measured: 78 vs
// 45 GMAC/s per core), exact only when no s16 pair sum a0*w0 + a1*w1 can leave [-32768, 32767].
// The caller proves that first (a_fits_7bit): with every A byte of the tile <= 127 and any s8
// weights, a0*w0 + a1*w1 lies in [2 * 127 * -128, 2 * 127 * 127] = [-32512, 32258]. The weights
// are the same packed 8-column panels (k-groups of 4 bytes per column, so one 32-byte load is 8
// columns x 4 k and each s32 lane ends as one column's 4-k sum: no VPHADDD). A is read in place
// (direct rows, or the segments of igemm); a partial last k-group is copied byte by byte.
inline __m256i ubsw_acc(__m256i acc, __m256i a, __m256i b, __m256i ones) {
  __m256i t;
  asm("vpmaddubsw %[b], %[a], %[t]\n\tvpmaddwd %[o], %[t], %[t]\n\tvpaddd %[t], %[acc], %[acc]"
      : [acc] "+x"(acc), [t] "=&x"(t)
      : [a] "x"(a), [b] "x"(b), [o] "x"(ones));
  return acc;
}

// The same with B from memory (the two-panel tile has no register left for it).
inline __m256i ubsw_acc_m(__m256i acc, __m256i a, const int8_t* b, __m256i ones) {
  __m256i t;
  asm("vpmaddubsw %[b], %[a], %[t]\n\tvpmaddwd %[o], %[t], %[t]\n\tvpaddd %[t], %[acc], %[acc]"
      : [acc] "+x"(acc), [t] "=&x"(t)
      : [a] "x"(a), [b] "m"(*reinterpret_cast<const __m256i*>(b)), [o] "x"(ones));
  return acc;
}

// acc - ubsw(raw) + ubsw(lo) + ubsw(hi) against the 32 bytes at b (an outlier's k-group, above).
inline __m256i ubsw_fix_m(__m256i acc, __m256i raw, __m256i lo, __m256i hi, const int8_t* b,
                          __m256i ones) {
  __m256i t, u, v;
  asm("vpmaddubsw %[b], %[raw], %[t]\n\tvpmaddubsw %[b], %[lo], %[u]\n\t"
      "vpmaddubsw %[b], %[hi], %[v]\n\tvpmaddwd %[o], %[t], %[t]\n\t"
      "vpmaddwd %[o], %[u], %[u]\n\tvpmaddwd %[o], %[v], %[v]\n\t"
      "vpsubd %[t], %[acc], %[acc]\n\tvpaddd %[v], %[u], %[u]\n\tvpaddd %[u], %[acc], %[acc]"
      : [acc] "+x"(acc), [t] "=&x"(t), [u] "=&x"(u), [v] "=&x"(v)
      : [raw] "x"(raw), [lo] "x"(lo), [hi] "x"(hi),
        [b] "m"(*reinterpret_cast<const __m256i*>(b)), [o] "x"(ones));
  return acc;
}

// An outlier's k-group that the k-loop took in a pair step (ubsw_octets_x6, mode-2 tiles): acc
// minus the step's term for the whole octet, recomputed by the same instructions on the same
// bytes (VPMADDUBSW of both groups, VPADDW, VPMADDWD by ones: saturated or wrapped s16 lanes give
// the same bits again, so the subtraction cancels it exactly in wrapping int32), plus the octet's
// exact products group by group as lo + hi (ubsw_fix_m's split, neither saturates; a group
// without outliers has hi = 0). r0, r1: the A bytes of the octet's groups; b0, b1: their 32
// bytes of the panel.
inline __m256i ubsw_pair_fix(__m256i acc, uint32_t r0, uint32_t r1, const int8_t* b0,
                             const int8_t* b1, __m256i ones) {
  const __m256i a0 = _mm256_set1_epi32(static_cast<int32_t>(r0));
  const __m256i a1 = _mm256_set1_epi32(static_cast<int32_t>(r1));
  const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0));
  const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1));
  const __m256i c127 = _mm256_set1_epi8(127);
  const __m256i t = _mm256_add_epi16(_mm256_maddubs_epi16(a0, w0), _mm256_maddubs_epi16(a1, w1));
  __m256i x = _mm256_sub_epi32(acc, _mm256_madd_epi16(t, ones));
  auto exact = [&](__m256i a, __m256i w) __attribute__((always_inline)) {
    const __m256i lo = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_min_epu8(a, c127), w), ones);
    const __m256i hi = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_subs_epu8(a, c127), w), ones);
    return _mm256_add_epi32(lo, hi);
  };
  x = _mm256_add_epi32(x, exact(a0, w0));
  return _mm256_add_epi32(x, exact(a1, w1));
}

// Where the pair-step k-loop took packed k-group g of a row: the first group of its octet when
// that octet was a pair step (flags 3), with *src at the octet's 8 A bytes of the row, or -1 when
// g was taken alone (an unflagged octet, a segment's or the row's odd last group, the partial last
// group). Octets start at each segment's first group (IND; `row` the row's pointer) or at group 0
// of the direct row `row` (kg its full k-groups), as in ubsw_octets_x6's callers.
template <bool IND>
QPLUGIN_ALWAYS_INLINE int64_t pair_octet(int64_t g, const uint8_t* row, const IgemmSeg* segs,
                                         int64_t nseg, int64_t kg, const uint8_t* flags,
                                         const uint8_t** src) {
  int64_t o;
  if constexpr (IND) {
    int64_t s = 0;
    while (s < nseg && !(g >= segs[s].k / kKR && g < (segs[s].k + segs[s].len) / kKR)) ++s;
    if (s == nseg) return -1;
    const int64_t s0 = segs[s].k / kKR, local = g - s0;
    if (local >= segs[s].len / kKR / 2 * 2) return -1;
    o = s0 + (local & ~int64_t{1});
    *src = row + segs[s].a_off + (local & ~int64_t{1}) * kKR;
  } else {
    (void)segs;
    (void)nseg;
    if (g >= kg / 2 * 2) return -1;
    o = g & ~int64_t{1};
    *src = row + o * kKR;
  }
  return flags[o] == 3 ? o : -1;
}

inline __m256i broadcast_a4(const uint8_t* p) {
  int32_t x;
  std::memcpy(&x, p, 4);
  return _mm256_set1_epi32(x);
}

inline __m256i broadcast_a_tail(const uint8_t* p, int kt) {
  int32_t x = 0;
  std::memcpy(&x, p, static_cast<size_t>(kt));
  return _mm256_set1_epi32(x);
}

// s16 words of 1 (loaded into ymm15 by ubsw_octets_x6).
alignas(32) const int16_t kOnes16[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

// Pair step (7-bit A only): the VPMADDUBSW products of two k-groups g, g + 1 are added in s16
// (VPADDW) before one VPMADDWD by ones and one VPADDD: 5 instead of 6 vector instructions and 3
// instead of 4 multiplies per 64 MACs. Exact when no s16 lane can leave [-32768, 32767]: a lane
// holds a0*w0 + a1*w1 + a4*w4 + a5*w5 (resp. k 2, 3, 6, 7 of the octet) of one column; with every
// a in [0, 127] it lies in [-127 * S-, 127 * S+], S+ / S- the sum of the positive parts / of the
// negative parts' magnitudes of those four weights, and the packing marks (g, g + 1) as a pair
// of a panel only where S+ <= 258 and S- <= 258 in every lane of all its columns (127 * 258 =
// 32766; kPairWeightSum). Each VPMADDUBSW alone is exact (two of the four terms), so is the
// VPADDW (the sum is in range) and everything after.
//
// ubsw_octets_x6: the k-loop of a 6-row tile on two full panels (b, b2: 32 bytes a k-group) over
// n octets (k-groups g, g + 1), then one more k-group when `odd`, in one asm statement:
// acc[0..11] (row i's panels at acc[2i], acc[2i + 1]) are loaded into ymm0..11 and stored back
// at the end, ymm15 holds the ones, ymm12..14 are the scratch. f: the pair flags of the octet's
// first group (pack_b: 3 = a pair in both panels), advanced by 2 an octet; an octet without the
// flag takes its two groups one at a time (VPMADDUBSW, VPMADDWD, VPADDD each, the plain tile's
// instructions). a<i>: row i's bytes of group g. pf: the next chunk's prefetch (while pf <
// pf_end: 4 lines an octet, pf += pf_step).
// One statement for the whole loop because GCC, given the 12 accumulators as operands of per-row
// statements (which leave exactly 4 registers), moved accumulators between registers and spilled
// one every step; with the ones from memory instead of ymm15 the pair step was no faster than
// the plain loop, and leaving the asm (accumulators to memory and back) between runs of pairs
// made 1x1 convs of 64 channels 30% slower (forced AVX2 on an AMX Xeon).
#define QP_PAIR_ROW(C, D, A)                                                                \
  "vpbroadcastd 4(%[" A "]), %%ymm12\n\tvpmaddubsw 32(%[b]), %%ymm12, %%ymm13\n\t"          \
  "vpmaddubsw 32(%[b2]), %%ymm12, %%ymm14\n\tvpbroadcastd (%[" A "]), %%ymm12\n\t"          \
  "vpmaddubsw (%[b]), %%ymm12, %%ymm12\n\tvpaddw %%ymm12, %%ymm13, %%ymm13\n\t"             \
  "vpmaddwd %%ymm15, %%ymm13, %%ymm13\n\tvpaddd %%ymm13, %%ymm" C ", %%ymm" C "\n\t"       \
  "vpbroadcastd (%[" A "]), %%ymm12\n\tvpmaddubsw (%[b2]), %%ymm12, %%ymm12\n\t"            \
  "vpaddw %%ymm12, %%ymm14, %%ymm14\n\tvpmaddwd %%ymm15, %%ymm14, %%ymm14\n\t"             \
  "vpaddd %%ymm14, %%ymm" D ", %%ymm" D "\n\tadd $8, %[" A "]\n\t"
// One k-group (at byte offset O of A's row, O * 8 of the panels) of a row, plain.
#define QP_ONE_ROW(C, D, A, O, OB)                                                          \
  "vpbroadcastd " O "(%[" A "]), %%ymm12\n\tvpmaddubsw " OB "(%[b]), %%ymm12, %%ymm13\n\t"  \
  "vpmaddubsw " OB "(%[b2]), %%ymm12, %%ymm14\n\tvpmaddwd %%ymm15, %%ymm13, %%ymm13\n\t"    \
  "vpaddd %%ymm13, %%ymm" C ", %%ymm" C "\n\tvpmaddwd %%ymm15, %%ymm14, %%ymm14\n\t"        \
  "vpaddd %%ymm14, %%ymm" D ", %%ymm" D "\n\t"
#define QP_SINGLE_ROW(C, D, A) QP_ONE_ROW(C, D, A, "", "") QP_ONE_ROW(C, D, A, "4", "32") \
  "add $8, %[" A "]\n\t"
#define QP_6ROWS(X)                                                                         \
  X("0", "1", "a0") X("2", "3", "a1") X("4", "5", "a2") X("6", "7", "a3") X("8", "9", "a4")   \
  X("10", "11", "a5")
#define QP_LAST_ROW(C, D, A) QP_ONE_ROW(C, D, A, "", "")
QPLUGIN_ALWAYS_INLINE void ubsw_octets_x6(__m256i* acc, const uint8_t*& a0, const uint8_t*& a1,
                                          const uint8_t*& a2, const uint8_t*& a3,
                                          const uint8_t*& a4, const uint8_t*& a5,
                                          const int8_t*& b, const int8_t*& b2,
                                          const uint8_t*& f, int64_t n, int64_t odd,
                                          const char*& pf, const char* pf_end,
                                          int64_t pf_step) {
  asm volatile(
      "vmovdqu (%[acc]), %%ymm0\n\tvmovdqu 32(%[acc]), %%ymm1\n\t"
      "vmovdqu 64(%[acc]), %%ymm2\n\tvmovdqu 96(%[acc]), %%ymm3\n\t"
      "vmovdqu 128(%[acc]), %%ymm4\n\tvmovdqu 160(%[acc]), %%ymm5\n\t"
      "vmovdqu 192(%[acc]), %%ymm6\n\tvmovdqu 224(%[acc]), %%ymm7\n\t"
      "vmovdqu 256(%[acc]), %%ymm8\n\tvmovdqu 288(%[acc]), %%ymm9\n\t"
      "vmovdqu 320(%[acc]), %%ymm10\n\tvmovdqu 352(%[acc]), %%ymm11\n\t"
      "vmovdqu %[o], %%ymm15\n\t"
      "test %[n], %[n]\n\tjz 5f\n\t"
      "1:\n\t"
      "cmp %[pfe], %[pf]\n\tjae 2f\n\t"
      "prefetcht1 (%[pf])\n\tprefetcht1 64(%[pf])\n\tprefetcht1 128(%[pf])\n\t"
      "prefetcht1 192(%[pf])\n\tadd %[pfs], %[pf]\n\t"
      "2:\n\t"
      "cmpb $3, (%[f])\n\tjne 3f\n\t"
      QP_6ROWS(QP_PAIR_ROW)
      "jmp 4f\n\t"
      "3:\n\t"
      QP_6ROWS(QP_SINGLE_ROW)
      "4:\n\t"
      "add $64, %[b]\n\tadd $64, %[b2]\n\tadd $2, %[f]\n\t"
      "dec %[n]\n\tjnz 1b\n\t"
      "5:\n\t"
      "cmpq $0, %[odd]\n\tje 6f\n\t"
      QP_6ROWS(QP_LAST_ROW)
      "6:\n\t"
      "vmovdqu %%ymm0, (%[acc])\n\tvmovdqu %%ymm1, 32(%[acc])\n\t"
      "vmovdqu %%ymm2, 64(%[acc])\n\tvmovdqu %%ymm3, 96(%[acc])\n\t"
      "vmovdqu %%ymm4, 128(%[acc])\n\tvmovdqu %%ymm5, 160(%[acc])\n\t"
      "vmovdqu %%ymm6, 192(%[acc])\n\tvmovdqu %%ymm7, 224(%[acc])\n\t"
      "vmovdqu %%ymm8, 256(%[acc])\n\tvmovdqu %%ymm9, 288(%[acc])\n\t"
      "vmovdqu %%ymm10, 320(%[acc])\n\tvmovdqu %%ymm11, 352(%[acc])"
      : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [a4] "+r"(a4),
        [a5] "+r"(a5), [b] "+r"(b), [b2] "+r"(b2), [f] "+r"(f), [n] "+r"(n), [pf] "+r"(pf)
      : [acc] "r"(acc), [odd] "m"(odd), [pfe] "m"(pf_end), [pfs] "m"(pf_step),
        [o] "m"(*reinterpret_cast<const __m256i*>(kOnes16))
      : "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
        "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}
#undef QP_LAST_ROW
#undef QP_6ROWS
#undef QP_SINGLE_ROW
#undef QP_ONE_ROW
#undef QP_PAIR_ROW

// A byte of A above 127 in a row tile that otherwise fits in 7 bits ("outlier"): the tile runs its
// VPMADDUBSW k-loop on A in place, so the k-groups (4 bytes of a row) holding an outlier may have
// saturated an s16 pair sum. Each such k-group ("entry") is then corrected after the k-loop with
// the same instruction sequence: minus its in-loop term ubsw(a), plus ubsw(lo) + ubsw(hi), where
// lo = min(a, 127) and hi = a -sat 127 bytewise (a = lo + hi). The subtraction cancels the in-loop
// term exactly (the same VPMADDUBSW + VPMADDWD on the same bytes, wrapping s32); lo and hi cannot
// saturate: lo * w pair sums lie in [2 * 127 * -128, 2 * 127 * 127] and hi <= 128 gives
// [2 * 128 * -128, 2 * 128 * 127] = [-32768, 32512]. Entries are grouped by row (HiRows), so a
// row's corrections go into its own accumulator register. (Before, each outlier byte was
// collected by a branch into a list, A copied clamped, and each outlier took a VPMULLD and a
// read-modify-write of an accumulator array in memory: with 2% of the bytes above 127 a
// 16-column GEMM ran 4.5x slower than on clean rows, and 3x slower than the widened tile.)
struct HiRows {
  const int32_t* g;   // k-group in the packed K
  const uint32_t* lo;  // its 4 bytes clamped to 127
  const uint32_t* hi;  // its 4 bytes -sat 127 (row i: entries [rows[i], rows[i + 1]))
  int32_t rows[kMR + 1];
};

// IND: row i of A is the concatenation over s < nseg of the segs[s].len (a multiple of 4) bytes
// at rows[i] + segs[s].a_off, against the panels' K positions from segs[s].k; otherwise
// a + i * lda, K bytes.
// NP = 2: two adjacent panels at once (16 columns; the first full, the second `width2` wide at
// b2), so each A broadcast feeds two multiplies; 12 accumulators, B read from memory operands.
// PAIRS (6-row 7-bit tiles on two full panels, mode 1 or 2): the k-loop runs in
// ubsw_octets_x6, whose octets flagged by the packing (`flags`: the first panel's pair flags,
// indexed by packed k-group) take the pair step; a mode-2 tile's outliers are corrected after it
// octet by octet where their group was paired (ubsw_pair_fix).
template <int MR, bool IND, int NP, bool PAIRS>
QPLUGIN_ALWAYS_INLINE void tile_ubsw(const uint8_t* a, int64_t lda, int64_t K,
                                     const uint8_t* const* rows, const IgemmSeg* segs,
                                     int64_t nseg, const int8_t* b, int64_t width, int64_t m,
                                     int64_t n, const QGemmEpilogue& e, uint8_t* c, int64_t ldc,
                                     const char* pf, int64_t pf_lines, const HiRows* hr,
                                     const int8_t* b2, int64_t width2,
                                     const uint8_t* flags, int stream) {
  static_assert(!PAIRS || (MR == kMR && NP == 2), "pair steps: 6-row two-panel tiles only");
  const int8_t* const b_panel = b;
  const int8_t* const b2_panel = b2;
  const int64_t bstride2 = width2 * kKR;
#define QP_DECL(i)                                                                          \
  __m256i c##i = _mm256_setzero_si256(), d##i = c##i;                                       \
  const uint8_t* a##i = IND ? nullptr : (MR > i ? a + i * lda : a);
  QP_ROWS(QP_DECL)
#undef QP_DECL
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t bstride = width * kKR;
  const int64_t kg = K / kKR;
  const int kt = static_cast<int>(K % kKR);
// Row i's k-group (AV: its 4 bytes broadcast) into its accumulators.
#define QP_ACC(i, AV)                                                                       \
  if constexpr (MR > i) {                                                                   \
    const __m256i av = AV;                                                                  \
    if constexpr (NP == 1) {                                                                \
      c##i = ubsw_acc(c##i, av, b0, ones);                                                  \
    } else {                                                                                \
      c##i = ubsw_acc_m(c##i, av, b, ones);                                                 \
      d##i = ubsw_acc_m(d##i, av, b2, ones);                                                \
    }                                                                                       \
  }
#define QP_STEP(i) QP_ACC(i, broadcast_a4(a##i))
#define QP_TAIL(i) QP_ACC(i, broadcast_a_tail(a##i, kt))
#define QP_LOADB const __m256i b0 = NP == 1 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)) : ones;
#define QP_ADVANCE(i) a##i += kKR;
// One k-group of every row, then A and B advanced to the next.
#define QP_KGROUP                                                                           \
  QP_LOADB                                                                                  \
  (void)b0;                                                                                 \
  QP_ROWS(QP_STEP)                                                                          \
  QP_ROWS(QP_ADVANCE)                                                                       \
  b += bstride;                                                                             \
  b2 += bstride2;
  if constexpr (PAIRS) {
    alignas(32) __m256i acc12[12];
    for (auto& v : acc12) v = _mm256_setzero_si256();
    if constexpr (IND) {
      for (int64_t s = 0; s < nseg; ++s) {
        const int64_t so = segs[s].a_off, sg = segs[s].len / kKR;
#define QP_SEG(i) a##i = rows[i] + so;
        QP_ROWS(QP_SEG)
#undef QP_SEG
        b = b_panel + segs[s].k * width;
        b2 = b2_panel + segs[s].k * width2;
        const uint8_t* f = flags + segs[s].k / kKR;
        const char* no_pf = nullptr;
        ubsw_octets_x6(acc12, a0, a1, a2, a3, a4, a5, b, b2, f, sg / 2, sg % 2, no_pf, nullptr,
                       0);
      }
    } else {
      PanelPrefetch next_panel(pf, pf_lines, kg);
      const int64_t lpg = next_panel.lines_per_group;
      const uint8_t* f = flags;
      ubsw_octets_x6(acc12, a0, a1, a2, a3, a4, a5, b, b2, f, kg / 2, kg % 2, next_panel.pf,
                     next_panel.end, 128 * (lpg < 2 ? lpg : 2));
      b += (kg % 2) * bstride;  // the odd last group (the asm leaves b at it)
      b2 += (kg % 2) * bstride2;
#define QP_ODD(i) a##i += (kg % 2) * kKR;
      QP_ROWS(QP_ODD)
#undef QP_ODD
    }
    c0 = acc12[0]; d0 = acc12[1]; c1 = acc12[2]; d1 = acc12[3]; c2 = acc12[4]; d2 = acc12[5];
    c3 = acc12[6]; d3 = acc12[7]; c4 = acc12[8]; d4 = acc12[9]; c5 = acc12[10]; d5 = acc12[11];
    if constexpr (!IND) {
      if (kt != 0) {  // the partial last group, zero-padded: one plain step
        QP_LOADB
        (void)b0;
        QP_ROWS(QP_TAIL)
      }
    }
  } else if constexpr (IND) {
    for (int64_t s = 0; s < nseg; ++s) {
      const int64_t so = segs[s].a_off, sg = segs[s].len / kKR;
#define QP_SEG(i) a##i = rows[MR > i ? i : 0] + so;
      QP_ROWS(QP_SEG)
#undef QP_SEG
      b = b_panel + segs[s].k * width;
      b2 = b2_panel + segs[s].k * width2;
      for (int64_t g = 0; g < sg; ++g) {
        QP_KGROUP
      }
    }
  } else {
    PanelPrefetch next_panel(pf, pf_lines, kg);
    for (int64_t g = 0; g < kg; ++g) {
      next_panel.step();
      stream_prefetch(stream, g, b);
      if constexpr (NP == 2) stream_prefetch(stream, g, b2);
      // A partial panel (width < 8) is stored at its own width: the 32-byte load over-reads
      // into the next k-group or the slack (qgemm.h); those lanes are never stored.
      QP_KGROUP
    }
    if (kt != 0) {
      QP_LOADB
      (void)b0;
      QP_ROWS(QP_TAIL)
    }
  }
  // The outliers' k-groups (HiRows): B of each from the panel as the k-loop reads it. With pair
  // steps, an entry in a paired octet corrects the octet (ubsw_pair_fix), once when both of its
  // groups hold outliers (a row's entries ascend within a segment, so those two are adjacent).
  if (hr != nullptr) {
#define QP_HI(i)                                                                            \
  if constexpr (MR > i) {                                                                   \
    int64_t done = -1;                                                                      \
    for (int32_t j = hr->rows[i]; j < hr->rows[i + 1]; ++j) {                               \
      const int64_t g = hr->g[j];                                                           \
      if constexpr (PAIRS) {                                                                \
        const uint8_t* src = nullptr;                                                       \
        const int64_t o = pair_octet<IND>(g, IND ? rows[i] : a + i * lda, segs, nseg, kg,   \
                                          flags, &src);                                     \
        if (o == done && o >= 0) continue;                                                  \
        if (o >= 0) {                                                                       \
          uint32_t r0, r1;                                                                  \
          std::memcpy(&r0, src, 4);                                                         \
          std::memcpy(&r1, src + 4, 4);                                                     \
          c##i = ubsw_pair_fix(c##i, r0, r1, b_panel + o * bstride,                         \
                               b_panel + (o + 1) * bstride, ones);                          \
          d##i = ubsw_pair_fix(d##i, r0, r1, b2_panel + o * bstride2,                       \
                               b2_panel + (o + 1) * bstride2, ones);                        \
          done = o;                                                                         \
          continue;                                                                         \
        }                                                                                   \
      }                                                                                     \
      const __m256i lo = _mm256_set1_epi32(static_cast<int32_t>(hr->lo[j]));                \
      const __m256i hi = _mm256_set1_epi32(static_cast<int32_t>(hr->hi[j]));                \
      const __m256i raw = _mm256_add_epi8(lo, hi);                                          \
      c##i = ubsw_fix_m(c##i, raw, lo, hi, b_panel + g * bstride, ones);                    \
      if constexpr (NP == 2) d##i = ubsw_fix_m(d##i, raw, lo, hi, b2_panel + g * bstride2, ones); \
    }                                                                                       \
  }
    QP_ROWS(QP_HI)
#undef QP_HI
  }
#undef QP_KGROUP
#undef QP_ADVANCE
#undef QP_TAIL
#undef QP_STEP
#undef QP_ACC
#undef QP_LOADB
  __m256i acc[kMR], acc2[kMR];  // acc2: the second panel's (NP = 2)
#define QP_GATHER(i) \
  if constexpr (MR > i) {  \
    acc[i] = c##i;         \
    acc2[i] = d##i;        \
  }
  QP_ROWS(QP_GATHER)
#undef QP_GATHER
  if constexpr (NP == 2) {
    if (!e.out_i32 && !e.out_f32) {  // u8 output: the two panels narrowed together
      store_tile2_u8<MR>(acc, acc2, width2, m, n, e, c, ldc);
    } else {
      store_tile<MR>(acc, width, m, n, e, c, ldc);
      store_tile<MR>(acc2, width2, m, n + kNR, e, c, ldc);
    }
  } else {
    store_tile<MR>(acc, width, m, n, e, c, ldc);
  }
}
#undef QP_ROWS

// The outliers' k-groups of a call's mode-2 tiles (HiRows), structure of arrays; n entries used.
struct HiBuf {
  std::vector<int32_t> g;
  std::vector<uint32_t> lo, hi;
  size_t n = 0;
  void reserve_more(size_t extra) {  // room for `extra` more entries
    if (g.size() < n + extra) {
      g.resize(2 * (n + extra));
      lo.resize(g.size());
      hi.resize(g.size());
    }
  }
};

// Appends to hb the k-groups among the n bytes at p (k0, the packed K position of p[0], a multiple
// of 4) that hold a byte above 127, as the k-loop reads them (a partial last group zero-padded).
// A 32 or 16-byte block without such a byte is one test; hb needs room for n / 4 + 1 entries.
// Returns false as soon as hb.n passes `stop` (the caller then drops this tile's entries),
// without scanning the rest: full-range rows stop within their first blocks (the
// whole-row collection of each tile's first row was ~10% of a k2s2 transposed conv whose GEMM
// calls are 56 rows each, so that kDenseRun never took over).
inline bool collect_hi(const uint8_t* p, int64_t n, int64_t k0, HiBuf& hb, size_t stop) {
  size_t cnt = hb.n;
  const int32_t g0 = static_cast<int32_t>(k0 / kKR);
  const __m128i c127 = _mm_set1_epi8(127);
  auto add = [&](int64_t k, uint32_t raw) {  // the k-group at byte k
    const __m128i v = _mm_cvtsi32_si128(static_cast<int>(raw));
    hb.g[cnt] = g0 + static_cast<int32_t>(k / kKR);
    hb.lo[cnt] = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_min_epu8(v, c127)));
    hb.hi[cnt] = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_subs_epu8(v, c127)));
    ++cnt;
  };
  auto groups = [&](uint32_t mk, int64_t k) {  // mk: the high bits of the block at p + k
    while (mk != 0) {
      const int j = __builtin_ctz(mk) & ~(kKR - 1);
      uint32_t raw;
      std::memcpy(&raw, p + k + j, 4);
      add(k + j, raw);
      mk &= ~(0xFu << j);
    }
  };
  int64_t k = 0;
  for (; k + 32 <= n; k += 32) {
    const uint32_t mk = static_cast<uint32_t>(
        _mm256_movemask_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + k))));
    if (mk != 0) {
      groups(mk, k);
      if (cnt > stop) {
        hb.n = cnt;
        return false;
      }
    }
  }
  for (; k + 16 <= n; k += 16) {
    const uint32_t mk = static_cast<uint32_t>(
        _mm_movemask_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + k))));
    if (mk != 0) groups(mk, k);
  }
  for (; k < n; k += kKR) {  // the last groups (a direct row's last one may be partial)
    uint32_t raw = 0;
    const int64_t len = n - k < kKR ? n - k : kKR;
    std::memcpy(&raw, p + k, static_cast<size_t>(len));
    if ((raw & 0x80808080u) != 0) add(k, raw);
  }
  hb.n = cnt;
  return cnt <= stop;
}

// The largest byte of A seen (VPMAXUB, no branch per row): the common case of a row tile, no
// byte above the bound, costs one test per tile. Before, each row's 32-byte blocks took a branch
// (collect_outliers), which made the scan 40% of a 1x1 conv of 32 -> 16 channels at K = 32
// (prefetching the rows did not help: the cost was the branches, not memory).
struct MaxBytes {
  __m256i v = _mm256_setzero_si256();
  __m128i v16 = _mm_setzero_si128();
  // The n bytes at p (only those are read): whole 32-, 16- or 8-byte loads, the last one
  // overlapping the one before (a max does not mind bytes seen twice), no loop below 32 bytes.
  // Implicit-GEMM rows are read in segments of KW x C_in bytes (24 in an RGB 7x7 stem); a word
  // loop with its tail branch made the scan 30% of such a conv's GEMM time where the input has a
  // few bytes above 127 (then every row tile is scanned).
  QPLUGIN_ALWAYS_INLINE void add(const uint8_t* p, int64_t n) {
    if (n >= 32) {
      int64_t k = 0;
      for (; k + 32 <= n; k += 32)
        v = _mm256_max_epu8(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + k)));
      if (k < n)
        v = _mm256_max_epu8(
            v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + n - 32)));
    } else if (n >= 16) {
      v16 = _mm_max_epu8(v16, _mm_max_epu8(
                                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)),
                                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + n - 16))));
    } else if (n >= 8) {
      v16 = _mm_max_epu8(v16, _mm_max_epu8(
                                  _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)),
                                  _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + n - 8))));
    } else {
      uint8_t m = 0;
      for (int64_t k = 0; k < n; ++k) m = p[k] > m ? p[k] : m;
      v16 = _mm_max_epu8(v16, _mm_cvtsi32_si128(m));
    }
  }
  int max() const {
    __m128i m = _mm_max_epu8(v16, _mm_max_epu8(_mm256_castsi256_si128(v),
                                               _mm256_extracti128_si256(v, 1)));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 8));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 4));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 2));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 1));
    return _mm_cvtsi128_si32(m) & 0xff;
  }
};

using TileFn = void (*)(const int16_t*, int64_t, const int8_t*, int64_t, int64_t, int64_t,
                        const QGemmEpilogue&, uint8_t*, int64_t, const char*, int64_t, int);
using WidenFn = void (*)(const uint8_t*, int64_t, int64_t, int16_t*);
using WidenIndFn = void (*)(const uint8_t* const*, const IgemmSeg*, int64_t, int16_t*);
const TileFn kTiles[kMR] = {&tile<1>, &tile<2>, &tile<3>, &tile<4>, &tile<5>, &tile<6>};
using TileRegionsFn = void (*)(const uint8_t* const*, const WideRegions&, const IgemmSeg*,
                               int64_t, const int8_t*, int64_t, int64_t, int64_t, int64_t,
                               const QGemmEpilogue&, uint8_t*, int64_t, const char*, int64_t);
const TileRegionsFn kTilesRegions[kMR] = {&tile_regions<1>, &tile_regions<2>, &tile_regions<3>,
                                          &tile_regions<4>, &tile_regions<5>, &tile_regions<6>};
const WidenFn kWiden[kMR] = {&widen_rows<1>, &widen_rows<2>, &widen_rows<3>,
                             &widen_rows<4>, &widen_rows<5>, &widen_rows<6>};
const WidenIndFn kWidenInd[kMR] = {&widen_rows_ind<1>, &widen_rows_ind<2>, &widen_rows_ind<3>,
                                   &widen_rows_ind<4>, &widen_rows_ind<5>, &widen_rows_ind<6>};

// Columns of B per pass over the rows of A: the packed chunk (Kp x nc bytes) stays in L2 (512 KiB
// on Zen 2/3, 256 KiB on Haswell..Comet Lake) beside the widened row tile (MR x Kp x 2 bytes)
// while every row tile streams over it. Without it each row tile re-read all of B from L3/DRAM
// (M = 256, 4096 x 4096: 16 MiB per row tile).
constexpr int64_t kBChunkBytes = 192 * 1024;
// Packed weights above this size get software prefetch of the next chunk (as avx512vnni).
constexpr int64_t kPrefetchMinBytes = 4 * 1024 * 1024;
// When the columns take more than one chunk, the widened row tiles (M x Kp s16) are kept for all
// chunks up to this size, so A is widened once, not once per chunk: at K = 4096 a chunk is 48
// columns, and widening a row tile again for each of them was 12% of M = 256, 4096 x 4096.
constexpr int64_t kKeepWidenedBytes = 16 * 1024 * 1024;

// The largest sum of positive parts (and of negative parts' magnitudes) of the four weights an
// s16 lane of the pair step meets: 127 * 258 = 32766 <= 32767 (and >= -32768); 259 would not fit.
constexpr int kPairWeightSum = 258;
// Shortest k-loop (in k-groups: the row length, or each implicit-GEMM segment) that takes
// ubsw_octets_x6: it moves the 12 accumulators through memory once per call.
constexpr int64_t kPairMinGroups = 16;
// Mode 3 (SignAux, SignRow): K (in k-groups) at least, and at most 1 in kSignFixDiv k-groups
// corrected.
constexpr int64_t kSignMinGroups = 32;
constexpr int64_t kSignFixDiv = 16;

// The pair flags that pack_b appends to the packed weights, after the slack (qgemm.h's layout is
// otherwise unchanged, and unpacking never reads them): for panel p (8 columns) and packed
// k-group g, flags[p * kg + g] has bit 0 set when (g, g + 1) is a pair of panel p (in every s16
// lane of every column the four weights' positive parts sum to at most kPairWeightSum and so do
// their negative parts' magnitudes, and g + 1 is a group of the packing), and bit 1 when it is
// one of panel p + 1: 3 means a pair step on the panels p, p + 1 (ubsw_octets_x6). Then one byte
// per panel: 1 when the octets (0, 1), (2, 3), ... flagged 3 for panels p, p + 1 are at least
// half of them (else those panels keep the plain loop).
struct PairFlags {
  const uint8_t* flags;
  const uint8_t* worth_;
  PairFlags(const uint8_t* f, int64_t N, int64_t Kp)
      : flags(f), worth_(f == nullptr ? nullptr : f + (N + kNR - 1) / kNR * (Kp / kKR)) {}
  bool worth(int64_t p) const { return worth_[p] != 0; }
  // None below kPairMinGroups k-groups or two full panels (no tile could take a pair step), so
  // they cost at most ~5% of the weight bytes.
  static int64_t bytes(int64_t K, int64_t N) {
    const int64_t panels = (N + kNR - 1) / kNR, kg = generic::round_up(K, kKR) / kKR;
    return kg >= kPairMinGroups && N >= 2 * kNR ? panels * kg + panels : 0;
  }
  static uint8_t* of(int8_t* packed, int64_t N, int64_t Kp) {
    return reinterpret_cast<uint8_t*>(packed + N * Kp + kPackSlack);
  }
};

// Mode 3, the sign tile: one full-range row (a call of one row, K >= kSignMinGroups k-groups: a
// GEMV-like linear). With an offset o, sum_k a w = sum_k a' w + o * colsum, a' = a - o. Per
// byte, a' * w = |w| * (a' * sign(w)): VPABSB gives |w| in [0, 128] (|-128| = 0x80, 128 as the
// u8 operand) and VPSIGNB(a', w) gives a' * sign(w) (0 where w = 0), exact when a' lies in
// [-127, 127] (VPSIGNB wraps only -128). VPMADDUBSW(|w|, a' * sign(w)) then forms exact pair
// sums: each product is at most 128 * 127 = 16256 in magnitude, a pair at most 32512. So o
// must put a' in [-127, 127]: o = 128 when no byte is 0, o = 127 when none is 255, and when
// both occur, o = 128 with the bytes 0 taken as a' = -127: each such byte's product is then w
// short of -128 w, and the k-groups holding them (few: else the widened tile) are corrected
// after the k-loop by - sum over those bytes of w (VPMADDUBSW of the 0/1 bytes, exact). One
// 32-byte load of B per k-group and panel, as the 7-bit tile (the widened tile loads it as two
// VPMOVSXBW halves; its one-row calls streamed 6-18% slower on a Zen 1). pack_b appends the
// column sums for it after the pair flags ("SignAux": int32 colsum[panels * 8], 0 past N,
// 4-byte aligned).
struct SignAux {
  static bool wanted(int64_t K) { return generic::round_up(K, kKR) / kKR >= kSignMinGroups; }
  static int64_t bytes(int64_t K, int64_t N) {
    return wanted(K) ? 3 + 4 * ((N + kNR - 1) / kNR * kNR) : 0;
  }
  static int32_t* of(int8_t* packed, int64_t K, int64_t N) {
    const int64_t Kp = generic::round_up(K, kKR);
    const int64_t off = N * Kp + kPackSlack + PairFlags::bytes(K, N);
    return reinterpret_cast<int32_t*>(packed + (off + 3) / 4 * 4);
  }
  static void pack(const int32_t* col_sums, int64_t N, int32_t* aux) {
    std::fill(aux, aux + (N + kNR - 1) / kNR * kNR, 0);
    std::copy(col_sums, col_sums + N, aux);
  }
};

// Mode 4: VPMADDUBSW on A in place with bytes above 127, none above this packing's bound t (no
// pair steps). A VPMADDUBSW pair a0 w0 + a1 w1 with 0 <= a0, a1 <= t lies in [-t * neg, t * pos],
// pos (neg) the pair's positive weights' sum (negative weights' magnitudes' sum); it cannot
// saturate when t * pos <= 32767 and t * neg <= 32768 for every column and every pair of k
// positions (2j, 2j + 1) of every k-group. pack_b stores the largest such t (at most 255) in one
// byte after the sign aux. Always >= 127 (127 * 255 <= 32767 and 127 * 256 <= 32768: mode 1's
// bound for any weights); calibrated activations (torch.ao's reduce_range) overshoot 127 by a
// few codes (128, 129 in MobileNetV2's expand convs: 1% of the bytes of some layers, which made
// most row tiles mode 2 or 0), while t is ~150-250 for weights without a pair of two near-extreme
// weights of the same sign.
struct UbswBound {
  static int64_t bytes(int64_t, int64_t) { return 1; }
  static uint8_t* of(int8_t* packed, int64_t K, int64_t N) {
    return reinterpret_cast<uint8_t*>(packed + generic::packed_b_bytes<kNR, kKR>(K, N) +
                                      PairFlags::bytes(K, N) + SignAux::bytes(K, N));
  }
  // From the packing's panels (Kp = K rounded up to kKR).
  static uint8_t compute(const int8_t* packed, int64_t Kp, int64_t N) {
    int pos = 0, neg = 0;
    const int64_t kg = Kp / kKR;
    for (int64_t p0 = 0; p0 < N; p0 += kNR) {
      const int64_t width = N - p0 < kNR ? N - p0 : kNR;
      const int8_t* pb = packed + p0 * Kp;
      for (int64_t i = 0; i < kg * width * kKR; i += 2) {
        const int w0 = pb[i], w1 = pb[i + 1];
        pos = std::max(pos, std::max(w0, 0) + std::max(w1, 0));
        neg = std::max(neg, std::max(-w0, 0) + std::max(-w1, 0));
      }
    }
    int t = 255;
    if (pos > 0) t = std::min(t, 32767 / pos);
    if (neg > 0) t = std::min(t, 32768 / neg);
    return static_cast<uint8_t>(t);
  }
};

int64_t packed_b_bytes(int64_t K, int64_t N) {
  return generic::packed_b_bytes<kNR, kKR>(K, N) + PairFlags::bytes(K, N) + SignAux::bytes(K, N) +
         UbswBound::bytes(K, N);
}

void pack_b(const int8_t* w, int64_t ldw, int64_t K, int64_t N, int8_t* packed,
            int32_t* col_sums) {
  generic::pack_b<kNR, kKR>(w, ldw, K, N, packed, col_sums);
  if (SignAux::wanted(K)) SignAux::pack(col_sums, N, SignAux::of(packed, K, N));
  const int64_t Kp = generic::round_up(K, kKR), kg = Kp / kKR;
  *UbswBound::of(packed, K, N) = UbswBound::compute(packed, Kp, N);
  if (PairFlags::bytes(K, N) == 0) return;
  uint8_t* flags = PairFlags::of(packed, N, Kp);
  const int64_t panels = (N + kNR - 1) / kNR;
  uint8_t* worth = flags + panels * kg;
  // Bit 0 of every panel first.
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t p0 = p * kNR, width = N - p0 < kNR ? N - p0 : kNR;
    const int8_t* pb = packed + p0 * Kp;  // group g, column c, byte r at pb[(g * width + c) * 4 + r]
    for (int64_t g = 0; g < kg; ++g) {
      bool ok = g + 1 < kg;
      for (int64_t col = 0; ok && col < width; ++col) {
        const int8_t* x = pb + (g * width + col) * kKR;
        const int8_t* y = pb + ((g + 1) * width + col) * kKR;
        for (int j = 0; j < 2 && ok; ++j) {
          const int v[4] = {x[2 * j], x[2 * j + 1], y[2 * j], y[2 * j + 1]};
          int pos = 0, neg = 0;
          for (int t = 0; t < 4; ++t) {
            if (v[t] > 0) pos += v[t];
            else neg -= v[t];
          }
          ok = pos <= kPairWeightSum && neg <= kPairWeightSum;
        }
      }
      flags[p * kg + g] = ok ? 1 : 0;
    }
  }
  for (int64_t p = 0; p < panels; ++p) {
    int64_t both = 0;
    for (int64_t g = 0; g < kg; ++g) {
      if (p + 1 < panels && (flags[(p + 1) * kg + g] & 1) != 0) flags[p * kg + g] |= 2;
      if (g % 2 == 0 && flags[p * kg + g] == 3) ++both;
    }
    worth[p] = kg >= 2 && 2 * both >= kg / 2 ? 1 : 0;
  }
}

// A row tile's VPMADDUBSW calls over the columns [c0, c1) of a B chunk: two panels at a time
// while a full panel and another follow, one otherwise. One call per row tile and chunk (the
// tiles are inlined here): with a short K (1x1 convs of 16..32 channels) a tile's k-loop is a few
// groups, and a call per panel pair (19 arguments, most through the stack) cost as much again.
// pf_base / pf_total / steps / step: the next chunk's L2 prefetch, spread over the chunk's panel
// calls as before (run_chunks).
struct UbswRowTile {
  const uint8_t* flags;  // the packing's pair flags (PairFlags), or null: no pair steps
  const uint8_t* a;  // direct rows (IND: null)
  int64_t lda, K;    // K: the row length (IND: unused)
  const uint8_t* const* rows;
  const IgemmSeg* segs;
  int64_t nseg;
  const int8_t* packed_b;
  int64_t Kp, N, m0;
  const QGemmEpilogue* e;
  uint8_t* c;
  int64_t ldc;
  const HiRows* hr;  // mode 2: the outliers' rest (else null)
  int stream;        // the call's only row tile, large B: stream_prefetch's Stream (not for
                     // pair steps)
};

template <int MR, bool IND>
void ubsw_panels(const UbswRowTile& T, int64_t c0, int64_t c1, const char* pf_base,
                 int64_t pf_total, int64_t steps, int64_t* step) {
  const int64_t kg = T.Kp / kKR;
  const PairFlags pf(T.flags, T.N, T.Kp);
  // Pair steps need a 6-row tile and k-loops long enough (kPairMinGroups).
  bool pairs = MR == kMR && T.flags != nullptr && PairFlags::bytes(T.Kp, T.N) > 0;
  if (pairs) {
    if constexpr (IND) {
      for (int64_t s = 0; s < T.nseg; ++s) pairs = pairs && T.segs[s].len / kKR >= kPairMinGroups;
    } else {
      pairs = T.K / kKR >= kPairMinGroups;
    }
  }
  for (int64_t p0 = c0; p0 < c1;) {
    const int64_t width = T.N - p0 < kNR ? T.N - p0 : kNR;
    const int8_t* b = T.packed_b + p0 * T.Kp;
    const int64_t l0 = *step * pf_total / steps;
    const int64_t pi = p0 / kNR;
    if (width == kNR && p0 + kNR < c1) {
      const int64_t width2 = T.N - p0 - kNR < kNR ? T.N - p0 - kNR : kNR;
      *step += 2;
      const int64_t l1 = *step * pf_total / steps;
      if constexpr (MR == kMR) {
        if (pairs && width2 == kNR && pf.worth(pi)) {
          tile_ubsw<MR, IND, 2, true>(T.a, T.lda, T.K, T.rows, T.segs, T.nseg, b, width, T.m0,
                                      p0, *T.e, T.c, T.ldc, pf_base + l0 * 64, l1 - l0, T.hr,
                                      b + kNR * T.Kp, width2, pf.flags + pi * kg, false);
          p0 += 2 * kNR;
          continue;
        }
      }
      tile_ubsw<MR, IND, 2, false>(T.a, T.lda, T.K, T.rows, T.segs, T.nseg, b, width, T.m0, p0,
                                   *T.e, T.c, T.ldc, pf_base + l0 * 64, l1 - l0, T.hr,
                                   b + kNR * T.Kp, width2, nullptr, T.stream);
      p0 += 2 * kNR;
    } else {
      *step += 1;
      const int64_t l1 = *step * pf_total / steps;
      tile_ubsw<MR, IND, 1, false>(T.a, T.lda, T.K, T.rows, T.segs, T.nseg, b, width, T.m0, p0,
                                   *T.e, T.c, T.ldc, pf_base + l0 * 64, l1 - l0, T.hr, b, 0,
                                   nullptr, T.stream);
      p0 += kNR;
    }
  }
}

using UbswPanelsFn = void (*)(const UbswRowTile&, int64_t, int64_t, const char*, int64_t,
                              int64_t, int64_t*);
#define QP_UB(ind)                                                                          \
  {&ubsw_panels<1, ind>, &ubsw_panels<2, ind>, &ubsw_panels<3, ind>,                        \
   &ubsw_panels<4, ind>, &ubsw_panels<5, ind>, &ubsw_panels<6, ind>}
const UbswPanelsFn kUbswPanels[2][kMR] = {QP_UB(false), QP_UB(true)};  // [ind][mr - 1]
#undef QP_UB

// The sign tile's row (mode 3, SignAux above): a' = a - off bytes (s8, zero past K) and the
// k-groups to correct (g) with their bytes that stand for a = 0 (z: 1 there, 0 elsewhere).
struct SignRow {
  std::vector<int8_t> a;
  std::vector<int32_t> g;
  std::vector<uint32_t> z;
  int32_t off = 0;
  // From the row's K bytes at p; false (no mode 3) when more than 1 in kSignFixDiv k-groups
  // would need the correction.
  bool build(const uint8_t* p, int64_t K, int64_t Kp) {
    const __m256i ff = _mm256_set1_epi8(static_cast<char>(0xFF));
    __m256i has0 = _mm256_setzero_si256(), has255 = has0;
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + k));
      has0 = _mm256_or_si256(has0, _mm256_cmpeq_epi8(v, _mm256_setzero_si256()));
      has255 = _mm256_or_si256(has255, _mm256_cmpeq_epi8(v, ff));
    }
    bool z0 = _mm256_movemask_epi8(has0) != 0, z255 = _mm256_movemask_epi8(has255) != 0;
    for (; k < K; ++k) {
      z0 = z0 || p[k] == 0;
      z255 = z255 || p[k] == 255;
    }
    off = z0 && !z255 ? 127 : 128;
    a.assign(static_cast<size_t>(Kp), 0);
    g.clear();
    z.clear();
    for (k = 0; k < K; ++k) {
      const int v = static_cast<int>(p[k]) - off;
      a[static_cast<size_t>(k)] = static_cast<int8_t>(v < -127 ? -127 : v);
      if (v < -127) {
        const int32_t gk = static_cast<int32_t>(k / kKR);
        if (g.empty() || g.back() != gk) {
          if (static_cast<int64_t>(g.size()) * kSignFixDiv >= Kp / kKR) return false;
          g.push_back(gk);
          z.push_back(0);
        }
        z.back() |= 1u << (8 * (k % kKR));
      }
    }
    return true;
  }
};

// The sign tile on one or two panels (NP; the second `width2` wide at b2) of the row r; aux: the
// packing's SignAux.
template <int NP>
void tile_sign(const SignRow& r, int64_t kg, const int8_t* b, int64_t width, const int8_t* b2,
               int64_t width2, const int32_t* aux, int64_t m, int64_t n, const QGemmEpilogue& e,
               uint8_t* c, int64_t ldc, int stream) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t bstride = width * kKR, bstride2 = width2 * kKR;
  const int8_t* const b_panel = b;
  const int8_t* const b2_panel = b2;
  const int8_t* ap = r.a.data();
  __m256i acc[1] = {_mm256_setzero_si256()}, acc2[1] = {acc[0]};
  for (int64_t g = 0; g < kg; ++g) {
    stream_prefetch(stream, g, b);
    if constexpr (NP == 2) stream_prefetch(stream, g, b2);
    const __m256i as = broadcast_a4(reinterpret_cast<const uint8_t*>(ap + g * kKR));
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    acc[0] = _mm256_add_epi32(
        acc[0], _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(as, w)),
                                  ones));
    if constexpr (NP == 2) {
      const __m256i w2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b2));
      acc2[0] = _mm256_add_epi32(
          acc2[0], _mm256_madd_epi16(
                       _mm256_maddubs_epi16(_mm256_abs_epi8(w2), _mm256_sign_epi8(as, w2)), ones));
    }
    b += bstride;
    b2 += bstride2;
  }
  // - the weights of the bytes a = 0 taken as a' = -127, then + off * colsum.
  const __m256i off = _mm256_set1_epi32(r.off);
  auto fix = [&](__m256i& v, const int8_t* bp, int64_t bs, int64_t p) __attribute__((always_inline)) {
    for (size_t j = 0; j < r.g.size(); ++j) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + r.g[j] * bs));
      const __m256i zv = _mm256_set1_epi32(static_cast<int32_t>(r.z[j]));
      v = _mm256_sub_epi32(v, _mm256_madd_epi16(_mm256_maddubs_epi16(zv, w), ones));
    }
    v = _mm256_add_epi32(v, _mm256_mullo_epi32(off, _mm256_loadu_si256(
                                                        reinterpret_cast<const __m256i*>(aux + p))));
  };
  fix(acc[0], b_panel, bstride, n);
  if constexpr (NP == 2) {
    fix(acc2[0], b2_panel, bstride2, n + kNR);
    if (!e.out_i32 && !e.out_f32) {  // u8 output: the two panels narrowed together
      store_tile2_u8<1>(acc, acc2, width2, m, n, e, c, ldc);
    } else {
      store_tile<1>(acc, width, m, n, e, c, ldc);
      store_tile<1>(acc2, width2, m, n + kNR, e, c, ldc);
    }
  } else {
    store_tile<1>(acc, width, m, n, e, c, ldc);
  }
}

// Mode 3 over the columns [c0, c1) of a B chunk, two panels at a time while a full panel and
// another follow.
void sign_panels(const SignRow& r, const int8_t* packed_b, int64_t Kp, int64_t N,
                 const int32_t* aux, int64_t c0, int64_t c1, int64_t m0, const QGemmEpilogue& e,
                 uint8_t* c, int64_t ldc, int stream) {
  const int64_t kg = Kp / kKR;
  for (int64_t p0 = c0; p0 < c1;) {
    const int64_t width = N - p0 < kNR ? N - p0 : kNR;
    const int8_t* b = packed_b + p0 * Kp;
    if (width == kNR && p0 + kNR < c1) {
      const int64_t width2 = N - p0 - kNR < kNR ? N - p0 - kNR : kNR;
      tile_sign<2>(r, kg, b, width, b + kNR * Kp, width2, aux, m0, p0, e, c, ldc, stream);
      p0 += 2 * kNR;
    } else {
      tile_sign<1>(r, kg, b, width, b, 0, aux, m0, p0, e, c, ldc, stream);
      p0 += kNR;
    }
  }
}

// Where the rows of A are: direct (a, lda, K bytes per row) or indirect (igemm's segments).
struct ARows {
  const uint8_t* a;
  int64_t lda, K;
  const uint8_t* const* rows;
  const IgemmSeg* segs;
  int64_t nseg;
  bool covers;  // IND: the segments cover every K position (else the others count as 0 bytes)
  bool ind() const { return rows != nullptr; }
  // The largest byte of rows [m0, m0 + mr), or some byte above `bound` as soon as one is seen.
  // Rows of 64 bytes or more are tested one at a time (full-range rows stop at the first);
  // shorter ones once per tile (a test per row would be a large share of a small-K 1x1 conv).
  int max_byte(int64_t m0, int64_t mr, int bound) const {
    int64_t len = K;
    if (ind()) {
      len = 0;
      for (int64_t s = 0; s < nseg; ++s) len += segs[s].len;
    }
    const bool per_row = len >= 64;
    MaxBytes h;
    for (int64_t i = m0; i < m0 + mr; ++i) {
      if (!ind()) {
        h.add(a + i * lda, K);
      } else {
        for (int64_t s = 0; s < nseg; ++s) h.add(rows[i] + segs[s].a_off, segs[s].len);
      }
      if (per_row) {
        const int mx = h.max();
        if (mx > bound) return mx;
      }
    }
    return h.max();
  }
  // The outliers' k-groups of rows [m0, m0 + mr) appended to hb, row i's at [row_at[i],
  // row_at[i + 1]) (offsets from hb.n on entry). False, with hb.n restored, as soon as there are
  // more than `limit`.
  bool collect_rows(int64_t m0, int64_t mr, int64_t Kp, HiBuf& hb, int64_t limit,
                    int32_t* row_at) const {
    const size_t base = hb.n;
    const size_t stop = base + static_cast<size_t>(limit);
    for (int64_t i = 0; i < mr; ++i) {
      row_at[i] = static_cast<int32_t>(hb.n - base);
      hb.reserve_more(static_cast<size_t>(Kp / kKR + nseg + 1));
      bool ok = true;
      if (!ind()) {
        ok = collect_hi(a + (m0 + i) * lda, K, 0, hb, stop);
      } else {
        for (int64_t s = 0; s < nseg && ok; ++s)
          ok = collect_hi(rows[m0 + i] + segs[s].a_off, segs[s].len, segs[s].k, hb, stop);
      }
      if (!ok) {
        hb.n = base;
        return false;
      }
    }
    row_at[mr] = static_cast<int32_t>(hb.n - base);
    return true;
  }
};

// The most outlier k-groups a row tile of `rkg` row k-groups may hold and still take the
// VPMADDUBSW tile, for a call of `panels` 8-column panels. An entry costs its collection once and
// ~9 instructions per panel; the widened tile costs its widening once and ~45% more per panel.
// Measured break-even entries per row k-group (forced avx2 on an AMX Xeon, A streamed from memory,
// K = 432..1024): 2 panels 1.6%, 8 panels 4%, 32 panels 5%, 128 panels 8%.
inline int64_t hi_limit(int64_t rkg, int64_t panels) {
  const int64_t div = panels <= 2 ? 64 : panels <= 8 ? 32 : panels <= 32 ? 20 : 12;
  return rkg / div;
}

// Shared by gemm() and igemm(): chunks of columns outer, then row tiles, then the panels of the
// chunk. Each row tile takes the VPMADDUBSW tile when its bytes fit in 7 bits, or when only a few
// exceed 127 (calibrated activations: torch.quantize_per_tensor clamps to [0, 255], not to the
// observer's reduce_range [0, 127], so values beyond the calibration range give sparse bytes
// above 127 in most layers, 1e-5..1e-4 of them in ResNet-18), and else the exact widened
// VPMADDWD tile (A widened once per chunk).
void run_chunks(const ARows& A, int64_t M, int64_t Kp, const int8_t* packed_b, int64_t N,
                int64_t n0, int64_t n1, const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  const int64_t kgp = Kp / kKR;
  std::vector<int16_t> aw;
  int64_t chunk = kBChunkBytes / (Kp > 0 ? Kp : 1) / kNR * kNR;
  if (chunk < kNR) chunk = kNR;
  const bool multi = n1 - n0 > chunk;
  // Mode 2 tiles: their outliers' k-groups, found on the first chunk and, when there are several,
  // kept for the others (tile t's from hi_base[t]).
  HiBuf hb;
  std::vector<size_t> hi_base;
  std::vector<std::array<int32_t, kMR + 1>> hi_rows;
  // Row tiles as even as possible (M = 7: 4 + 3 rather than 6 + 1).
  const int64_t ntiles = (M + kMR - 1) / kMR;
  // Per tile: -1 not yet scanned, 0 widened VPMADDWD, 1 VPMADDUBSW on A in place, 2 VPMADDUBSW on
  // a clamped copy plus outlier corrections (at most 1 in 16 bytes: each costs ~5 instructions
  // per panel, a k-group of 4 bytes of one row about 3), 3 the sign tile (one row, else mode 0),
  // 4 VPMADDUBSW on A in place without pair steps (bytes above 127, none above UbswBound).
  std::vector<int8_t> mode(static_cast<size_t>(ntiles), -1);
  // Row tiles in a row found dense (more bytes > 127 than the outlier limit): after kDenseRun of
  // them the rest take the widened tile unscanned (full-range activations: the scans were ~12% of
  // a 16 -> 16 channel conv3d). Every mode is exact; this only skips looking for a faster one.
  constexpr int64_t kDenseRun = 8;
  int64_t dense_run = 0;
  const bool prefetch = ntiles > 1 && N * Kp > kPrefetchMinBytes;
  const int stream = ntiles != 1 || N * Kp <= kPrefetchMinBytes ? kNoStream
                     : N * Kp > kStreamNtaMinBytes                   ? kStreamNta
                                                                     : kStreamT0;
  // keep: the widened tiles of all rows (tile t at m0 * Kp, its mr-row layout), widened on the
  // first chunk (where every tile's mode is chosen) and read by the others.
  const bool keep = n1 - n0 > chunk && M * Kp * 2 <= kKeepWidenedBytes;
  // Mode-0 implicit-GEMM tiles: A widened by region (WideRegions), built at the first of them,
  // where that measured faster (Zen 1, full-range input, 1 thread, against widening row tile by
  // row tile): one or two panels (3x3 convs 8..64 -> 16 channels: 2-11%), four or more segments
  // (3x3x3 convs: 5-11%; 5x5: ~1%) or segments of at most 64 bytes (3x3 16 -> 32: 4%). Longer
  // segments over more panels lost 2-5% (3x3 64 -> 64, a k3 conv1d over 256 channels).
  // Mode 3 (the sign tile): a call of one direct row, when the packing has its SignAux.
  const bool sign_ok = !A.ind() && M == 1 && SignAux::wanted(Kp);
  // Mode 4's bound (UbswBound; 127: none beyond mode 1).
  const int ubsw_bound = *UbswBound::of(const_cast<int8_t*>(packed_b), Kp, N);
  // Whether 6-row tiles could take pair steps (ubsw_panels: the pair flags, and every k-run of
  // at least kPairMinGroups k-groups).
  const bool pairs_len = [&] {
    if (PairFlags::bytes(Kp, N) == 0) return false;
    if (!A.ind()) return A.K / kKR >= kPairMinGroups;
    for (int64_t s = 0; s < A.nseg; ++s)
      if (A.segs[s].len / kKR < kPairMinGroups) return false;
    return true;
  }();
  SignRow srow;
  WideRegions regions;
  const bool region_fit = [&] {
    if (!A.ind() || A.nseg <= 0) return false;
    int64_t covered = 0;
    for (int64_t s = 0; s < A.nseg; ++s) covered += A.segs[s].len;
    return n1 - n0 <= 2 * kNR || A.nseg >= 4 || covered <= 64 * A.nseg;
  }();
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
      if (mode[t] < 0) {
        // The tile's largest byte (or one above the bound); no scan when the conv found its whole
        // input 7-bit.
        const int mx = e.a_7bit == 1 || dense_run >= kDenseRun ? 0
                                                              : A.max_byte(m0, mr, ubsw_bound);
        if (dense_run >= kDenseRun && e.a_7bit != 1) {
          mode[t] = 0;
        } else if (mx <= 127) {
          mode[t] = 1;
          dense_run = 0;
        } else if (mx <= ubsw_bound && !(mr == kMR && pairs_len)) {
          mode[t] = 4;  // mode 2 would run the same loop, plus corrections
          dense_run = 0;
        } else {
          if (hi_base.empty()) {
            hi_base.resize(static_cast<size_t>(ntiles));
            hi_rows.resize(static_cast<size_t>(ntiles));
          }
          if (!multi) hb.n = 0;
          hi_base[t] = hb.n;
          // Bytes within the bound: mode 2 keeps the pair steps but pays per outlier k-group,
          // mode 4 pays nothing per outlier but runs without pair steps. Mode 2 up to 1 in 32 of
          // the tile's row k-groups (Zen 1, in-model A/B of every conv with such bytes: ResNet-18
          // batch 1 and its K = 576..4608 convs took mode 2 as before, 66.4 -> 64.9 ms against
          // mode 4 whenever more than one; MobileNetV2's K = 64 expand convs with ~4 outlier
          // groups a tile took mode 4, 2.55 -> 2.30 ms against mode 2).
          const bool m4 = mx <= ubsw_bound;
          const int64_t limit =
              m4 ? std::min(hi_limit(mr * kgp, (n1 - n0 + kNR - 1) / kNR), mr * kgp / 32)
                 : hi_limit(mr * kgp, (n1 - n0 + kNR - 1) / kNR);
          const bool collected = A.collect_rows(m0, mr, Kp, hb, limit, hi_rows[t].data());
          mode[t] = collected ? 2 : m4 ? 4 : 0;
          dense_run = collected || m4 ? 0 : dense_run + 1;
        }
        if (mode[t] == 0 && sign_ok && srow.build(A.a, A.K, Kp)) mode[t] = 3;
      }
      if (mode[t] == 3) {
        sign_panels(srow, packed_b, Kp, N, SignAux::of(const_cast<int8_t*>(packed_b), Kp, N),
                    c0, c1, 0, e, c, ldc, stream);
        continue;
      }
      HiRows hr{};
      if (mode[t] == 2) {
        hr.g = hb.g.data() + hi_base[t];
        hr.lo = hb.lo.data() + hi_base[t];
        hr.hi = hb.hi.data() + hi_base[t];
        std::copy(hi_rows[t].begin(), hi_rows[t].begin() + mr + 1, hr.rows);
      }
      if (mode[t] == 0 && region_fit && !regions.built)
        regions.build(A.rows, A.segs, A.nseg, M);
      if (mode[t] == 0 && A.ind() && regions.ok) {
        for (int64_t p0 = c0; p0 < c1; p0 += kNR) {
          const int64_t width = N - p0 < kNR ? N - p0 : kNR;
          const int64_t l0 = step * pf_total / steps;
          step += 1;
          const int64_t l1 = step * pf_total / steps;
          kTilesRegions[mr - 1](A.rows + m0, regions, A.segs, A.nseg, packed_b + p0 * Kp, width,
                                kgp, m0, p0, e, c, ldc, pf_base + l0 * 64, l1 - l0);
        }
        continue;
      }
      int16_t* awt = nullptr;  // this tile's widened rows (mode 0)
      if (mode[t] == 0) {
        if (aw.empty()) {
          aw.resize(static_cast<size_t>(std::max<int64_t>((keep ? M : kMR) * Kp, 1)));
        }
        awt = keep ? aw.data() + m0 * Kp : aw.data();
        if (!keep || c0 == n0) {
          if (A.ind() && !A.covers) std::fill(awt, awt + mr * Kp, int16_t{0});
          if (A.ind()) kWidenInd[mr - 1](A.rows + m0, A.segs, A.nseg, awt);
          else kWiden[mr - 1](A.a + m0 * A.lda, A.lda, A.K, awt);
        }
      }
      if (mode[t] != 0) {
        const bool direct = !A.ind();
        UbswRowTile T{};
        if (mode[t] == 2) T.hr = &hr;
        if (direct) {
          T.a = A.a + m0 * A.lda;
          T.lda = A.lda;
          T.K = A.K;
        } else {
          T.lda = A.lda;
          T.K = 0;
          T.rows = A.rows + m0;
          T.segs = A.segs;
          T.nseg = A.nseg;
        }
        T.packed_b = packed_b;
        // Pair steps for 7-bit tiles: every A byte <= 127, as the pair bound assumes (mode 1), or
        // all but the outliers' k-groups, whose octets tile_ubsw corrects after the loop (mode 2);
        // not for mode 4 (bytes up to UbswBound, beyond the pair bound).
        T.flags = mode[t] == 4 ? nullptr : PairFlags::of(const_cast<int8_t*>(packed_b), N, Kp);
        T.Kp = Kp;
        T.N = N;
        T.m0 = m0;
        T.e = &e;
        T.c = c;
        T.ldc = ldc;
        T.stream = direct ? stream : kNoStream;
        kUbswPanels[direct ? 0 : 1][mr - 1](T, c0, c1, pf_base, pf_total, steps, &step);
        continue;
      }
      for (int64_t p0 = c0; p0 < c1; p0 += kNR) {
        const int64_t width = N - p0 < kNR ? N - p0 : kNR;
        const int64_t l0 = step * pf_total / steps;
        step += 1;
        const int64_t l1 = step * pf_total / steps;
        kTiles[mr - 1](awt, kgp, packed_b + p0 * Kp, width, m0, p0, e, c, ldc,
                       pf_base + l0 * 64, l1 - l0, stream);
      }
    }
  }
}

void gemm(const uint8_t* a, int64_t lda, int64_t M, int64_t K, const int8_t* packed_b,
          int64_t N, int64_t n0, int64_t n1, const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  const ARows A{a, lda, K, nullptr, nullptr, 0, true};
  run_chunks(A, M, generic::round_up(K, kKR), packed_b, N, n0, n1, e, c, ldc);
}

// Indirect GEMM over K ranges (qgemm.h igemm): as gemm(), A's rows read from the segments.
// With c_rows, the tiles write a contiguous scratch block (the tile epilogues address rows as
// m * ldc) that is then copied to the listed rows: for the convs that take this path (K = taps x
// C_in >= 4 x 4 bytes per output byte, typically hundreds) the copy is a small share.
void igemm(const uint8_t* const* rows, const int64_t* c_rows, int64_t M,
                const IgemmSeg* segs, int64_t nseg, int64_t Kp, const int8_t* packed_b, int64_t N,
                int64_t n0, int64_t n1, const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  int64_t covered = 0;
  for (int64_t s = 0; s < nseg; ++s) covered += segs[s].len;
  const ARows A{nullptr, 0, 0, rows, segs, nseg, covered == Kp};
  if (c_rows == nullptr) {
    run_chunks(A, M, Kp, packed_b, N, n0, n1, e, c, ldc);
    return;
  }
  const int64_t es = e.out_i32 != 0 || e.out_f32 != 0 ? 4 : 1;  // output element bytes
  thread_local std::vector<uint8_t> tmp;
  if (static_cast<int64_t>(tmp.size()) < M * ldc) tmp.resize(static_cast<size_t>(M * ldc));
  run_chunks(A, M, Kp, packed_b, N, n0, n1, e, tmp.data(), ldc);
  for (int64_t i = 0; i < M; ++i)
    std::memcpy(c + c_rows[i] * ldc + n0 * es, tmp.data() + i * ldc + n0 * es,
                static_cast<size_t>((n1 - n0) * es));
}

void row_sums(const uint8_t* a, int64_t lda, int64_t M, int64_t K, int32_t* out) {
  const __m256i zero = _mm256_setzero_si256();
  for (int64_t m = 0; m < M; ++m) {
    const uint8_t* ar = a + m * lda;
    __m256i s = _mm256_setzero_si256();
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
      s = _mm256_add_epi64(
          s, _mm256_sad_epu8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ar + k)), zero));
    }
    int64_t t = _mm256_extract_epi64(s, 0) + _mm256_extract_epi64(s, 1) +
                _mm256_extract_epi64(s, 2) + _mm256_extract_epi64(s, 3);
    for (; k < K; ++k) t += ar[k];
    out[m] = static_cast<int32_t>(t);
  }
}

}  // namespace

const QGemmKernels& qgemm_table() {
  static const QGemmKernels t{Isa::kAvx2,
                              "qgemm_u8s8_6x8c4__avx2",
                              kMR,
                              kNR,
                              kKR,
                              &packed_b_bytes,
                              &pack_b,
                              &row_sums,
                              &gemm,
                              &igemm,
                              /*a_7bit_fast=*/true};
  return t;
}

}  // namespace avx2
}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
