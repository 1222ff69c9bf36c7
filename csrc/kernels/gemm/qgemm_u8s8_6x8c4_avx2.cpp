// AVX2 GEMM kernel qgemm_u8s8_6x8c4__avx2, exact for every input: u8 activations and s8 weights
// are widened to s16 and multiplied with VPMADDWD (s16 x s16 pairs summed into s32, cannot
// saturate for these ranges). Not VPMADDUBSW: its s16 pair sum saturates for u8 x s8 inputs such
// as 255*127 + 255*127 (PyTorch issue 44939). Weights: 8-column panels, k-groups of 4, so one
// 16-byte load widens to 4 columns x 4 k; each s32 lane holds half a column's k-group and the
// epilogue adds the halves (VPHADDD). Each row tile of A is widened to s16 once (widen_rows) and
// reused by every panel. Must equal the scalar kernel byte for byte.
// Changes with: qgemm.h (contract), qgemm_generic.h (packing, scalar epilogue).
#define QPLUGIN_ISA_NS avx2
#include <immintrin.h>

#include <vector>

#include "kernels/gemm/qgemm_generic.h"

namespace qplugin {
namespace kernels {
namespace gemm {
namespace avx2 {
namespace {

constexpr int kMR = 6;
constexpr int kNR = 8;
constexpr int kKR = 4;

// Row tile of A widened to s16 once (then reused by every panel of B): for k-group g and row i,
// the 4 values (a[4g] .. a[4g+3]) at aw[(g * MR + i) * 4]; the partial last group is zero-padded,
// and only the K bytes of each row are read.
template <int MR>
void widen_rows(const uint8_t* a, int64_t lda, int64_t K, int16_t* aw) {
  const int64_t kg = K / kKR;
  for (int i = 0; i < MR; ++i) {
    const uint8_t* ar = a + i * lda;
    int64_t g = 0;
    for (; g + 4 <= kg; g += 4) {
      const __m256i w =
          _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ar + g * kKR)));
      const __m128i lo = _mm256_castsi256_si128(w), hi = _mm256_extracti128_si256(w, 1);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(aw + ((g + 0) * MR + i) * 4), lo);
      _mm_storeh_pd(reinterpret_cast<double*>(aw + ((g + 1) * MR + i) * 4), _mm_castsi128_pd(lo));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(aw + ((g + 2) * MR + i) * 4), hi);
      _mm_storeh_pd(reinterpret_cast<double*>(aw + ((g + 3) * MR + i) * 4), _mm_castsi128_pd(hi));
    }
    for (; g * kKR < K; ++g) {
      for (int r = 0; r < kKR; ++r) {
        const int64_t k = g * kKR + r;
        aw[(g * MR + i) * 4 + r] = k < K ? static_cast<int16_t>(ar[k]) : int16_t{0};
      }
    }
  }
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

#define QP_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

// One MR x 8 tile over the whole K (see the avx512vnni kernel for the argument convention).
// Accumulators c<i>0 (columns 0..3) and c<i>1 (columns 4..7) of row i hold two partial sums per
// column (k-pairs 01 and 23); the epilogue adds them.
// aw: the row tile widened by widen_rows<MR>; kgp: k-groups including a partial last one.
template <int MR>
void tile(const int16_t* aw, int64_t kgp, const int8_t* b, int64_t width, int64_t m, int64_t n,
          const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
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
  for (int64_t g = 0; g < kgp; ++g) {
    const __m256i b0 = load_b4(b), b1 = load_b4(b + 16);
    QP_ROWS(QP_ROW)
    aw += MR * 4;
    b += bstride;
  }
#undef QP_ROW
  __m256i acc[kMR][2];
#define QP_GATHER(i)                                                                        \
  if constexpr (MR > i) {                                                                   \
    acc[i][0] = c##i##0;                                                                    \
    acc[i][1] = c##i##1;                                                                    \
  }
  QP_ROWS(QP_GATHER)
#undef QP_GATHER
#undef QP_ROWS

  const int cols = static_cast<int>(width);  // 1..8
  const __m256i mk = lane_mask(cols);
  const __m256i coff = _mm256_maskload_epi32(e.col_offsets + n, mk);
  const __m256 bq = _mm256_maskload_ps(e.bias_q + n, mk);
  const __m256 mult = _mm256_maskload_ps(e.mult + n, mk);
  __m256i zw = _mm256_setzero_si256();
  if (e.row_sums != nullptr) {
    zw = e.w_zp != nullptr ? _mm256_maskload_epi32(e.w_zp + n, mk)
                           : _mm256_set1_epi32(e.w_zp_scalar);
  }
  const __m256 lo = _mm256_set1_ps(e.lo), hi = _mm256_set1_ps(e.hi);
  const __m256i out_zp = _mm256_set1_epi32(e.out_zp);
  const __m128i pack_idx =
      _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    // [c0 c1 c4 c5 | c2 c3 c6 c7] -> c0..c7
    __m256i v = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[i][0], acc[i][1]), 0xD8);
    v = _mm256_sub_epi32(v, coff);
    if (e.row_sums != nullptr) {
      v = _mm256_sub_epi32(v, _mm256_mullo_epi32(zw, _mm256_set1_epi32(e.row_sums[m + i])));
    }
    __m256 f = _mm256_add_ps(_mm256_cvtepi32_ps(v), bq);
    f = _mm256_mul_ps(f, mult);
    f = _mm256_max_ps(f, lo);
    f = _mm256_min_ps(f, hi);
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(f), out_zp);
    // Values are in [0, 255]: take the low byte of each lane.
    const __m128i lo4 = _mm_shuffle_epi8(_mm256_castsi256_si128(q), pack_idx);
    const __m128i hi4 = _mm_shuffle_epi8(_mm256_extracti128_si256(q, 1), pack_idx);
    const uint64_t bytes = static_cast<uint64_t>(static_cast<uint32_t>(_mm_cvtsi128_si32(lo4))) |
                           (static_cast<uint64_t>(static_cast<uint32_t>(_mm_cvtsi128_si32(hi4)))
                            << 32);
    uint8_t* dst = c + (m + i) * ldc + n;
    if (cols == 8) {
      std::memcpy(dst, &bytes, 8);
    } else {
      std::memcpy(dst, &bytes, static_cast<size_t>(cols));
    }
  }
}

using TileFn = void (*)(const int16_t*, int64_t, const int8_t*, int64_t, int64_t, int64_t,
                        const QGemmEpilogue&, uint8_t*, int64_t);
using WidenFn = void (*)(const uint8_t*, int64_t, int64_t, int16_t*);
const TileFn kTiles[kMR] = {&tile<1>, &tile<2>, &tile<3>, &tile<4>, &tile<5>, &tile<6>};
const WidenFn kWiden[kMR] = {&widen_rows<1>, &widen_rows<2>, &widen_rows<3>,
                             &widen_rows<4>, &widen_rows<5>, &widen_rows<6>};

// Rows outer: each row tile of A is widened once, then every panel of B streams past it.
void gemm(const uint8_t* a, int64_t lda, int64_t M, int64_t K, const int8_t* packed_b,
          int64_t N, int64_t n0, int64_t n1, const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  const int64_t Kp = generic::round_up(K, kKR);
  const int64_t kgp = Kp / kKR;
  std::vector<int16_t> aw(static_cast<size_t>(kMR * Kp > 0 ? kMR * Kp : 1));
  // Row tiles as even as possible (M = 7: 4 + 3 rather than 6 + 1).
  const int64_t ntiles = (M + kMR - 1) / kMR;
  for (int64_t t = 0; t < ntiles; ++t) {
    const int64_t m0 = t * M / ntiles;
    const int64_t mr = (t + 1) * M / ntiles - m0;
    kWiden[mr - 1](a + m0 * lda, lda, K, aw.data());
    for (int64_t p0 = n0; p0 < n1; p0 += kNR) {
      const int64_t width = N - p0 < kNR ? N - p0 : kNR;
      kTiles[mr - 1](aw.data(), kgp, packed_b + p0 * Kp, width, m0, p0, e, c, ldc);
    }
  }
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
                              &generic::packed_b_bytes<kNR, kKR>,
                              &generic::pack_b<kNR, kKR>,
                              &row_sums,
                              &gemm};
  return t;
}

}  // namespace avx2
}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
