// avx512vnni pooling/resampling kernels: the portable forms of pool_generic_impl.h compiled with this
// tier's flags (setup.py). Must equal the scalar kernels byte for byte.
// Changes with: pool_generic_impl.h, pool_dispatch.h.
#define QPLUGIN_ISA_NS avx512vnni
// Let the vectorizer use full 512-bit vectors (GCC prefers 256 by default).
#pragma GCC target("prefer-vector-width=512")
#include <immintrin.h>

#include "kernels/pool/pool_generic_impl.h"

namespace qplugin {
namespace kernels {
namespace avx512vnni {
namespace {

// Global average of 8-bit planes (NCHW adaptive_avg_pool to 1x1): VPSADBW sums of 64-byte
// chunks (masked tail loads never touch the next plane), int8 codes flipped to unsigned
// (x + 128, corrected in the bias). Exact sums, then pool_generic::avg_one: the scalar bytes.
template <typename T>
void plane_avg(const T* xt, T* out, int64_t P, int64_t HW, double div, const AvgQ& q) {
  const uint8_t* x = reinterpret_cast<const uint8_t*>(xt);
  const __m512i flip = _mm512_set1_epi8(std::is_signed<T>::value ? static_cast<char>(0x80) : 0);
  const __m512i zero = _mm512_setzero_si512();
  const int64_t bias = -(static_cast<int64_t>(q.zp) + (std::is_signed<T>::value ? 128 : 0)) * HW;
  const float d = static_cast<float>(div);
  const int64_t full = HW / 64 * 64;
  const __mmask64 m = _bzhi_u64(~0ull, static_cast<unsigned>(HW - full));
  for (int64_t p = 0; p < P; ++p) {
    const uint8_t* a = x + p * HW;
    __m512i acc = zero;
    for (int64_t i = 0; i < full; i += 64)
      acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_xor_si512(_mm512_loadu_si512(a + i), flip), zero));
    if (full < HW) {
      __m512i v = _mm512_maskz_loadu_epi8(m, a + full);
      v = _mm512_maskz_mov_epi8(m, _mm512_xor_si512(v, flip));
      acc = _mm512_add_epi64(acc, _mm512_sad_epu8(v, zero));
    }
    const int64_t s = _mm512_reduce_add_epi64(acc) + bias;
    out[p] = pool_generic::avg_one<T>(static_cast<int32_t>(s), d, q);
  }
}

}  // namespace

const PoolKernelTable& make_pool_table() {
  static const PoolKernelTable t = [] {
    PoolKernelTable k{};
    k.isa = Isa::kAvx512Vnni;
    k.u8 = pool_generic::typed<uint8_t>();
    k.s8 = pool_generic::typed<int8_t>();
    k.u8.plane_avg = &plane_avg<uint8_t>;
    k.s8.plane_avg = &plane_avg<int8_t>;
    k.s32 = pool_generic::typed<int32_t>();
    return k;
  }();
  return t;
}

}  // namespace avx512vnni
}  // namespace kernels
}  // namespace qplugin
