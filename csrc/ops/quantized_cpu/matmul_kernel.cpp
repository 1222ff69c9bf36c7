// QuantizedCPU (and CPU, for a clear error on float input) kernel of quantized matmul: both
// operands quantized per tensor (quint8 x quint8 or qint8 x qint8), no packed weight; shapes and
// broadcasting as torch.matmul. Schema: ops/matmul.cpp. Engine: ops/quantized_cpu/exact_gemm.h.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>
#include <vector>

#include "common/checks.h"
#include "common/quant_utils.h"
#include "ops/quantized_cpu/exact_gemm.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

// qc = quant(qa @ qb) with an exact integer product (PyTorch dequantizes and multiplies in
// float32, so it may differ by 1 where float32 rounding crosses a .5):
//   acc[b][m][n] = sum_k (qa[b][m][k] - za) * (qb[b][k][n] - zb)     exact (exact_gemm.h)
//   qc = clamp(nearbyint(acc * sa * sb / scale) + zero_point, qmin, qmax)   round half to even
// Output: contiguous, of qa's dtype, shape as torch.matmul (1-d operands, broadcast batches).
at::Tensor matmul_quantized_cpu(const at::Tensor& qa, const at::Tensor& qb, double scale,
                                int64_t zero_point) {
  const char* op = "matmul";
  checks::check_quantized_input(op, "qa", qa, {at::kQUInt8, at::kQInt8});
  checks::check_quantized_input(op, "qb", qb, {at::kQUInt8, at::kQInt8});
  TORCH_CHECK(qa.scalar_type() == qb.scalar_type(), "qplugin::matmul: expected qa and qb of the "
              "same dtype, got ", c10::toString(qa.scalar_type()), " and ",
              c10::toString(qb.scalar_type()));
  TORCH_CHECK(qa.dim() >= 1 && qb.dim() >= 1, "qplugin::matmul: expected qa and qb of rank >= "
              "1, got ", qa.dim(), "-D and ", qb.dim(), "-D");
  const auto dtype = qa.scalar_type();
  checks::check_output_qparams(op, scale, zero_point, dtype);
  const double sa = qa.q_scale(), sb = qb.q_scale();
  TORCH_CHECK(std::isfinite(sa) && sa > 0.0 && std::isfinite(sb) && sb > 0.0,
              "qplugin::matmul: expected finite, positive scales of qa and qb, got ", sa, " and ",
              sb);
  const bool a1 = qa.dim() == 1, b1 = qb.dim() == 1;
  at::Tensor A = qa.int_repr(), B = qb.int_repr();
  if (a1) A = A.unsqueeze(0);
  if (b1) B = B.unsqueeze(-1);
  const int64_t M = A.size(-2), K = A.size(-1), N = B.size(-1);
  TORCH_CHECK(B.size(-2) == K, "qplugin::matmul: expected qb with ", K, " rows (qa's last "
              "dimension), got shapes ", qa.sizes(), " and ", qb.sizes());
  // Broadcast the batch dimensions (right-aligned, size 1 stretches).
  const int64_t ra = A.dim() - 2, rb = B.dim() - 2, r = std::max(ra, rb);
  std::vector<int64_t> batch(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) {
    const int64_t da = i - (r - ra) >= 0 ? A.size(i - (r - ra)) : 1;
    const int64_t db = i - (r - rb) >= 0 ? B.size(i - (r - rb)) : 1;
    TORCH_CHECK(da == db || da == 1 || db == 1, "qplugin::matmul: expected broadcastable batch "
                "dimensions, got shapes ", qa.sizes(), " and ", qb.sizes());
    batch[i] = da == 1 ? db : da;
  }
  std::vector<int64_t> out_sizes = batch;
  if (!a1) out_sizes.push_back(M);
  if (!b1) out_sizes.push_back(N);
  at::Tensor y = at::_empty_affine_quantized(out_sizes, qa.options(), scale, zero_point);
  int64_t nb = 1;
  for (auto d : batch) nb *= d;
  if (nb == 0 || M == 0 || N == 0) return y;

  std::vector<int64_t> ea = batch, eb = batch;
  ea.push_back(M); ea.push_back(K);
  eb.push_back(K); eb.push_back(N);
  const at::Tensor Ac = A.expand(ea).reshape({nb, M, K}).contiguous();
  // B transposed to [nb][N][K]: the [out][in] layout of the exact GEMM.
  const at::Tensor Bt = B.expand(eb).reshape({nb, K, N}).transpose(1, 2).contiguous();
  const int32_t za = static_cast<int32_t>(qa.q_zero_point());
  const std::vector<int32_t> zb(static_cast<size_t>(N), static_cast<int32_t>(qb.q_zero_point()));
  std::vector<int64_t> acc(static_cast<size_t>(nb * M * N));
  for (int64_t b = 0; b < nb; ++b) {
    if (dtype == at::kQUInt8) {
      exact_gemm_s64(reinterpret_cast<const uint8_t*>(Ac.data_ptr()) + b * M * K, K, M, K, za,
                     reinterpret_cast<const uint8_t*>(Bt.data_ptr()) + b * N * K, K, N,
                     zb.data(), acc.data() + b * M * N, N);
    } else {
      exact_gemm_s64(reinterpret_cast<const int8_t*>(Ac.data_ptr()) + b * M * K, K, M, K, za,
                     reinterpret_cast<const int8_t*>(Bt.data_ptr()) + b * N * K, K, N,
                     zb.data(), acc.data() + b * M * N, N);
    }
  }
  const double mult = sa * sb;
  const auto rg = qrange(dtype);
  const int64_t total = nb * M * N;
  if (dtype == at::kQUInt8) {
    uint8_t* yp = reinterpret_cast<uint8_t*>(y.data_ptr());
    at::parallel_for(0, total, 4096, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        yp[i] = static_cast<uint8_t>(quantize_exact(static_cast<double>(acc[i]) * mult, scale,
                                                    zero_point, rg.first, rg.second));
    });
  } else {
    int8_t* yp = reinterpret_cast<int8_t*>(y.data_ptr());
    at::parallel_for(0, total, 4096, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        yp[i] = static_cast<int8_t>(quantize_exact(static_cast<double>(acc[i]) * mult, scale,
                                                   zero_point, rg.first, rg.second));
    });
  }
  return y;
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) {
  m.impl("matmul", TORCH_FN(qplugin::ops::matmul_quantized_cpu));
}
TORCH_LIBRARY_IMPL(qplugin, CPU, m) {
  m.impl("matmul", TORCH_FN(qplugin::ops::matmul_quantized_cpu));
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_matmul_kernel)
