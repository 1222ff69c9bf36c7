// The int8 GEMM engine (torch-free): u8 activations x s8 packed weights -> exact s32 accumulators
// -> requantized u8, with zero-point compensation and requantization fused into the epilogue.
// Used by linear (ops/quantized_cpu/linear_kernel.cpp) and, with a strided/im2col'd A, by conv.
// Changes with: kernels/dispatch.cpp (table), qgemm_*_<isa>.cpp (kernels + their packing),
// driver/qgemm_parallel.h (threaded driver), packed/linear_packed_params.cpp.
//
// Math (every ISA, byte-identical):
//   acc[m][n] = sum_k (A[m][k] - a_zp) * (W[n][k] - w_zp[n])                  exact int32
//             = sum_k A*W  - w_zp[n] * rowsum(A[m])  - col_offset[n]
//     with col_offset[n] = a_zp * colsum(W[n]) - K * a_zp * w_zp[n]  (int32, wraps like the GEMM)
//   v = (float(acc) + bias_q[n]) * mult[n]         float32: one add, one multiply, no FMA
//     bias_q[n] = bias[n] / (s_a * s_w[n]),  mult[n] = (s_a * s_w[n]) / s_out   (see the op)
//   y = out_zp + nearbyint(min(max(v, lo), hi))    round half to even; lo/hi relative to out_zp
// max/min are (v > lo ? v : lo) / (v < hi ? v : hi), i.e. MAXPS/MINPS: a NaN (NaN bias) -> lo.
// The accumulation is exact while |acc| < 2^31 (K <= 33025 for any inputs; the same limit as
// PyTorch's fbgemm). No instruction saturates: AVX512-VNNI uses VPDPBUSD (not VPDPBUSDS) or AMX
// TDPBUSD; AVX2 uses VPMADDWD on widened s16, or VPMADDUBSW only where its s16 pair sums provably
// stay in range (bytes of A <= 127, or the pair steps' weight bound; qgemm_u8s8_6x8c4_avx2.cpp).
#pragma once
#include <cstdint>

#include "kernels/dispatch.h"

namespace qplugin {
namespace kernels {
namespace gemm {

// Per-call requantization and zero-point terms. Arrays are indexed by the absolute column n.
struct QGemmEpilogue {
  const int32_t* col_offsets;  // [N] subtracted from every row (see above); never null
  const int32_t* w_zp;         // [N] per-channel weight zero points, or null: use w_zp_scalar
  int32_t w_zp_scalar;         // per-tensor weight zero point (ignored when w_zp != null)
  const int32_t* row_sums;     // [M] sum_k A[m][k] (null when every weight zero point is 0)
  const float* bias_q;         // [N] bias / (s_a * s_w[n]); never null (zeros without bias)
  const float* mult;           // [N] (s_a * s_w[n]) / s_out
  float lo;                    // qmin - out_zp (ReLU: 0)
  float hi;                    // qmax - out_zp
  int32_t out_zp;
  // 1 when the caller has checked that every byte of A is <= 127 (kernels with a 7-bit fast path,
  // QGemmKernels::a_7bit_fast, then skip their own per-tile scan); 0: not known.
  int32_t a_7bit = 0;
  // Output mode. 0: requantized u8 (above). 1: float32 output, no requantization (dynamic
  // linear; also the real-valued result that ops applying a nonlinearity before quantizing need):
  //   y = fma(float(acc), mult[n], bias_q[n])     float32, one rounding (an FMA)
  // with mult[n] = s_a * s_w[n] (float32) and bias_q[n] = the real bias: what PyTorch's
  // linear_dynamic returns. fbgemm's ReQuantizeForFloat is written as a multiply and an add, but
  // PyTorch's build contracts them into an FMA (torch 2.13 on a Zen 5, FBGEMM on AVX-512 and held
  // to AVX2, vector body and column tail: every element equals the FMA, 28% differ from the
  // separate multiply and add; tests/dynamic/test_linear_dynamic_ops.py checks it),
  // then, when f32_relu, y = (0 > y ? 0 : y) (MAXPS(0, y): a NaN stays NaN, as torch.relu).
  // `c` then points at float storage and `ldc` is the row stride in BYTES (so the drivers'
  // row offsets `c + m * ldc` stay valid); lo, hi and out_zp are ignored.
  int32_t out_f32 = 0;
  int32_t f32_relu = 0;
  // Output mode 2 (out_i32 = 1, takes precedence over out_f32): the exact accumulator
  //   acc[m][n] = sum_k (A[m][k] - a_zp) * (W[n][k] - w_zp[n])
  // as int32 (the zero-point terms above applied, nothing else): exact whenever the true sum fits
  // int32 (callers check K * 255 * 255 < 2^31, i.e. K <= 33025; the int32 arithmetic wraps and
  // wraps back). For ops that finish in double (linear_leaky_relu / linear_tanh, conv2d_add,
  // matmul). `c` points at int32 storage, `ldc` is the row stride in BYTES; bias_q, mult, lo, hi,
  // out_zp are ignored.
  int32_t out_i32 = 0;
};

// A kernel and the packing of B it reads, chosen together (STYLE.md section 5).
//
// Packed B ("panels"): W is [N][K] row-major (a Linear weight; conv flattens to it). Columns are
// cut into panels of `nr` columns (the last panel holds the N % nr leftover columns, stored at its
// own width so that no padding column is ever stored); K is padded with zeros to a multiple of
// `kr`. Panel p of width w occupies w * Kp bytes at offset p * nr * Kp, ordered
//   [k / kr][column in panel][k % kr].
// A slack of kPackSlack bytes follows, so vector loads of a partial panel may over-read inside
// the buffer (those lanes are never stored). A kernel may append data of its own after the slack
// (packed_b_bytes counts it; the AVX2 kernel's pair flags, sign aux and mode-4 bound);
// unpacking never reads it.
constexpr int64_t kPackSlack = 64;

// Byte offset of W[n][k] in a buffer packed with panel width nr and k-group kr (Kp = K rounded up
// to kr). The single definition of the layout besides pack_b; unpacking uses it.
inline int64_t packed_b_offset(int64_t n, int64_t k, int64_t N, int64_t Kp, int64_t nr,
                               int64_t kr) {
  const int64_t p0 = n / nr * nr;
  const int64_t width = N - p0 < nr ? N - p0 : nr;
  return p0 * Kp + (k / kr) * width * kr + (n - p0) * kr + k % kr;
}

// One K range of an igemm row: `len` bytes read at (row pointer + a_off), multiplied with the
// packed-B K positions [k, k + len).
struct IgemmSeg {
  int64_t a_off;
  int64_t k;
  int64_t len;
};

struct QGemmKernels {
  Isa isa;
  const char* name;  // e.g. "qgemm_u8s8_6x64c4__avx512vnni"
  int mr;            // rows of the register tile
  int nr;            // panel width (columns)
  int kr;            // k-group of the packing
  // Bytes of the packed buffer for a K x N weight (including the slack).
  int64_t (*packed_b_bytes)(int64_t K, int64_t N);
  // Packs W ([N][K], row stride ldw) into `packed` and writes col_sums[n] = sum_k W[n][k].
  void (*pack_b)(const int8_t* w, int64_t ldw, int64_t K, int64_t N, int8_t* packed,
                 int32_t* col_sums);
  // row_sums[m] = sum_k A[m][k] for m in [0, M).
  void (*row_sums)(const uint8_t* a, int64_t lda, int64_t M, int64_t K, int32_t* out);
  // C[m][n] for m in [0, M), n in [n0, n1): n0 a multiple of nr, n1 a multiple of nr or N.
  // A: M x K u8 with row stride lda; C: u8 with row stride ldc, indexed by absolute n.
  // e.row_sums (when set) is indexed from A's row 0.
  void (*gemm)(const uint8_t* a, int64_t lda, int64_t M, int64_t K, const int8_t* packed_b,
               int64_t N, int64_t n0, int64_t n1, const QGemmEpilogue& e, uint8_t* c,
               int64_t ldc);
  // Indirect GEMM (implicit-GEMM conv: driver/conv_gemm.cpp), or null when the ISA has none
  // (the caller then builds A explicitly and calls gemm). Row i of A is the concatenation over
  // s in [0, nseg) of the segs[s].len bytes at rows[i] + segs[s].a_off, multiplied with the
  // packed-B rows [segs[s].k, segs[s].k + segs[s].len) (k and len multiples of kr, so no k-group
  // straddles two segments; packed B has K = Kp); K positions no segment names are left out of
  // the sum (the caller's col_offsets must match: the padding-skipping conv). Row i of C is
  // stored at c + c_rows[i] * ldc (c_rows null: row i). Otherwise as gemm, except that
  // e.row_sums must be null (every weight zero point 0). All rows of a call point into one
  // buffer: a kernel may read any byte between the lowest and the highest byte its rows read
  // (the AVX2 kernel widens such spans once, WideRegions).
  void (*igemm)(const uint8_t* const* rows, const int64_t* c_rows, int64_t M,
                const IgemmSeg* segs, int64_t nseg, int64_t Kp, const int8_t* packed_b, int64_t N,
                int64_t n0, int64_t n1, const QGemmEpilogue& e, uint8_t* c,
                int64_t ldc) = nullptr;
  // True when the kernel multiplies faster once A's bytes fit in 7 bits (AVX2: VPMADDUBSW), so a
  // caller that can prove it cheaply (one scan of a conv input) should set QGemmEpilogue::a_7bit.
  bool a_7bit_fast = false;
};

// The kernels of `isa` (falls back to the best lower ISA compiled in; never above it).
const QGemmKernels& qgemm_kernels_for(Isa isa);

// Per-ISA tables, defined in the qgemm_*_<isa>.cpp files.
QPLUGIN_ISA_TABLES(QGemmKernels, qgemm_table);

}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
