// CellParams: construction checks, unpack and the pickled state. Changes with: cell_params.h.
#include "packed/cell_params.h"

#include "packed/serialization.h"

namespace qplugin {

namespace {
constexpr const char* kSetstate = "CellParams.__setstate__";

// W_hh is [G, H] with G = gates * H; W_ih is [G, I]. The gate count (1, 3 or 4) is the
// consumer's to check (it knows the cell kind); here only that the two agree.
void check_pair(const char* op, int64_t ih_out, int64_t hh_out, int64_t hh_in) {
  TORCH_CHECK(ih_out == hh_out, "qplugin::", op,
              ": expected w_ih and w_hh with the same number of output features (gates x "
              "hidden_size), got ", ih_out, " and ", hh_out);
  TORCH_CHECK(hh_in > 0 && hh_out % hh_in == 0, "qplugin::", op,
              ": expected w_hh of shape [gates x hidden_size, hidden_size], got [", hh_out, ", ",
              hh_in, "]");
}

// A new CellParams for the pair w_ih, w_hh (packed-params class `cls`), checked.
template <class W>
c10::intrusive_ptr<CellParams> new_cell(const W& w_ih, const W& w_hh, const char* cls,
                                        const char* op) {
  TORCH_CHECK(w_ih && w_hh, "qplugin::", op, ": expected packed weights (qplugin.", cls,
              "), got None");
  check_pair(op, w_ih->out_features(), w_hh->out_features(), w_hh->in_features());
  return c10::make_intrusive<CellParams>();
}
}  // namespace

c10::intrusive_ptr<CellParams> CellParams::make_int8(c10::intrusive_ptr<LinearPackedParams> w_ih,
                                                     c10::intrusive_ptr<LinearPackedParams> w_hh,
                                                     bool reduce_range, const char* op) {
  auto p = new_cell(w_ih, w_hh, "LinearPackedParams", op);
  p->ih_ = std::move(w_ih);
  p->hh_ = std::move(w_hh);
  p->reduce_range_ = reduce_range;
  return p;
}

c10::intrusive_ptr<CellParams> CellParams::make_fp16(
    c10::intrusive_ptr<LinearPackedParamsFp16> w_ih,
    c10::intrusive_ptr<LinearPackedParamsFp16> w_hh, const char* op) {
  auto p = new_cell(w_ih, w_hh, "LinearPackedParamsFp16", op);
  p->ih16_ = std::move(w_ih);
  p->hh16_ = std::move(w_hh);
  return p;
}

std::vector<int64_t> CellParams::w_ih_shape() const {
  return is_fp16() ? std::vector<int64_t>{ih16_->out_features(), ih16_->in_features()}
                   : std::vector<int64_t>{ih_->out_features(), ih_->in_features()};
}

std::vector<int64_t> CellParams::w_hh_shape() const {
  return is_fp16() ? std::vector<int64_t>{hh16_->out_features(), hh16_->in_features()}
                   : std::vector<int64_t>{hh_->out_features(), hh_->in_features()};
}

std::tuple<at::Tensor, c10::optional<at::Tensor>, at::Tensor, c10::optional<at::Tensor>>
CellParams::unpack() const {
  auto a = is_fp16() ? ih16_->unpack() : ih_->unpack();
  auto b = is_fp16() ? hh16_->unpack() : hh_->unpack();
  return {std::get<0>(a), std::get<1>(a), std::get<0>(b), std::get<1>(b)};
}

CellParams::State CellParams::getstate() const {
  auto u = unpack();
  return {kStateVersion, dtype(), std::get<0>(u), std::get<1>(u), std::get<2>(u), std::get<3>(u),
          reduce_range_};
}

c10::intrusive_ptr<CellParams> CellParams::setstate(const c10::IValue& state) {
  const auto& el = packed::state_elements(state, kSetstate,
                                          "dtype, w_ih, b_ih, w_hh, b_hh, reduce_range", 7);
  // Indexed through an ArrayRef: TupleElements' inline storage (3 elements) makes GCC warn
  // (-Warray-bounds) on indices past it, though state_elements checked the size.
  const c10::ArrayRef<c10::IValue> f = el.asArrayRef();
  TORCH_CHECK(f[1].isString(), "qplugin::", kSetstate,
              ": expected the weight dtype ('qint8' or 'float16') as the first field, got ",
              f[1].tagKind());
  const std::string dtype = f[1].toStringRef();
  TORCH_CHECK(dtype == "qint8" || dtype == "float16", "qplugin::", kSetstate,
              ": expected the weight dtype 'qint8' or 'float16', got '", dtype, "'");
  packed::check_state_tensor(el, 2, false, kSetstate, "the w_ih tensor");
  packed::check_state_tensor(el, 3, true, kSetstate, "a float32 b_ih tensor or None");
  packed::check_state_tensor(el, 4, false, kSetstate, "the w_hh tensor");
  packed::check_state_tensor(el, 5, true, kSetstate, "a float32 b_hh tensor or None");
  TORCH_CHECK(f[6].isBool(), "qplugin::", kSetstate,
              ": expected reduce_range (a bool) as the last field, got ", f[6].tagKind());
  auto opt = [](const c10::IValue& v) {
    return v.isNone() ? c10::optional<at::Tensor>() : c10::optional<at::Tensor>(v.toTensor());
  };
  if (dtype == "qint8") {
    return make_int8(LinearPackedParams::prepack(f[2].toTensor(), opt(f[3]), kSetstate),
                     LinearPackedParams::prepack(f[4].toTensor(), opt(f[5]), kSetstate),
                     f[6].toBool(), kSetstate);
  }
  return make_fp16(LinearPackedParamsFp16::prepack(f[2].toTensor(), opt(f[3]), kSetstate),
                   LinearPackedParamsFp16::prepack(f[4].toTensor(), opt(f[5]), kSetstate),
                   kSetstate);
}

}  // namespace qplugin
