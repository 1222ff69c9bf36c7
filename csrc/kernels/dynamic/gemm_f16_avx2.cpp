// AVX2 fp16-weight GEMM (gemm_f16.h): half a panel row (8 fp16 weights) -> one ymm (VCVTPH2PS,
// F16C), the activation broadcast, VFMADD231PS per k in order (identical bits to the scalar
// reference). 16 ymm registers: tiles of 6 rows x 1 panel (12 accumulators); row remainders of 1
// or 2 rows take 2 panels at once (more independent chains).
#include <immintrin.h>

#include <cstdint>
#include <vector>

#include "kernels/dynamic/gemm_f16.h"

namespace qplugin {
namespace kernels {
namespace dynamic {
namespace avx2 {
namespace {

constexpr int kMr = 6;

// The first `cols` floats at p (all 8 when cols >= 8) as a ymm, the other lanes 0.
inline __m256 load_cols(const float* p, int64_t cols) {
  if (cols >= 8) return _mm256_loadu_ps(p);
  alignas(32) float buf[8];
  for (int j = 0; j < 8; ++j) buf[j] = j < cols ? p[j] : 0.0f;
  return _mm256_load_ps(buf);
}

// The first `cols` lanes of y (all 8 when cols >= 8) to p.
inline void store_cols(float* p, __m256 y, int64_t cols) {
  if (cols >= 8) {
    _mm256_storeu_ps(p, y);
    return;
  }
  alignas(32) float buf[8];
  _mm256_store_ps(buf, y);
  for (int j = 0; j < cols; ++j) p[j] = buf[j];
}

// Stores MR rows of the accumulators (8 columns per vector, N columns in all); `finish`: the sum
// is complete, so the bias is added and the ReLU applied first.
template <int MR, int NV>
inline void store_rows(__m256 (&acc)[MR][NV], int64_t N, const float* bias, bool relu,
                       bool finish, float* c, int64_t ldc) {
  const __m256 zero = _mm256_setzero_ps();
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    const int64_t cols = N - v * 8;
    if (cols <= 0) break;
    const __m256 bv = finish && bias ? load_cols(bias + v * 8, cols) : zero;
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      __m256 y = acc[r][v];
      if (finish) {
        if (bias) y = _mm256_add_ps(y, bv);
        if (relu) y = _mm256_max_ps(zero, y);  // max(0, NaN) returns the NaN (second operand)
      }
      store_cols(c + r * ldc + v * 8, y, cols);
    }
  }
}

template <int MR, int NP>
void tile(const float* a, int64_t lda, int64_t K, const uint16_t* wp, int64_t N,
          const float* bias, bool relu, float* c, int64_t ldc) {
  constexpr int NV = 2 * NP;  // ymm per row
  const int64_t pstride = K * kF16Panel;
  __m256 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < K; ++k) {
    if constexpr (MR == 1) {
      // One row: each weight vector converted right before its fma (NV may be 8: converting
      // all first would need 17 registers).
      const __m256 av = _mm256_broadcast_ss(a + k);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        const uint16_t* wv = wp + (v / 2) * pstride + k * kF16Panel + (v % 2) * 8;
        acc[0][v] = _mm256_fmadd_ps(
            av, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wv))), acc[0][v]);
      }
      continue;
    }
    __m256 b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      b[v] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(
          wp + (v / 2) * pstride + k * kF16Panel + (v % 2) * 8)));
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + k);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(av, b[v], acc[r][v]);
    }
  }
  store_rows<MR, NV>(acc, N, bias, relu, /*finish=*/true, c, ldc);
}

// Rows [0, M) of the panels of columns [0, N) (N <= 32: one or two panels).
template <int NP>
void block(const float* a, int64_t lda, int64_t M, int64_t K, const uint16_t* wp, int64_t N,
           const float* bias, bool relu, float* c, int64_t ldc) {
  const int64_t pstride = K * kF16Panel;
  int64_t m = 0;
  for (; m + kMr <= M; m += kMr) {
    for (int p = 0; p < NP; ++p) {
      tile<kMr, 1>(a + m * lda, lda, K, wp + p * pstride, N - p * kF16Panel,
                   bias ? bias + p * kF16Panel : nullptr, relu, c + m * ldc + p * kF16Panel, ldc);
    }
  }
  const int64_t r = M - m;
  const float* ar = a + m * lda;
  float* cr = c + m * ldc;
  if (r == 1) {
    tile<1, NP>(ar, lda, K, wp, N, bias, relu, cr, ldc);
  } else if (r == 2) {
    tile<2, NP>(ar, lda, K, wp, N, bias, relu, cr, ldc);
  } else if (r > 2) {
    for (int p = 0; p < NP; ++p) {
      const uint16_t* w = wp + p * pstride;
      const int64_t n = N - p * kF16Panel;
      const float* bb = bias ? bias + p * kF16Panel : nullptr;
      float* cp = cr + p * kF16Panel;
      if (r == 3) tile<3, 1>(ar, lda, K, w, n, bb, relu, cp, ldc);
      if (r == 4) tile<4, 1>(ar, lda, K, w, n, bb, relu, cp, ldc);
      if (r == 5) tile<5, 1>(ar, lda, K, w, n, bb, relu, cp, ldc);
    }
  }
}

// Tall calls (M >= kConvertRows; the caller passes all rows of a tall call, in 64-column blocks):
// the weights are converted once, not once per row tile,
// and the loops are blocked as a BLAS GEMM: for each block of kNc columns and each K range of
// kKc, the weights' fp16 rows become fp32 in a buffer (kKc x kNc floats, 1 MB), then each block
// of kMc rows (its kMc x kKc activations stay in L2) runs every panel of the buffer (kKc x 16
// floats, in L1 across the block's row tiles) with plain FMAs (12 FMAs, 6 broadcasts and 2 loads
// per k: no VCVTPH2PS in the loop). A tile's accumulators are stored to c between K ranges and
// reloaded (exact: each output's chain is still s = fma(a[k], w[k], s) for k in order from +0,
// and the bias and ReLU come after the last k): the header's bits.
constexpr int64_t kKc = 512;
constexpr int64_t kNc = 512;
constexpr int64_t kMc = 96;
constexpr int64_t kConvertRows = 192;

// MR rows x one panel (n <= 16 columns) over the K range of bf ([kc][16] floats). first: start
// from +0 (else from c); last: add the bias, apply the ReLU.
template <int MR>
void tile_f32(const float* a, int64_t lda, int64_t kc, const float* bf, int64_t n,
              const float* bias, bool relu, float* c, int64_t ldc, bool first, bool last) {
  __m256 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v)
      acc[r][v] = first ? _mm256_setzero_ps() : load_cols(c + r * ldc + v * 8, n - v * 8);
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(bf + k * kF16Panel);
    const __m256 b1 = _mm256_load_ps(bf + k * kF16Panel + 8);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + k);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  store_rows<MR, 2>(acc, n, bias, relu, last, c, ldc);
}

// The fp16 lines of the next (n0, k0) block (its panels' K range), prefetched into L2 a few at a
// time while the current block's row tiles run: with weights beyond the caches, converting a
// block otherwise waited on DRAM. 256 x 4096 -> 4096 on a Xeon held to avx2 (alternated runs):
// 97-106 -> 94-97 ms, against MKL's fp32 89-99 ms; the conversion loop ~5.5 -> ~4% of samples.
struct NextBlockPrefetch {
  const uint16_t* wp = nullptr;
  int64_t pstride = 0, panel0 = 0, np = 0, k0 = 0, bytes = 0;  // per panel: bytes from k0
  int64_t p = 0, off = 0;                                        // the cursor
  int64_t per_step = 0;
  void start(const uint16_t* w, int64_t ps, int64_t n0, int64_t N, int64_t kk0, int64_t kc,
             int64_t steps) {
    wp = w;
    pstride = ps;
    panel0 = n0 / kF16Panel;
    const int64_t nb = N - n0 < kNc ? N - n0 : kNc;
    np = (nb + kF16Panel - 1) / kF16Panel;
    k0 = kk0;
    bytes = kc * kF16Panel * 2;
    p = off = 0;
    const int64_t lines = np * ((bytes + 63) / 64);
    per_step = steps > 0 ? (lines + steps - 1) / steps : 0;
  }
  void step() {
    for (int64_t i = 0; i < per_step && p < np; ++i) {
      const char* src =
          reinterpret_cast<const char*>(wp + (panel0 + p) * pstride + k0 * kF16Panel);
      _mm_prefetch(src + off, _MM_HINT_T1);
      off += 64;
      if (off >= bytes) {
        off = 0;
        ++p;
      }
    }
  }
};

void gemm_converted(const float* a, int64_t lda, int64_t M, int64_t K, const uint16_t* wp,
                    int64_t N, const float* bias, bool relu, float* c, int64_t ldc) {
  thread_local std::vector<float> bfv;
  const size_t need = static_cast<size_t>(kKc * kNc + 8);
  if (bfv.size() < need) bfv.resize(need);
  float* bf = reinterpret_cast<float*>(
      (reinterpret_cast<uintptr_t>(bfv.data()) + 31) & ~uintptr_t{31});
  const int64_t pstride = K * kF16Panel;
  const int64_t row_tiles = (M + kMr - 1) / kMr + (M + kMc - 1) / kMc;  // an upper bound
  NextBlockPrefetch next;
  for (int64_t n0 = 0; n0 < N; n0 += kNc) {
    const int64_t nb = N - n0 < kNc ? N - n0 : kNc;
    const int64_t np = (nb + kF16Panel - 1) / kF16Panel;
    for (int64_t k0 = 0; k0 < K; k0 += kKc) {
      const int64_t kc = K - k0 < kKc ? K - k0 : kKc;
      for (int64_t p = 0; p < np; ++p) {
        const uint16_t* src = wp + (n0 / kF16Panel + p) * pstride + k0 * kF16Panel;
        float* dst = bf + p * kc * kF16Panel;
        for (int64_t i = 0; i < kc * kF16Panel; i += 8) {
          _mm256_store_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                       reinterpret_cast<const __m128i*>(src + i))));
        }
      }
      // The block after this one: the next K range of these columns, else the next columns'
      // first K range (none after the last block).
      if (k0 + kc < K) {
        next.start(wp, pstride, n0, N, k0 + kc, K - k0 - kc < kKc ? K - k0 - kc : kKc,
                   row_tiles * np);
      } else if (n0 + nb < N) {
        next.start(wp, pstride, n0 + nb, N, 0, K < kKc ? K : kKc, row_tiles * np);
      } else {
        next.np = 0;
      }
      const bool first = k0 == 0, last = k0 + kc == K;
      for (int64_t m0 = 0; m0 < M; m0 += kMc) {
        const int64_t m1 = M - m0 < kMc ? M : m0 + kMc;
        for (int64_t p = 0; p < np; ++p) {
          const int64_t col = n0 + p * kF16Panel;
          const int64_t nn = N - col < kF16Panel ? N - col : kF16Panel;
          const float* bb = bias ? bias + col : nullptr;
          const float* bp = bf + p * kc * kF16Panel;
          for (int64_t m = m0; m < m1;) {
            const int64_t r = m1 - m >= kMr ? kMr : m1 - m;
            const float* am = a + m * lda + k0;
            float* cm = c + m * ldc + col;
            next.step();
            switch (r) {
              case 6: tile_f32<6>(am, lda, kc, bp, nn, bb, relu, cm, ldc, first, last); break;
              case 5: tile_f32<5>(am, lda, kc, bp, nn, bb, relu, cm, ldc, first, last); break;
              case 4: tile_f32<4>(am, lda, kc, bp, nn, bb, relu, cm, ldc, first, last); break;
              case 3: tile_f32<3>(am, lda, kc, bp, nn, bb, relu, cm, ldc, first, last); break;
              case 2: tile_f32<2>(am, lda, kc, bp, nn, bb, relu, cm, ldc, first, last); break;
              default: tile_f32<1>(am, lda, kc, bp, nn, bb, relu, cm, ldc, first, last); break;
            }
            m += r;
          }
        }
      }
    }
  }
}

// Columns in blocks of 2 panels; a single row takes 4 panels at once where 4 exist (8 fma chains:
// one row's 4 chains were latency-bound, 768 -> 3072 0.085-0.089 -> 0.077-0.080 ms on a Zen 5
// held to avx2).
void gemm(const float* a, int64_t lda, int64_t M, int64_t K, const uint16_t* wp, int64_t N,
          const float* bias, bool relu, float* c, int64_t ldc) {
  if (M >= kConvertRows && K > 0) {
    gemm_converted(a, lda, M, K, wp, N, bias, relu, c, ldc);
    return;
  }
  constexpr int64_t kBlock = 2 * kF16Panel;
  int64_t n0 = 0;
  if (M == 1) {
    for (; n0 + 4 * kF16Panel <= N; n0 += 4 * kF16Panel) {
      tile<1, 4>(a, lda, K, wp + (n0 / kF16Panel) * K * kF16Panel, 4 * kF16Panel,
                 bias ? bias + n0 : nullptr, relu, c + n0, ldc);
    }
  }
  for (; n0 < N; n0 += kBlock) {
    const int64_t nb = N - n0 < kBlock ? N - n0 : kBlock;
    const uint16_t* w = wp + (n0 / kF16Panel) * K * kF16Panel;
    const float* bb = bias ? bias + n0 : nullptr;
    if (nb > kF16Panel) {
      block<2>(a, lda, M, K, w, nb, bb, relu, c + n0, ldc);
    } else {
      block<1>(a, lda, M, K, w, nb, bb, relu, c + n0, ldc);
    }
  }
}

}  // namespace

const F16GemmKernels& f16_gemm_table() {
  static const F16GemmKernels t{Isa::kAvx2, &gemm, kConvertRows};
  return t;
}

}  // namespace avx2
}  // namespace dynamic
}  // namespace kernels
}  // namespace qplugin
