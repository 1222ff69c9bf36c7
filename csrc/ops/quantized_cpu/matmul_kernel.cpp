// Kernels of quantized matmul on both front doors: the QuantizedCPU op (and CPU, for a clear error
// on float input) and the PT2 door's `matmul.plain` (uint8/int8 codes + explicit qparams). Both
// operands per tensor (quint8 x quint8 or qint8 x qint8), no packed weight; shapes and
// broadcasting as torch.matmul. Schema: ops/matmul.cpp.
// Engines: the packed u8 x s8 GEMM with exact int32 accumulators (LinearPackedParams::gemm_i32,
// every ISA's qgemm microkernel) when K <= kMaxExactI32K, the exact int64 GEMM
// (ops/quantized_cpu/exact_gemm.h) beyond.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/checks.h"
#include "common/qarg.h"
#include "common/quant_utils.h"
#include "kernels/dispatch.h"
#include "kernels/gemm/exact_gemm.h"
#include "ops/quantized_cpu/exact_gemm.h"
#include "packed/linear_packed_params.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

constexpr int64_t kRows = 32;

// The operand's codes as a plain uint8/int8 tensor without a copy (a view of a quantized
// tensor's bytes: int_repr() would copy them; the operand outlives the call).
at::Tensor codes_of(const QArg& q) {
  const at::Tensor& t = q.tensor();
  if (q.is_plain()) return t;
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(),
                       t.options().dtype(plain_dtype_of(q.scalar_type())));
}  // accumulator rows finished at a time (stay in cache)

// One batch of the packed path: y[M][N] = quant(A[M][K] @ B[K][N]) of dtype `s8` ? qint8 : quint8.
// Operands are mapped onto the u8 x s8 GEMM without changing any difference (a - za)(b - zb):
//   qint8 A: a + 128 as uint8, za + 128;   quint8 B: b - 128 as int8, zb - 128
// (a ^ 0x80 does either map on the byte). The int8 output is computed as uint8 with zero point
// zp + 128 (clamp(r + zp, -128, 127) + 128 = clamp(r + zp + 128, 0, 255)) and mapped back.
void matmul_batch_packed(const uint8_t* a, const uint8_t* b, int64_t M, int64_t K, int64_t N,
                         bool s8, int32_t za, int32_t zb, double mult, double scale,
                         int64_t zero_point, uint8_t* y) {
  // B^T as the int8 "weight" [N][K], in 8-row steps: 8 bytes of a column gathered into one
  // 64-bit store (the rest of K one byte at a time).
  std::vector<int8_t> bt(static_cast<size_t>(N * K));
  const uint8_t flip_b = s8 ? 0 : 0x80;
  const uint64_t flip8 = s8 ? 0 : 0x8080808080808080ull;
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    const uint8_t* r = b + k * N;
    for (int64_t n = 0; n < N; ++n) {
      uint64_t v = 0;
      for (int j = 0; j < 8; ++j) v |= static_cast<uint64_t>(r[j * N + n]) << (8 * j);
      v ^= flip8;
      std::memcpy(bt.data() + n * K + k, &v, 8);
    }
  }
  for (; k < K; ++k) {
    const uint8_t* row = b + k * N;
    for (int64_t n = 0; n < N; ++n) bt[n * K + k] = static_cast<int8_t>(row[n] ^ flip_b);
  }
  const auto w = LinearPackedParams::from_codes(bt.data(), K, N, K, 1.0, s8 ? zb : zb - 128);
  std::vector<uint8_t> ab;
  if (s8) {
    ab.resize(static_cast<size_t>(M * K));
    for (int64_t i = 0; i < M * K; ++i) ab[i] = a[i] ^ 0x80;
    a = ab.data();
  }
  const int32_t za_u8 = s8 ? za + 128 : za;
  const int64_t zp_u8 = s8 ? zero_point + 128 : zero_point;
  const auto& xk = kernels::gemm::exact_gemm_kernels_for(kernels::current_isa());
  auto finish = [&](const int32_t* acc, int64_t rows, uint8_t* out) {
    const int64_t n_all = rows * N;
    std::vector<uint8_t> unsure(static_cast<size_t>(n_all));
    // o = quantize_exact(acc * mult, scale, zp)'s bytes; the elements the vector pass cannot
    // vouch for (near a rounding boundary, or huge) are redone by quantize_exact itself.
    if (xk.requant_i32(acc, n_all, mult, scale, zp_u8, out, unsure.data()) != 0) {
      for (int64_t i = 0; i < n_all; ++i) {
        if (unsure[i]) {
          out[i] = static_cast<uint8_t>(quantize_exact(static_cast<double>(acc[i]) * mult, scale,
                                                       zp_u8, 0, 255));
        }
      }
    }
    if (s8) {
      for (int64_t i = 0; i < n_all; ++i) out[i] ^= 0x80;
    }
  };
  at::parallel_for(0, (M + kRows - 1) / kRows, 1, [&](int64_t b0, int64_t b1) {
    std::vector<int32_t> acc(static_cast<size_t>(kRows * N));
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t m0 = blk * kRows, rows = std::min(kRows, M - m0);
      // Inside a parallel region the GEMM's own parallel_for runs inline (ATen's rule).
      w->gemm_i32(a + m0 * K, K, rows, za_u8, acc.data(), N);
      finish(acc.data(), rows, y + m0 * N);
    }
  });
}

// qc = quant(qa @ qb) with an exact integer product (PyTorch dequantizes and multiplies in
// float32, so it may differ by 1 where float32 rounding crosses a .5):
//   acc[b][m][n] = sum_k (qa[b][m][k] - za) * (qb[b][k][n] - zb)     exact
//   qc = clamp(nearbyint(acc * sa * sb / scale) + zero_point, qmin, qmax)   round half to even
// Output: contiguous, of qa's dtype, shape as torch.matmul (1-d operands, broadcast batches).
at::Tensor matmul_impl(const QArg& qa, const QArg& qb, double scale, int64_t zero_point) {
  const char* op = qa.is_plain() ? "matmul.plain" : "matmul";
  TORCH_CHECK(qa.scalar_type() == qb.scalar_type(), "qplugin::", op, ": expected qa and qb of "
              "the same dtype, got ", c10::toString(qa.tensor().scalar_type()), " and ",
              c10::toString(qb.tensor().scalar_type()));
  TORCH_CHECK(qa.dim() >= 1 && qb.dim() >= 1, "qplugin::", op, ": expected qa and qb of rank >= "
              "1, got ", qa.dim(), "-D and ", qb.dim(), "-D");
  const auto dtype = qa.scalar_type();
  checks::check_output_qparams(op, scale, zero_point, dtype);
  const double sa = qa.q_scale(), sb = qb.q_scale();
  TORCH_CHECK(std::isfinite(sa) && sa > 0.0 && std::isfinite(sb) && sb > 0.0,
              "qplugin::", op, ": expected finite, positive scales of qa and qb, got ", sa,
              " and ", sb);
  const bool a1 = qa.dim() == 1, b1 = qb.dim() == 1;
  at::Tensor A = codes_of(qa), B = codes_of(qb);
  if (a1) A = A.unsqueeze(0);
  if (b1) B = B.unsqueeze(-1);
  const int64_t M = A.size(-2), K = A.size(-1), N = B.size(-1);
  TORCH_CHECK(B.size(-2) == K, "qplugin::", op, ": expected qb with ", K, " rows (qa's last "
              "dimension), got shapes ", qa.sizes(), " and ", qb.sizes());
  // Broadcast the batch dimensions (right-aligned, size 1 stretches).
  const int64_t ra = A.dim() - 2, rb = B.dim() - 2, r = std::max(ra, rb);
  std::vector<int64_t> batch(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) {
    const int64_t da = i - (r - ra) >= 0 ? A.size(i - (r - ra)) : 1;
    const int64_t db = i - (r - rb) >= 0 ? B.size(i - (r - rb)) : 1;
    TORCH_CHECK(da == db || da == 1 || db == 1, "qplugin::", op, ": expected broadcastable "
                "batch dimensions, got shapes ", qa.sizes(), " and ", qb.sizes());
    batch[i] = da == 1 ? db : da;
  }
  std::vector<int64_t> out_sizes = batch;
  if (!a1) out_sizes.push_back(M);
  if (!b1) out_sizes.push_back(N);
  at::Tensor y = new_output(qa, out_sizes, dtype, scale, zero_point);
  int64_t nb = 1;
  for (auto d : batch) nb *= d;
  if (nb == 0 || M == 0 || N == 0) return y;

  std::vector<int64_t> ea = batch, eb = batch;
  ea.push_back(M); ea.push_back(K);
  eb.push_back(K); eb.push_back(N);
  const at::Tensor Ac = A.expand(ea).reshape({nb, M, K}).contiguous();
  const int32_t za = static_cast<int32_t>(qa.q_zero_point());
  const int32_t zb = static_cast<int32_t>(qb.q_zero_point());
  const double mult = sa * sb;
  const bool s8 = dtype == at::kQInt8;
  uint8_t* yp = reinterpret_cast<uint8_t*>(out_ptr(y));
  const uint8_t* ap = reinterpret_cast<const uint8_t*>(Ac.data_ptr());

  if (K <= LinearPackedParams::kMaxExactI32K) {
    const at::Tensor Bc = B.expand(eb).reshape({nb, K, N}).contiguous();
    const uint8_t* bp = reinterpret_cast<const uint8_t*>(Bc.data_ptr());
    auto one = [&](int64_t i) {
      matmul_batch_packed(ap + i * M * K, bp + i * K * N, M, K, N, s8, za, zb, mult, scale,
                          zero_point, yp + i * M * N);
    };
    if (nb == 1) {
      one(0);  // the row blocks / the GEMM spread over the threads
    } else {
      at::parallel_for(0, nb, 1, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) one(i);
      });
    }
    return y;
  }

  // Beyond kMaxExactI32K: the exact int64 GEMM. B transposed to [nb][N][K]: the [out][in]
  // layout it takes.
  const at::Tensor Bt = B.expand(eb).reshape({nb, K, N}).transpose(1, 2).contiguous();
  const std::vector<int32_t> zbv(static_cast<size_t>(N), zb);
  std::vector<int64_t> acc(static_cast<size_t>(nb * M * N));
  for (int64_t b = 0; b < nb; ++b) {
    if (!s8) {
      exact_gemm_s64(ap + b * M * K, K, M, K, za,
                     reinterpret_cast<const uint8_t*>(Bt.data_ptr()) + b * N * K, K, N,
                     zbv.data(), acc.data() + b * M * N, N);
    } else {
      exact_gemm_s64(reinterpret_cast<const int8_t*>(ap) + b * M * K, K, M, K, za,
                     reinterpret_cast<const int8_t*>(Bt.data_ptr()) + b * N * K, K, N,
                     zbv.data(), acc.data() + b * M * N, N);
    }
  }
  const auto rg = qrange(dtype);
  const int64_t total = nb * M * N;
  at::parallel_for(0, total, 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t q = quantize_exact(static_cast<double>(acc[i]) * mult, scale, zero_point,
                                       rg.first, rg.second);
      yp[i] = static_cast<uint8_t>(static_cast<int8_t>(q));  // the code's byte
    }
  });
  return y;
}

at::Tensor matmul_quantized_cpu(const at::Tensor& qa, const at::Tensor& qb, double scale,
                                int64_t zero_point) {
  // Validated in argument order (a function call's arguments are evaluated in any order).
  const QArg a = QArg::quantized("matmul", "qa", qa, {at::kQUInt8, at::kQInt8});
  const QArg b = QArg::quantized("matmul", "qb", qb, {at::kQUInt8, at::kQInt8});
  return matmul_impl(a, b, scale, zero_point);
}

at::Tensor matmul_plain(const at::Tensor& qa, double qa_scale, int64_t qa_zero_point,
                        const at::Tensor& qb, double qb_scale, int64_t qb_zero_point,
                        double scale, int64_t zero_point) {
  const QArg a = QArg::plain("matmul", "qa", qa, qa_scale, qa_zero_point,
                             {at::kQUInt8, at::kQInt8});
  const QArg b = QArg::plain("matmul", "qb", qb, qb_scale, qb_zero_point,
                             {at::kQUInt8, at::kQInt8});
  return matmul_impl(a, b, scale, zero_point);
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) {
  m.impl("matmul", TORCH_FN(qplugin::ops::matmul_quantized_cpu));
  // A quantized tensor passed to the PT2 overload: QArg::plain's clear error, not the
  // dispatcher's "could not run".
  m.impl("matmul.plain", TORCH_FN(qplugin::ops::matmul_plain));
}
TORCH_LIBRARY_IMPL(qplugin, CPU, m) {
  m.impl("matmul", TORCH_FN(qplugin::ops::matmul_quantized_cpu));
  m.impl("matmul.plain", TORCH_FN(qplugin::ops::matmul_plain));
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_matmul_kernel)
