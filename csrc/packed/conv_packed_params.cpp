// Conv packed params: validation, packing (gemm / depthwise / transposed phases), apply (the conv
// ops: input layout, output allocation, requantization terms), unpack and the pickled state.
// Changes with: conv_packed_params.h, driver/conv_gemm.cpp, library.cpp.
#include "packed/conv_packed_params.h"

#include <cmath>
#include <cstring>
#include <string>

#include "common/checks.h"
#include "packed/serialization.h"
#include "driver/conv_gemm.h"

namespace qplugin {

namespace {

std::string vec_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

void check_len(const char* op, const char* what, const std::vector<int64_t>& v, int64_t n) {
  TORCH_CHECK(static_cast<int64_t>(v.size()) == n, "qplugin::", op, ": expected ", what, " with ",
              n, " values (one per spatial dimension), got ", vec_str(v));
}

}  // namespace

void ConvPackedParamsBase::init(int64_t spatial, const at::Tensor& weight,
                                const c10::optional<at::Tensor>& bias, std::vector<int64_t> stride,
                                std::vector<int64_t> padding, std::vector<int64_t> output_padding,
                                std::vector<int64_t> dilation, int64_t groups, bool transpose,
                                const char* op) {
  TORCH_INTERNAL_ASSERT(spatial == 2 || spatial == 3, "qplugin: conv spatial rank ", spatial);
  packed::check_qint8_weight(weight, op);
  TORCH_CHECK(weight.dim() == spatial + 2, "qplugin::", op, ": expected a ", spatial + 2,
              "-D weight ", transpose ? "[in_channels, out_channels/groups, k...]"
                                      : "[out_channels, in_channels/groups, k...]",
              ", got ", weight.dim(), "-D (shape ", weight.sizes(), ")");
  check_len(op, "stride", stride, spatial);
  check_len(op, "padding", padding, spatial);
  check_len(op, "dilation", dilation, spatial);
  if (transpose) check_len(op, "output_padding", output_padding, spatial);
  else if (output_padding.empty()) output_padding.assign(static_cast<size_t>(spatial), 0);
  TORCH_CHECK(groups > 0, "qplugin::", op, ": expected groups > 0, got ", groups);
  for (int64_t i = 0; i < spatial; ++i) {
    TORCH_CHECK(stride[i] > 0, "qplugin::", op, ": expected stride > 0, got ", vec_str(stride));
    TORCH_CHECK(dilation[i] > 0, "qplugin::", op, ": expected dilation > 0, got ",
                vec_str(dilation));
    TORCH_CHECK(padding[i] >= 0, "qplugin::", op, ": expected padding >= 0, got ",
                vec_str(padding));
    TORCH_CHECK(weight.size(i + 2) > 0, "qplugin::", op,
                ": expected a kernel size > 0 in every spatial dimension, got weight shape ",
                weight.sizes());
    if (transpose) {
      // Any output_padding >= 0, as PyTorch's quantized prepack (x86/fbgemm) accepts: the
      // output is the full transposed conv cropped to [padding, padding + out), rows past the
      // full extent holding the bias only -- well defined, and PyTorch computes exactly that
      // (float torch rejects output_padding >= max(stride, dilation); NOTES_ops2.md).
      // Negative output_padding (PyTorch: a crop) stays rejected like float torch does.
      TORCH_CHECK(output_padding[i] >= 0, "qplugin::", op,
                  ": expected output_padding >= 0, got output_padding ", vec_str(output_padding));
    } else {
      TORCH_CHECK(output_padding[i] == 0, "qplugin::", op,
                  ": expected output_padding 0 for a (non-transposed) conv, got ",
                  vec_str(output_padding));
    }
  }
  // Hostile sizes (checks.h): the dilated kernel span d * (k - 1) + 1 and 2 * padding must be
  // int64 sizes within the element limit, so apply's output-size arithmetic cannot overflow.
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t span = checks::add_size(
        op, "the dilated kernel span dilation * (kernel_size - 1) + 1",
        checks::mul_size(op, "the dilated kernel span dilation * (kernel_size - 1) + 1",
                         dilation[i], weight.size(i + 2) - 1), 1);
    checks::check_extent(op, "the dilated kernel span dilation * (kernel_size - 1) + 1", span);
    checks::check_extent(op, "the padding", padding[i]);
    checks::check_extent(op, "the stride", stride[i]);
    if (transpose) checks::check_extent(op, "the output_padding", output_padding[i]);
  }
  if (transpose) {
    // A transposed conv packs one GEMM per output residue class (stride_d * stride_h * stride_w
    // of them, below), so the stride product sizes the packing work and memory. Real models use
    // strides up to 4 (at most 64 phases in 3-d); 4096 leaves room and bounds a hostile stride
    // (2^31 used to end in std::bad_alloc).
    int64_t phases = 1;
    for (int64_t i = 0; i < spatial; ++i) {
      phases = checks::mul_size(op, "the number of stride phases (product of the strides)", phases,
                                stride[i]);
    }
    TORCH_CHECK_NOT_IMPLEMENTED(phases <= kMaxTransposePhases, "qplugin::", op,
                                ": expected the product of the strides (one packed phase each) "
                                "to be at most ", kMaxTransposePhases, ", got stride ",
                                vec_str(stride), " (", phases, " phases)");
  }
  const int64_t w0 = weight.size(0), w1 = weight.size(1);
  if (transpose) {
    TORCH_CHECK(w0 % groups == 0, "qplugin::", op, ": expected in_channels (weight.size(0) = ", w0,
                ") divisible by groups = ", groups);
    Cin_ = w0;
    Cout_ = w1 * groups;
  } else {
    // PyTorch's prepack silently drops channels here (docs/oracle.md): qplugin raises.
    TORCH_CHECK(w0 % groups == 0, "qplugin::", op, ": expected out_channels (weight.size(0) = ",
                w0, ") divisible by groups = ", groups);
    Cout_ = w0;
    Cin_ = w1 * groups;
  }
  TORCH_CHECK(Cin_ > 0 && Cout_ > 0, "qplugin::", op,
              ": expected a weight with in and out channels > 0, got shape ", weight.sizes());
  spatial_ = spatial;
  stride_ = stride;
  padding_ = padding;
  output_padding_ = output_padding;
  dilation_ = dilation;
  groups_ = groups;
  transpose_ = transpose;
  const int64_t off = 3 - spatial;  // 2-d: D = 1
  for (int64_t i = 0; i < spatial; ++i) {
    k_[off + i] = weight.size(2 + i);
    s_[off + i] = stride[i];
    p_[off + i] = padding[i];
    d_[off + i] = dilation[i];
    op_[off + i] = output_padding[i];
  }

  // Weight quantization: one float scale and int32 zero point per output channel.
  const int64_t Cout_g = Cout_ / groups;
  w_scale_f_.assign(static_cast<size_t>(Cout_), 0.f);
  w_zp_i32_.assign(static_cast<size_t>(Cout_), 0);
  any_w_zp_ = false;
  const auto qscheme = weight.qscheme();
  if (qscheme == at::kPerTensorAffine) {
    packed::check_weight_scale(op, weight.q_scale(), "");
    packed::check_weight_zp(op, weight.q_zero_point(), "");
    for (int64_t n = 0; n < Cout_; ++n) {
      w_scale_f_[n] = static_cast<float>(weight.q_scale());
      w_zp_i32_[n] = static_cast<int32_t>(weight.q_zero_point());
    }
  } else if (qscheme == at::kPerChannelAffine) {
    const int64_t axis = transpose ? 1 : 0;
    TORCH_CHECK(weight.q_per_channel_axis() == axis, "qplugin::", op,
                ": expected a per-channel weight quantized along axis ", axis,
                transpose ? " (the output channels of a transposed-conv weight)"
                          : " (output channels)",
                ", got axis ", weight.q_per_channel_axis());
    const at::Tensor s = weight.q_per_channel_scales().to(at::kDouble).contiguous();
    const at::Tensor z = weight.q_per_channel_zero_points().to(at::kLong).contiguous();
    const int64_t nch = weight.size(axis);
    TORCH_CHECK(s.numel() == nch && z.numel() == nch, "qplugin::", op, ": expected ", nch,
                " per-channel scales and zero points, got ", s.numel(), " and ", z.numel());
    for (int64_t c = 0; c < nch; ++c) {
      const std::string at = packed::at_channel("channel", c);
      packed::check_weight_scale(op, s.data_ptr<double>()[c], at);
      packed::check_weight_zp(op, z.data_ptr<int64_t>()[c], at);
    }
    for (int64_t n = 0; n < Cout_; ++n) {
      const int64_t c = transpose ? n % Cout_g : n;
      w_scale_f_[n] = static_cast<float>(s.data_ptr<double>()[c]);
      w_zp_i32_[n] = static_cast<int32_t>(z.data_ptr<int64_t>()[c]);
    }
  } else {
    TORCH_CHECK_NOT_IMPLEMENTED(false, "qplugin::", op,
                                ": expected a weight quantized per tensor (torch.per_tensor_affine)"
                                " or per channel (torch.per_channel_affine), got ",
                                c10::toString(qscheme));
  }
  for (int64_t n = 0; n < Cout_; ++n) any_w_zp_ = any_w_zp_ || w_zp_i32_[n] != 0;

  bias_ = packed::checked_bias(bias, Cout_, "out_channels", op);
  weight_ = weight.clone();

  // Packing. w5: int8 [w0][w1][KD][KH][KW].
  at::Tensor w5 = weight.int_repr();
  if (spatial == 2) w5 = w5.unsqueeze(2);
  w5 = w5.contiguous();
  const int8_t* wp = w5.data_ptr<int8_t>();
  const int64_t taps = k_[0] * k_[1] * k_[2];
  const kernels::Isa isa = kernels::current_isa();
  gemm_ = &kernels::gemm::qgemm_kernels_for(isa);
  dw_ = nullptr;
  phases_.clear();
  dw_w_.clear();
  dw_wsum_.clear();
  dw_w8_.clear();
  dw_w3_.clear();
  dw_w5_.clear();
  const int64_t Cin_g = Cin_ / groups;
  if (!transpose && groups > 1 && Cin_g == 1 && taps <= kernels::conv::kMaxDwTaps) {
    kind_ = Kind::kDepthwise;
    dw_ = &kernels::conv::dwconv_kernels_for(isa);
    dw_w_.resize(static_cast<size_t>(taps * Cout_));
    dw_wsum_.assign(static_cast<size_t>(Cout_), 0);
    for (int64_t n = 0; n < Cout_; ++n) {
      for (int64_t t = 0; t < taps; ++t) {
        const int32_t v = static_cast<int32_t>(wp[n * taps + t]) - w_zp_i32_[n];
        dw_w_[t * Cout_ + n] = v;
        dw_wsum_[n] += v;
      }
    }
    if (!any_w_zp_) {
      const int64_t cblocks = (Cout_ + 63) / 64;
      dw_w8_.assign(static_cast<size_t>(cblocks * taps * 256), 0);
      for (int64_t n = 0; n < Cout_; ++n) {
        const int64_t cb = n / 64, i = (n % 64) / 4, j = n % 4;
        for (int64_t t = 0; t < taps; ++t)
          dw_w8_[((cb * taps + t) * 4 + j) * 64 + 4 * i + j] = wp[n * taps + t];
      }
      if (k_[0] == 1 && k_[1] == 3 && k_[2] == 3) {
        dw_w3_.assign(static_cast<size_t>((Cout_ + 15) / 16 * 3 * 64), 0);
        for (int64_t n = 0; n < Cout_; ++n)
          for (int64_t kh = 0; kh < 3; ++kh)
            for (int64_t kw = 0; kw < 3; ++kw)
              dw_w3_[(n / 16 * 3 + kh) * 64 + 4 * (n % 16) + kw] = wp[n * 9 + kh * 3 + kw];
      }
      if (k_[0] == 1 && k_[1] == 5 && k_[2] == 5) {
        dw_w5_.assign(static_cast<size_t>((Cout_ + 15) / 16 * 10 * 64), 0);
        for (int64_t n = 0; n < Cout_; ++n)
          for (int64_t kh = 0; kh < 5; ++kh)
            for (int64_t kw = 0; kw < 5; ++kw)
              dw_w5_[((n / 16 * 5 + kh) * 2 + kw / 4) * 64 + 4 * (n % 16) + kw % 4] =
                  wp[n * 25 + kh * 5 + kw];
      }
    }
    return;
  }
  const auto& k = *gemm_;
  if (!transpose) {
    kind_ = Kind::kGemm;
    Phase ph;
    for (int i = 0; i < 3; ++i) {
      ph.r[i] = 0;
      for (int64_t t = 0; t < k_[i]; ++t) ph.taps[i].push_back(t);
    }
    ph.K = taps * Cin_g;
    // [Cout][Cin_g][taps] -> [Cout][taps][Cin_g] (K ordered (kd, kh, kw, c), as im2col writes).
    at::Tensor wt = w5.view({Cout_, Cin_g, taps}).permute({0, 2, 1}).contiguous();
    ph.group_bytes = k.packed_b_bytes(ph.K, Cout_g);
    ph.packed = at::empty({ph.group_bytes * groups}, at::device(at::kCPU).dtype(at::kChar));
    ph.col_sums.assign(static_cast<size_t>(Cout_), 0);
    for (int64_t g = 0; g < groups; ++g) {
      k.pack_b(wt.data_ptr<int8_t>() + g * Cout_g * ph.K, /*ldw=*/ph.K, ph.K, Cout_g,
               ph.packed.data_ptr<int8_t>() + g * ph.group_bytes, ph.col_sums.data() + g * Cout_g);
    }
    const bool one_by_one = taps == 1 && s_[0] == 1 && s_[1] == 1 && s_[2] == 1 && p_[0] == 0 &&
                            p_[1] == 0 && p_[2] == 0;  // reads the input as A: no igemm
    // A span of taps_w * C_in bytes that is not a multiple of kr takes zero weights up to the
    // next k-group in every span (below); the AVX2 driver mostly multiplies compact rows with
    // `packed` instead (run_igemm in conv_gemm.cpp, where the rule and its measurements are).
    if (k.igemm != nullptr && groups == 1 && d_[2] == 1 && !any_w_zp_ && !one_by_one &&
        ph.K > 0) {
      const int64_t span = k_[2] * Cin_;
      ph.nseg = k_[0] * k_[1];
      ph.kseg = (span + k.kr - 1) / k.kr * k.kr;
      if (ph.kseg == span) {
        ph.packed_ind = ph.packed;
        // The skipping path cuts spans at tap boundaries: every tap's C_in bytes whole k-groups.
        if (Cin_ % k.kr == 0) {
          ph.tap_col_sums.assign(static_cast<size_t>(taps * Cout_), 0);
          const int8_t* src = wt.data_ptr<int8_t>();
          for (int64_t n = 0; n < Cout_; ++n)
            for (int64_t t = 0; t < taps; ++t) {
              int32_t sum = 0;
              for (int64_t c = 0; c < Cin_; ++c) sum += src[(n * taps + t) * Cin_ + c];
              ph.tap_col_sums[t * Cout_ + n] = sum;
            }
        }
      } else {
        // Insert kseg - span zero weights after every span (the A bytes read there belong to
        // the next pixel or the padding; multiplied by 0 they add nothing).
        const int64_t Ki = ph.nseg * ph.kseg;
        std::vector<int8_t> wi(static_cast<size_t>(Cout_ * Ki), 0);
        const int8_t* src = wt.data_ptr<int8_t>();
        for (int64_t n = 0; n < Cout_; ++n)
          for (int64_t sg = 0; sg < ph.nseg; ++sg)
            std::memcpy(wi.data() + n * Ki + sg * ph.kseg, src + n * ph.K + sg * span,
                        static_cast<size_t>(span));
        std::vector<int32_t> cs(static_cast<size_t>(Cout_));
        ph.packed_ind = at::empty({k.packed_b_bytes(Ki, Cout_)},
                                  at::device(at::kCPU).dtype(at::kChar));
        k.pack_b(wi.data(), Ki, Ki, Cout_, ph.packed_ind.data_ptr<int8_t>(), cs.data());
      }
    }
    phases_.push_back(std::move(ph));
    return;
  }
  // Transposed: output o = i * s - p + k * d. Phase r (o = r mod s) gets the taps with
  // (r + p - k * d) = 0 mod s, reading input i = (o + p - k * d) / s.
  kind_ = Kind::kTransposed;
  for (int64_t rd = 0; rd < s_[0]; ++rd)
    for (int64_t rh = 0; rh < s_[1]; ++rh)
      for (int64_t rw = 0; rw < s_[2]; ++rw) {
        Phase ph;
        const int64_t r[3] = {rd, rh, rw};
        int64_t ntaps = 1;
        for (int i = 0; i < 3; ++i) {
          ph.r[i] = r[i];
          for (int64_t t = 0; t < k_[i]; ++t) {
            const int64_t v = r[i] + p_[i] - t * d_[i];
            if (((v % s_[i]) + s_[i]) % s_[i] == 0) ph.taps[i].push_back(t);
          }
          ntaps *= static_cast<int64_t>(ph.taps[i].size());
        }
        ph.K = ntaps * Cin_g;
        // B[n][(t, ci)] = W[g * Cin_g + ci][n][tap t] for group g.
        std::vector<int8_t> b(static_cast<size_t>(std::max<int64_t>(1, Cout_g * ph.K)));
        ph.group_bytes = k.packed_b_bytes(ph.K, Cout_g);
        ph.packed = at::empty({ph.group_bytes * groups}, at::device(at::kCPU).dtype(at::kChar));
        ph.col_sums.assign(static_cast<size_t>(Cout_), 0);
        for (int64_t g = 0; g < groups; ++g) {
          for (int64_t n = 0; n < Cout_g; ++n) {
            int64_t kk = 0;
            for (int64_t td : ph.taps[0])
              for (int64_t th : ph.taps[1])
                for (int64_t tw : ph.taps[2]) {
                  const int64_t t = (td * k_[1] + th) * k_[2] + tw;
                  for (int64_t ci = 0; ci < Cin_g; ++ci)
                    b[n * ph.K + kk++] = wp[((g * Cin_g + ci) * Cout_g + n) * taps + t];
                }
          }
          k.pack_b(b.data(), /*ldw=*/ph.K, ph.K, Cout_g,
                   ph.packed.data_ptr<int8_t>() + g * ph.group_bytes,
                   ph.col_sums.data() + g * Cout_g);
        }
        // Implicit GEMM for the phase (driver/conv_gemm.cpp run_igemm_transposed): with
        // dilation_w 1 the phase's W taps read consecutive input pixels in descending tap order,
        // so with the W taps reversed each (kd, kh) tap pair is one span of taps_w * C_in input
        // bytes (kseg: rounded up to kr with zero weights). Not for a phase with one tap per
        // dimension at offset 0 (kernel = stride, no padding: run_phase reads the input as A).
        bool one_tap_ident = true;
        for (int i = 0; i < 3; ++i) {
          one_tap_ident = one_tap_ident && ph.taps[i].size() == 1 &&
                          r[i] + p_[i] - ph.taps[i][0] * d_[i] == 0;
        }
        if (k.igemm != nullptr && groups == 1 && d_[2] == 1 && !any_w_zp_ && ph.K > 0 &&
            !one_tap_ident) {
          const int64_t Tw = static_cast<int64_t>(ph.taps[2].size());
          const int64_t span = Tw * Cin_;
          ph.nseg = static_cast<int64_t>(ph.taps[0].size() * ph.taps[1].size());
          ph.kseg = (span + k.kr - 1) / k.kr * k.kr;
          const int64_t Ki = ph.nseg * ph.kseg;
          std::vector<int8_t> wi(static_cast<size_t>(Cout_ * Ki), 0);
          for (int64_t n = 0; n < Cout_; ++n) {
            int64_t sg = 0;
            for (int64_t td : ph.taps[0])
              for (int64_t th : ph.taps[1]) {
                for (int64_t u = 0; u < Tw; ++u) {
                  const int64_t tw = ph.taps[2][Tw - 1 - u];  // descending: ascending input
                  const int64_t t = (td * k_[1] + th) * k_[2] + tw;
                  for (int64_t ci = 0; ci < Cin_; ++ci)
                    wi[n * Ki + sg * ph.kseg + u * Cin_ + ci] = wp[(ci * Cout_ + n) * taps + t];
                }
                ++sg;
              }
          }
          std::vector<int32_t> cs(static_cast<size_t>(Cout_));
          ph.packed_ind = at::empty({k.packed_b_bytes(Ki, Cout_)},
                                    at::device(at::kCPU).dtype(at::kChar));
          k.pack_b(wi.data(), Ki, Ki, Cout_, ph.packed_ind.data_ptr<int8_t>(), cs.data());
        }
        phases_.push_back(std::move(ph));
      }
}

std::string ConvPackedParamsBase::kernel_name() const {
  if (kind_ == Kind::kDepthwise) return dw_->name;
  return gemm_->name;
}

at::Tensor ConvPackedParamsBase::apply(const QArg& x_in, double output_scale,
                                       int64_t output_zero_point, bool relu,
                                       const char* op) const {
  // Scratch (padded input, im2col rows, tables) that fails to allocate names the op (checks.h).
  return checks::guard_alloc(op, [&] {
    return apply_unguarded(x_in, output_scale, output_zero_point, relu, op);
  });
}

at::Tensor ConvPackedParamsBase::apply_unguarded(const QArg& xq, double output_scale,
                                                 int64_t output_zero_point, bool relu,
                                                 const char* op) const {
  const at::Tensor& x_in = xq.tensor();  // validated by the caller (QArg)
  // conv1d ops pass an unsqueezed 4-D input (conv_kernel.cpp).
  TORCH_CHECK(x_in.dim() == spatial_ + 2, "qplugin::", op, ": expected a ", spatial_ + 2,
              "-D input (N, C, ", spatial_ == 3 ? "D, H, W" : "H, W", "), got ", x_in.dim(),
              "-D (shape ", x_in.sizes(), ")");
  TORCH_CHECK(x_in.size(1) == Cin_, "qplugin::", op, ": expected input with ", Cin_,
              " channels (dim 1), got ", x_in.size(1), " (input shape ", x_in.sizes(), ")");
  checks::check_output_qparams(op, output_scale, output_zero_point, at::kQUInt8);
  const double in_scale = xq.q_scale();
  const int64_t in_zp = xq.q_zero_point();
  const float sa = static_cast<float>(in_scale);
  TORCH_CHECK(std::isfinite(in_scale) && in_scale > 0 && sa > 0.0f && std::isfinite(sa),
              "qplugin::", op, ": expected input with a finite, positive scale, got ", in_scale);

  const int64_t N = x_in.size(0);
  const int64_t off = 3 - spatial_;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  for (int64_t i = 0; i < spatial_; ++i) in[off + i] = x_in.size(2 + i);
  for (int i = 0; i < 3; ++i) {
    // span, 2 * p and op are at most 2^40 (checked at prepack), in[i] is a tensor size.
    const int64_t span = d_[i] * (k_[i] - 1) + 1;
    if (transpose_) {
      const char* what = "the output size (in - 1) * stride - 2 * padding + dilation * "
                         "(kernel_size - 1) + output_padding + 1";
      out[i] = in[i] == 0 ? 0
                          : checks::add_size(op, what, checks::mul_size(op, what, in[i] - 1, s_[i]),
                                             span + op_[i]) - 2 * p_[i];
    } else {
      out[i] = in[i] + 2 * p_[i] >= span ? (in[i] + 2 * p_[i] - span) / s_[i] + 1 : 0;
    }
    // PyTorch's conv3d returns an empty tensor here (docs/oracle.md): qplugin raises.
    TORCH_CHECK(out[i] > 0 || in[i] == 0, "qplugin::", op,
                ": expected the (dilated) kernel to fit in the padded input, got input shape ",
                x_in.sizes(), ", kernel ", k_[i], ", padding ", p_[i], ", dilation ", d_[i],
                transpose_ ? ", output padding " : "",
                transpose_ ? std::to_string(op_[i]) : "", " (output size ", out[i], ")");
  }
  std::vector<int64_t> out_sizes = {N, Cout_};
  for (int64_t i = 0; i < spatial_; ++i) out_sizes.push_back(out[off + i]);
  checks::check_numel(op, "an output", out_sizes);
  if (!transpose_) {
    // The igemm path copies the input into a zero-point-padded buffer (conv_gemm.cpp).
    std::vector<int64_t> padded = {N, Cin_};
    for (int64_t i = 0; i < spatial_; ++i) padded.push_back(in[off + i] + 2 * p_[off + i]);
    checks::check_numel(op, "a padded input (N, C, spatial + 2 * padding)", padded);
  }
  const auto mf = spatial_ == 3 ? at::MemoryFormat::ChannelsLast3d : at::MemoryFormat::ChannelsLast;
  at::Tensor y = new_output(xq, out_sizes, at::kQUInt8, output_scale, output_zero_point, mf);
  if (y.numel() == 0) return y;
  // NDHWC input: a channels-last input is used in place, a contiguous NCHW one goes through
  // driver::nchw_to_nhwc_u8 (8x8 byte-block transposes; ATen's quint8 copy is ~4x slower), anything
  // else through ATen.
  at::Tensor x;
  bool x_nchw = false;
  if (x_in.is_contiguous(mf)) {
    x = x_in;
  } else if (x_in.is_contiguous() && driver::conv_reads_nchw(*this)) {
    x = x_in;  // the kernel reads the NCDHW rows in place
    x_nchw = true;
  } else if (x_in.dim() == 2 + spatial_ && x_in.is_contiguous()) {
    x = at::empty({x_in.numel()}, x_in.options().dtype(at::kByte));
    driver::nchw_to_nhwc_u8(reinterpret_cast<const uint8_t*>(x_in.data_ptr()), N, Cin_,
                         x_in.numel() / std::max<int64_t>(1, N * Cin_),
                         reinterpret_cast<uint8_t*>(x.data_ptr()));
  } else {
    x = x_in.contiguous(mf);
  }
  const uint8_t* xp = reinterpret_cast<const uint8_t*>(x.data_ptr());

  // Requantization terms (qgemm.h): v = (acc + bias / (s_a s_w)) * ((s_a s_w) / s_out), float32,
  // in the order of the linear ops (and PyTorch's fbgemm path).
  const float so = static_cast<float>(output_scale);
  std::vector<float> mult(static_cast<size_t>(Cout_)), bq(static_cast<size_t>(Cout_));
  const float* bias = bias_.has_value() ? bias_->data_ptr<float>() : nullptr;
  bool finite = true;
  for (int64_t n = 0; n < Cout_; ++n) {
    const float atw = sa * w_scale_f_[n];
    mult[n] = atw / so;
    bq[n] = bias != nullptr ? bias[n] / atw : 0.0f;
    finite = finite && atw > 0.0f && std::isfinite(mult[n]) && mult[n] > 0.0f;
  }
  TORCH_CHECK(finite, "qplugin::", op,
              ": expected input_scale * weight_scale and its ratio to output_scale to be finite "
              "and non-zero in float32, got input scale ", in_scale, " and output scale ",
              output_scale);
  const int64_t lo = relu ? std::max<int64_t>(0, output_zero_point) : 0;
  driver::ConvRequant rq{mult.data(), bq.data(), static_cast<float>(lo - output_zero_point),
                      static_cast<float>(255 - output_zero_point),
                      static_cast<int32_t>(output_zero_point), static_cast<int32_t>(in_zp)};
  driver::conv_forward(*this, xp, N, in, reinterpret_cast<uint8_t*>(out_ptr(y)), out, rq, x_nchw);
  return y;
}

std::tuple<at::Tensor, c10::optional<at::Tensor>> ConvPackedParamsBase::unpack() const {
  return packed::cloned_weight_and_bias(weight_, bias_);
}

ConvPackedParamsBase::State ConvPackedParamsBase::getstate() const {
  auto wb = unpack();
  return {kStateVersion, std::get<0>(wb), std::get<1>(wb), stride_, padding_, output_padding_,
          dilation_, groups_, transpose_ ? kFlagTranspose : 0};
}

void ConvPackedParamsBase::init_from_state(int64_t spatial, const c10::IValue& state,
                                           const char* cls) {
  const auto& el = packed::state_elements(
      state, cls, "weight, bias, stride, padding, output_padding, dilation, groups, flags", 9);
  packed::check_state_tensor(el, 1, false, cls, "a qint8 weight tensor");
  packed::check_state_tensor(el, 2, true, cls, "a float32 bias tensor or None");
  for (int i = 3; i < 7; ++i) {
    TORCH_CHECK(el[i].isIntList(), "qplugin::", cls, ": expected an int list as element ", i,
                " of the state, got ", el[i].tagKind());
  }
  TORCH_CHECK(el[7].isInt() && el[8].isInt(), "qplugin::", cls,
              ": expected integer groups and flags as the last two elements");
  const int64_t flags = el[8].toInt();
  TORCH_CHECK((flags & ~kFlagTranspose) == 0, "qplugin::", cls, ": expected flags in {0, 1}, got ",
              flags);
  c10::optional<at::Tensor> bias;
  if (el[2].isTensor()) bias = el[2].toTensor();
  init(spatial, el[1].toTensor(), bias, el[3].toIntVector(), el[4].toIntVector(),
       el[5].toIntVector(), el[6].toIntVector(), el[7].toInt(), flags & kFlagTranspose, cls);
}

}  // namespace qplugin
