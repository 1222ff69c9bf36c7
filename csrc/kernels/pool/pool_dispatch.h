// Kernel table of the pooling and resampling ops (max/avg/adaptive pooling, nearest and linear
// upsampling). Torch-free: raw pointers, sizes and qparams only.
// Changes with: kernels/dispatch.cpp (table choice), pool_generic_impl.h (the kernels, compiled
// once per ISA), pool_{scalar,avx2,avx512vnni}.cpp, ops/quantized_cpu/{pooling,upsample}_kernel.cpp.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/dispatch.h"

namespace qplugin {
namespace kernels {

// Exact accumulator of a code type: int32 for 8-bit codes (|sum| < 2^31 for windows below 2^23
// elements; the ops check), int64 for qint32 codes.
template <typename T> struct PoolAcc { using type = int32_t; };
template <> struct PoolAcc<int32_t> { using type = int64_t; };

// Averages are y = clamp(zp + nearbyint(S / div)), S = sum over the window of (x - zp) (exact
// integer), div the divisor (window size, count or divisor_override), in double: the quotient of
// two integers below 2^31 rounds to nearest even exactly as the rational would (no integer/
// 2^31 comes within half an ulp of a tie without being one), so every ISA (and the float64
// reference on dequantized input) gives the same bytes.
struct AvgQ {
  int32_t zp;
  int32_t qmin;
  int32_t qmax;
};

// Linear interpolation rounds y = clamp(zp + nearbyint(b0 * H0 + b1 * H1 - zp)) in float, where
// H = a0 * x[i0] + a1 * x[i1] (the horizontal pass, codes as float); op order fixed, no fma.
// Rounding relative to the zero point is the numerics contract: the exact result is
// quantize(interp(dequantize(x))) = zp + round_half_even(interp(x - zp)), since the weights sum
// to 1. Rounding the raw codes (torch 2.13) sends ties the other way when zp is odd; torch 2.14
// rounds relative to zp as here (docs/oracle.md). With an even zp the two forms agree in exact
// arithmetic and the kernels round v itself (one float rounding fewer, and faster).
struct LerpQ {
  float qmin;
  float qmax;
  float zp;
};

template <typename T>
struct TypedPoolKernels {
  using Acc = typename PoolAcc<T>::type;
  // out[j] = max over r < nrows of rows[r][j], j < n (nrows >= 1).
  void (*max_rows)(const T* const* rows, int64_t nrows, T* out, int64_t n);
  // acc[j] = sum over r < nrows of (rows[r][j] - zp), j < n (nrows = 0 gives zeros).
  void (*sum_rows)(const T* const* rows, int64_t nrows, int32_t zp, Acc* acc, int64_t n);
  // Channels-last average of one output pixel: out[c] = avg(sum_r rows[r][c] - zp, div).
  void (*avg_rows)(const T* const* rows, int64_t nrows, T* out, int64_t C, double div,
                   const AvgQ& q);
  // Horizontal passes over a padded row of pixels of C codes (C = 1: NCHW rows; C > 1:
  // channels-last rows), c < C:
  // max: out[o*C + c] = max_k<K tmp[(o*S + k*D)*C + c], o < OW.
  void (*hmax)(const T* tmp, T* out, int64_t OW, int64_t K, int64_t S, int64_t D, int64_t C);
  // average of sums: out[o*C + c] = avg(sum_k<K acc[(o*S + k)*C + c], div[o]).
  void (*havg)(const Acc* acc, T* out, int64_t OW, int64_t K, int64_t S, int64_t C,
               const double* div, const AvgQ& q);
  // average over windows of pixels [ws[o], we[o]) (adaptive pooling).
  void (*havg_win)(const Acc* acc, T* out, int64_t OW, int64_t C, const int64_t* ws,
                   const int64_t* we, const double* div, const AvgQ& q);
  // Global average of P contiguous planes of HW codes: out[p] = avg(sum_i x[p*HW+i] - zp, div).
  void (*plane_avg)(const T* x, T* out, int64_t P, int64_t HW, double div, const AvgQ& q);
  // Nearest gather of one row: out[o] = in[idx[o]]; dup2: out[2i] = out[2i+1] = in[i], i < W.
  void (*gather)(const T* in, T* out, int64_t OW, const int32_t* idx);
  void (*dup2)(const T* in, T* out, int64_t W);
  // Horizontal linear pass, C channels per pixel (C = 1 for NCHW rows):
  //   H[o*C + c] = a0[o] * x[i0[o]*C + c] + a1[o] * x[i1[o]*C + c].
  void (*lerp_h)(const T* x, float* H, int64_t OW, int64_t C, const int32_t* i0,
                 const int32_t* i1, const float* a0, const float* a1);
  // Vertical blend: out[j] = clamp(nearbyint(b0 * H0[j] + b1 * H1[j])), j < n.
  void (*lerp_v)(const float* H0, const float* H1, T* out, int64_t n, float b0, float b1,
                 const LerpQ& q);
  // The same two passes when every weight is a multiple of 1/8 (scale factors 2 and 4 without
  // align_corners), 8-bit codes only (null for qint32): A = 8 a, B = 8 b are integers, every
  // float operation above is exact, and these compute the same numbers in int16:
  //   H8[o*C + c] = A0[o] * x[i0[o]*C + c] + A1[o] * x[i1[o]*C + c]        (= 8 H, |.| <= 2040)
  //   out[j] = clamp(zp + round_half_even((B0 * H8_0[j] + B1 * H8_1[j] - 64 zp) / 64))
  // (B0 H8_0 + B1 H8_1 = 64 (b0 H0 + b1 H1); every sum stays within int16, see the kernels).
  void (*lerp_h8)(const T* x, int16_t* H, int64_t OW, int64_t C, const int32_t* i0,
                  const int32_t* i1, const int16_t* a0, const int16_t* a1);
  void (*lerp_v8)(const int16_t* H0, const int16_t* H1, T* out, int64_t n, int16_t b0,
                  int16_t b1, const AvgQ& q);
};

struct PoolKernelTable {
  Isa isa;
  TypedPoolKernels<uint8_t> u8;
  TypedPoolKernels<int8_t> s8;
  TypedPoolKernels<int32_t> s32;

  // u8, s8 or s32 by code type (the callers are templates on T).
  template <typename T>
  const TypedPoolKernels<T>& of() const {
    if constexpr (std::is_same_v<T, uint8_t>) {
      return u8;
    } else if constexpr (std::is_same_v<T, int8_t>) {
      return s8;
    } else {
      static_assert(std::is_same_v<T, int32_t>, "pool kernels exist for u8, s8 and s32 codes");
      return s32;
    }
  }
};

// The table of kernels::current_isa() (QPLUGIN_CPU_ISA / _set_cpu_isa apply as for table()).
const PoolKernelTable& pool_table();

QPLUGIN_ISA_TABLES(PoolKernelTable, make_pool_table);

}  // namespace kernels
}  // namespace qplugin
