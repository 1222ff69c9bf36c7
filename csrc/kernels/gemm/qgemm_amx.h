// AMX-INT8 form of the avx512vnni GEMM (Intel Sapphire Rapids and later): the same packed B (the
// avx512vnni table's 64-column panels of k-groups of 4, which are AMX's B tile layout row by row)
// and the same epilogue, byte for byte; TDPBUSD (u8 x s8 summed into s32, no saturation) on
// 16 x 64-byte tiles instead of VPDPBUSD on zmm registers. An option of the avx512vnni tier (as
// VBMI is): its gemm/igemm hand calls of at least kMinRows rows here while amx_enabled().
// Changes with: qgemm_u8s8_32x32c4_amx.cpp (the kernel), qgemm_u8s8_6x64c4_avx512vnni.cpp (the
// caller), kernels/dispatch.cpp (detection, permission).
#pragma once
#include <cstdint>

#include "kernels/gemm/qgemm.h"

namespace qplugin {
namespace kernels {
namespace gemm {
namespace amx {

// Fewer rows than one tile height waste most of every TDPBUSD: the zmm kernel is faster there.
constexpr int64_t kMinRows = 16;
// Calls of one 16-column tile take four row tiles a pass (narrow_block) instead of the 2 x 2
// block, whose second column tile would idle.
constexpr int64_t kMinCols = 16;

// As QGemmKernels::gemm / igemm of the avx512vnni table (same arguments, same results). The
// caller has checked amx_enabled(), M >= kMinRows and n1 - n0 >= kMinCols.
void gemm(const uint8_t* a, int64_t lda, int64_t M, int64_t K, const int8_t* packed_b, int64_t N,
          int64_t n0, int64_t n1, const QGemmEpilogue& e, uint8_t* c, int64_t ldc);
// Whether an igemm call should take the AMX form: when its rows need staging byte by byte (conv
// segments neither whole 32/64-byte steps nor of one length < 64, e.g. the edges of a
// padding-skipping conv with C_in = 24), only for wide calls with a long K (staging costs per
// byte of A, AMX saves per byte times columns). Measured before the in-place forms, zmm against
// AMX staged: 3 -> 64 3x3 on 112x112 1.49 against 2.44 ms, 24 -> 72 1x1 0.41 against 0.54,
// 16 -> 64 3x3 0.77 against 0.73, 3 -> 64 7x7 3.67 against 3.70.
bool igemm_prefers_amx(const IgemmSeg* segs, int64_t nseg, int64_t Kp, int64_t ncols);
// The same for gemm: rows read in place when K % 64 = 0, else staged (worth it for wide calls
// with a long K only; 24 -> 72 1x1 conv: zmm 0.42, AMX 0.57 ms). Never K = 0 (a linear with
// in_features 0, a transposed conv's phase that no kernel tap reaches, e.g. stride 2 with
// dilation 2): its B tiles would have 0 rows and 64 bytes a row, a tile configuration LDTILECFG
// rejects with #GP (SIGSEGV); the zmm kernel gives the bias-only outputs.
// Staged calls of many rows also when K x ncols >= kStagedMinKN (K >= 32): the 1x1 convs of
// MobileNets, whose channel counts are rarely multiples of 64, ran on the zmm kernel at half
// oneDNN's speed (MobileNetV3-Large batch 8, 112 -> 672 on 14x14: 0.45-0.49 ms zmm, 0.24 AMX,
// oneDNN 0.23-0.25). 1x1 convs on 8 x 14 x 14 and 56 x 56 pixels, channels-last, AMX Xeon, AMX
// time / zmm time: K x N 11520-13440 0.92-1.11 (zmm kept), 14720-19200 0.78-0.96, 23040+
// 0.53-0.85; K = 24 loses at every N up to 480 (1.05-2.5). On 7 x 7 pixels AMX loses up to
// ~35000 (its per-call cost), hence the row minimum.
constexpr int64_t kStagedMinKN = 14336;
constexpr int64_t kStagedMinRows = 128;
inline bool gemm_prefers_amx(int64_t M, int64_t K, int64_t ncols) {
  return K > 0 && (K % 64 == 0 || (ncols >= 128 && K >= 128) ||
                   (M >= kStagedMinRows && K >= 32 && K * ncols >= kStagedMinKN));
}
void igemm(const uint8_t* const* rows, const int64_t* c_rows, int64_t M, const IgemmSeg* segs,
           int64_t nseg, int64_t Kp, const int8_t* packed_b, int64_t N, int64_t n0, int64_t n1,
           const QGemmEpilogue& e, uint8_t* c, int64_t ldc);

}  // namespace amx
}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
