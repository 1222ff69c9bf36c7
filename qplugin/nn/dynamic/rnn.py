"""qplugin.nn.dynamic.LSTM / GRU (≙ torch.ao.nn.quantized.dynamic.LSTM / GRU) and the cells
LSTMCell / GRUCell / RNNCell: float input and output; int8 weights (activations quantized per
call, 7-bit, as torch.ao) or float16 weights (fp32 products).

int8 layers run torch.ops.qplugin.quantized_{lstm,gru}_layer_dynamic (one C++ loop per layer and
direction over qplugin's packed GEMM), int8 cells torch.ops.qplugin.quantized_{lstm,gru,rnn_tanh,
rnn_relu}_cell_dynamic (≙ torch.ops.quantized's); float16 layers and cells the same ops' _fp16
forms (on qplugin's separate fp16 class; the products in qplugin's fp16-weight GEMM).
TorchScript: script / save / load (LSTM and GRU take Tensor or PackedSequence, as torch.nn's).
Multi-layer, bidirectional, batch_first, PackedSequence input, hx given or not; dropout is
ignored in eval as torch's (these modules are inference-only). No proj_size (torch.ao's dynamic
LSTM has none either).
State dict: torch.ao's keys. LSTM/GRU: `_all_weight_values.<i>.param` = (w_ih, b_ih, w_hh, b_hh)
per layer and direction (w qint8, or float32 holding float16 values) where torch.ao has its
CellParams objects; cells: `_packed_weight_ih` / `_packed_weight_hh` = (w, b) pairs where
torch.ao has packed linear objects. torch.ao checkpoints load here (the objects are read through
their pickled state); qplugin checkpoints do not load into torch.ao (its objects can only be made
by torch.ops.quantized, which qplugin never calls).
Changes with: csrc/ops/rnn_dynamic.cpp, csrc/ops/cpu/rnn_dynamic_kernel.cpp,
tests/dynamic/test_rnn_dynamic.py.
"""
from typing import List, Optional, Tuple, overload

import torch
from torch import Tensor
from torch.nn.utils.rnn import PackedSequence

from qplugin.nn.modules.linear import _quantize_weight
from qplugin.nn.modules.utils import _dynamic_weight_observer, _plain_op_call, _store_args

__all__ = ["LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell", "PackedParameter",
           "PackedParameterFp16"]


def _weight_observer(mod, where):
    obs = _dynamic_weight_observer(getattr(mod, "qconfig", None))
    dtype = obs().dtype
    if dtype not in (torch.qint8, torch.float16):
        raise ValueError(f"qplugin.nn.dynamic.{where}.from_float: expected a weight observer of "
                         f"dtype torch.qint8 or torch.float16, got {dtype}")
    return obs, dtype


def _quantize(w, obs_factory):
    obs = obs_factory()
    obs(w)
    return _quantize_weight(w.detach().float(), obs)


def _weights(dtype, obs_factory, w_ih, w_hh):
    """from_float: the float weights as the holder of `dtype` takes them (qint8: quantized, each
    with its own observer; float16: float32 holding the values, packed as float16)."""
    if dtype == torch.qint8:
        return _quantize(w_ih, obs_factory), _quantize(w_hh, obs_factory)
    return w_ih.detach().float(), w_hh.detach().float()


def _check_float(cls, mod):
    """from_float: `mod` is exactly cls's float class (parametrized ok) and carries a qconfig."""
    from torch.nn.utils.parametrize import type_before_parametrizations
    if type_before_parametrizations(mod) is not cls._FLOAT_MODULE:
        raise TypeError(f"qplugin.nn.dynamic.{cls.__name__}.from_float: expected "
                        f"torch.nn.{cls._FLOAT_MODULE.__name__}, got {type(mod).__name__}")
    if not hasattr(mod, "qconfig"):
        raise ValueError(f"qplugin.nn.dynamic.{cls.__name__}.from_float: expected a module "
                         "with a qconfig (qplugin.quantization.quantize_dynamic sets it)")


class _CellParamsBase(torch.nn.Module):
    """One layer and direction (or one cell): w_ih / w_hh packed with their biases. One Python
    class per packed type (int8: PackedParameter, float16: PackedParameterFp16), so that
    TorchScript sees one op per class."""

    _DTYPE = torch.qint8

    def __init__(self, w_ih, b_ih, w_hh, b_hh):
        super().__init__()
        self.dtype = self._DTYPE
        self.set(w_ih, b_ih, w_hh, b_hh)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        # Only `param`, torch.ao's key (the dtype follows from w_ih: quantized = qint8); a
        # `dtype` entry of older qplugin checkpoints is still accepted on load.
        destination[prefix + "param"] = self.unpacked()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        if prefix + "param" not in state_dict:
            missing_keys.append(prefix + "param")
            return
        param = state_dict.pop(prefix + "param")
        if isinstance(param, torch.ScriptObject):
            # A torch.ao checkpoint: its CellParams object holds PyTorch's packed linear params
            # ((weight, bias) each, read through their pickled state: a copy, no kernel runs).
            packed = param.__getstate__()[0][4]
            (w_ih, b_ih), (w_hh, b_hh) = (p.__getstate__()[0][:2] for p in packed[:2])
        else:
            w_ih, b_ih, w_hh, b_hh = param
        dtype = state_dict.pop(prefix + "dtype", torch.qint8 if w_ih.is_quantized
                               else torch.float16)
        if dtype != self.dtype:
            raise ValueError(f"qplugin.nn.dynamic: expected a {self.dtype} checkpoint at "
                             f"{prefix!r}, got {dtype}; construct the module with dtype={dtype}")
        self.set(w_ih, b_ih, w_hh, b_hh)

    def __getstate__(self):
        d = self.__dict__.copy()
        d["ih"], d["hh"] = None, None
        d["_unpacked"] = self.unpacked()
        return d

    def __setstate__(self, d):
        unpacked = d.pop("_unpacked")
        self.__dict__.update(d)
        self.set(*unpacked)


def _linear_dynamic_reduce_range(x: Tensor,
                                 w: torch.classes.qplugin.LinearPackedParams) -> Tensor:
    return torch.ops.qplugin.linear_dynamic(x, w, True)


def _cell_params_class(name, doc, dtype, suffix, linear, prepack_input):
    """The holder class of one packed type (`suffix`: "" int8, "_fp16" float16): its methods
    call that type's ops, which are closure variables here (TorchScript resolves them as it
    resolves globals), so each class still sees one op per call."""
    ops = torch.ops.qplugin
    prepack, unpack = getattr(ops, "linear_prepack" + suffix), getattr(ops, "linear_unpack" + suffix)
    lstm_cell, gru_cell = (getattr(ops, f"quantized_{k}_cell_dynamic{suffix}") for k in ("lstm", "gru"))
    relu_cell, tanh_cell = (getattr(ops, f"quantized_rnn_{k}_cell_dynamic{suffix}")
                            for k in ("relu", "tanh"))
    lstm_layer, gru_layer = (getattr(ops, f"quantized_{k}_layer_dynamic{suffix}")
                             for k in ("lstm", "gru"))

    class _Params(_CellParamsBase):
        _DTYPE = dtype

        def set(self, w_ih, b_ih, w_hh, b_hh):
            self.ih = prepack(prepack_input(w_ih), b_ih)
            self.hh = prepack(prepack_input(w_hh), b_hh)

        def unpacked(self):
            return unpack(self.ih) + unpack(self.hh)

        @torch.jit.export
        def lin(self, x: Tensor, which: int) -> Tensor:
            if torch.jit.is_scripting():
                return linear(x, self.ih if which == 0 else self.hh)
            return _plain_op_call(linear, (x, self.ih if which == 0 else self.hh))

        # The cells (batched [B, I] / [B, H]; the modules unsqueeze unbatched input). The bias
        # arguments are not read (the biases live in the packed weights, as PyTorch's): an
        # empty tensor fills them.
        @torch.jit.export
        def lstm_cell(self, x: Tensor, h: Tensor, c: Tensor) -> Tuple[Tensor, Tensor]:
            nb = x.new_empty(0)
            if torch.jit.is_scripting():
                return lstm_cell(x, [h, c], self.ih, self.hh, nb, nb)
            return _plain_op_call(lstm_cell.default, (x, [h, c], self.ih, self.hh, nb, nb))

        @torch.jit.export
        def gru_cell(self, x: Tensor, h: Tensor) -> Tensor:
            nb = x.new_empty(0)
            if torch.jit.is_scripting():
                return gru_cell(x, h, self.ih, self.hh, nb, nb)
            return _plain_op_call(gru_cell.default, (x, h, self.ih, self.hh, nb, nb))

        @torch.jit.export
        def rnn_cell(self, x: Tensor, h: Tensor, relu: bool) -> Tensor:
            nb = x.new_empty(0)
            if torch.jit.is_scripting():
                if relu:
                    return relu_cell(x, h, self.ih, self.hh, nb, nb)
                return tanh_cell(x, h, self.ih, self.hh, nb, nb)
            return _plain_op_call((relu_cell if relu else tanh_cell).default,
                                  (x, h, self.ih, self.hh, nb, nb))

        # The layers (int8: reduce_range=True, the int8 ops' default).
        @torch.jit.export
        def run(self, lstm: bool, x: Tensor, batch_sizes: Optional[Tensor], h0: Tensor,
                c0: Tensor, reverse: bool) -> Tuple[Tensor, Tensor, Tensor]:
            if torch.jit.is_scripting():
                if lstm:
                    return lstm_layer(x, batch_sizes, h0, c0, self.ih, self.hh, reverse)
                o, h = gru_layer(x, batch_sizes, h0, self.ih, self.hh, reverse)
                return o, h, h
            # Eager: without torch's per-call exception on the packed params (_plain_op_call).
            if lstm:
                return _plain_op_call(lstm_layer.default,
                                      (x, batch_sizes, h0, c0, self.ih, self.hh, reverse))
            o, h = _plain_op_call(gru_layer.default,
                                  (x, batch_sizes, h0, self.ih, self.hh, reverse))
            return o, h, h

    _Params.__name__ = _Params.__qualname__ = name
    _Params.__doc__ = doc
    return _Params


PackedParameter = _cell_params_class(
    "PackedParameter", "int8: torch.classes.qplugin.LinearPackedParams for w_ih and w_hh.",
    torch.qint8, "", _linear_dynamic_reduce_range, lambda w: w)
PackedParameterFp16 = _cell_params_class(
    "PackedParameterFp16", "float16: torch.classes.qplugin.LinearPackedParamsFp16 for w_ih and"
    " w_hh (fp32 products of the fp16 weights, then PyTorch's cell math in C++).",
    torch.float16, "_fp16", torch.ops.qplugin.linear_dynamic_fp16, lambda w: w.float())


def _cell_params(dtype, w_ih, b_ih, w_hh, b_hh):
    cls = PackedParameter if dtype == torch.qint8 else PackedParameterFp16
    return cls(w_ih, b_ih, w_hh, b_hh)


def _shape(t: Tensor) -> str:
    """tuple(t.shape) as Python prints it (TorchScript cannot build the tuple)."""
    dims = [str(d) for d in t.shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _apply_permutation(t: Tensor, permutation: Optional[Tensor]) -> Tensor:
    if permutation is None:
        return t
    return t.index_select(1, permutation)


class _RNNBase(torch.nn.Module):
    _FLOAT_MODULE = None
    _version = 2
    _MODE = "LSTM"

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=torch.qint8):
        super().__init__()
        mode = self._MODE
        if dtype not in (torch.qint8, torch.float16):
            raise ValueError(f"qplugin.nn.dynamic.{mode}: expected dtype torch.qint8 or "
                             f"torch.float16, got {dtype}")
        if not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"qplugin.nn.dynamic.{mode}: expected num_layers >= 1, got "
                             f"{num_layers}")
        self.mode = mode
        self.is_lstm = mode == "LSTM"
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.num_directions = 2 if bidirectional else 1
        self.dtype = dtype
        self.version = 2
        gates = 4 if self.is_lstm else 3
        D = self.num_directions
        params = []
        for layer in range(num_layers):
            for _ in range(D):
                in_sz = input_size if layer == 0 else hidden_size * D
                w_ih = torch.randn(gates * hidden_size, in_sz)
                w_hh = torch.randn(gates * hidden_size, hidden_size)
                b_ih = torch.randn(gates * hidden_size)
                b_hh = torch.randn(gates * hidden_size)
                if dtype == torch.qint8:
                    w_ih = torch.quantize_per_tensor(w_ih, 0.1, 0, torch.qint8)
                    w_hh = torch.quantize_per_tensor(w_hh, 0.1, 0, torch.qint8)
                params.append(_cell_params(dtype, w_ih, b_ih, w_hh, b_hh))
        self._all_weight_values = torch.nn.ModuleList(params)

    def _get_name(self):
        return "DynamicQuantized" + self.mode

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def __repr__(self):
        return self._get_name() + "(" + self.extra_repr() + ")"

    def _check(self, x: Tensor, batch_sizes: Optional[Tensor], h: Tensor, i: int, B: int):
        want = 2 if batch_sizes is not None else 3
        if x.dim() != want:
            raise RuntimeError(f"qplugin.nn.dynamic.{self.mode}: expected input with {want} "
                               f"dimensions, got {x.dim()}")
        if x.size(-1) != self.input_size:
            raise RuntimeError(f"qplugin.nn.dynamic.{self.mode}: expected input.size(-1) == "
                               f"input_size = {self.input_size}, got {x.size(-1)}")
        L = self.num_layers * self.num_directions
        if h.dim() != 3 or h.size(0) != L or h.size(1) != B or h.size(2) != self.hidden_size:
            raise RuntimeError(f"qplugin.nn.dynamic.{self.mode}: expected hidden[{i}] of size "
                               f"({L}, {B}, {self.hidden_size}), got {_shape(h)}")

    def _run(self, x: Tensor, batch_sizes: Optional[Tensor], h0s: Tensor,
             c0s: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        D = self.num_directions
        h_out: List[Tensor] = []
        c_out: List[Tensor] = []
        outs: List[Tensor] = []
        layer_in = x
        for idx, p in enumerate(self._all_weight_values):
            o, h, c = p.run(self.is_lstm, layer_in, batch_sizes, h0s[idx], c0s[idx],
                            idx % D == 1)
            outs.append(o)
            h_out.append(h)
            c_out.append(c)
            if idx % D == D - 1:
                layer_in = outs[0] if D == 1 else torch.cat(outs, -1)
                outs = []
        return layer_in, torch.stack(h_out, 0), torch.stack(c_out, 0)

    def _forward_impl(self, x: Tensor, batch_sizes: Optional[Tensor],
                      sorted_indices: Optional[Tensor], unsorted_indices: Optional[Tensor],
                      hx: Optional[List[Tensor]]) -> Tuple[Tensor, Tensor, Tensor]:
        """LSTM/GRU.forward on the unpacked input (batch_sizes None: a Tensor input): the output
        in the input's layout, h_n and c_n (LSTM; GRU's is not used) in the caller's batch
        order."""
        if batch_sizes is None and self.batch_first:
            x = x.transpose(0, 1)
        x, h0s, c0s = self._prepare(x, batch_sizes, hx, sorted_indices)
        out, h_n, c_n = self._run(x, batch_sizes, h0s, c0s)
        if batch_sizes is None and self.batch_first:
            out = out.transpose(0, 1)
        if self.is_lstm:
            c_n = _apply_permutation(c_n, unsorted_indices)
        return out, _apply_permutation(h_n, unsorted_indices), c_n

    def _prepare(self, x: Tensor, batch_sizes: Optional[Tensor], hx: Optional[List[Tensor]],
                 sorted_indices: Optional[Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
        if batch_sizes is not None:
            B = int(batch_sizes[0])
        else:
            if x.dim() != 3:
                raise RuntimeError(f"qplugin.nn.dynamic.{self.mode}: expected input with 3 "
                                   f"dimensions, got {x.dim()}")
            B = x.size(1)
        if hx is None:
            z = torch.zeros(self.num_layers * self.num_directions, B, self.hidden_size,
                            dtype=torch.float)
            h0s, c0s = z, z
        else:
            h0s = _apply_permutation(hx[0], sorted_indices)
            c0s = _apply_permutation(hx[1], sorted_indices) if len(hx) > 1 else h0s
            self._check(x, batch_sizes, h0s, 0, B)
            if len(hx) > 1:
                self._check(x, batch_sizes, c0s, 1, B)
        self._check(x, batch_sizes, h0s, 0, B)
        return x.float(), h0s.float(), c0s.float()

    def _weight_bias(self):
        """{'weight': {'weight_ih_l0': ..., ...}, 'bias': {...}} as torch.ao's."""
        d = {"weight": {}, "bias": {}}
        D = self.num_directions
        for layer in range(self.num_layers):
            for direction in range(D):
                sfx = "_reverse" if direction == 1 else ""
                w_ih, b_ih, w_hh, b_hh = self._all_weight_values[layer * D + direction].unpacked()
                d["weight"][f"weight_ih_l{layer}{sfx}"] = w_ih
                d["weight"][f"weight_hh_l{layer}{sfx}"] = w_hh
                d["bias"][f"bias_ih_l{layer}{sfx}"] = b_ih
                d["bias"][f"bias_hh_l{layer}{sfx}"] = b_hh
        return d

    def get_weight(self):
        return self._weight_bias()["weight"]

    def get_bias(self):
        return self._weight_bias()["bias"]

    def set_layer_weights(self, index, w_ih, b_ih, w_hh, b_hh):
        """Packs the weights of layer * num_directions + direction `index`."""
        self._all_weight_values[index] = _cell_params(self.dtype, w_ih, b_ih, w_hh, b_hh)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        _check_float(cls, mod)
        if getattr(mod, "proj_size", 0):
            raise NotImplementedError(f"qplugin.nn.dynamic.{cls.__name__}.from_float: proj_size "
                                      "is not supported (as torch.ao's dynamic LSTM)")
        if not mod.bias:
            raise NotImplementedError(f"qplugin.nn.dynamic.{cls.__name__}.from_float: expected "
                                      "bias=True (as torch.ao's)")
        obs, dtype = _weight_observer(mod, cls.__name__)
        q = cls(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first,
                mod.dropout, mod.bidirectional, dtype=dtype)
        D = 2 if mod.bidirectional else 1
        for layer in range(mod.num_layers):
            for d in range(D):
                sfx = "_reverse" if d == 1 else ""
                w_ih = getattr(mod, f"weight_ih_l{layer}{sfx}")
                w_hh = getattr(mod, f"weight_hh_l{layer}{sfx}")
                b_ih = getattr(mod, f"bias_ih_l{layer}{sfx}").detach().float()
                b_hh = getattr(mod, f"bias_hh_l{layer}{sfx}").detach().float()
                w_ih, w_hh = _weights(dtype, obs, w_ih, w_hh)
                q.set_layer_weights(layer * D + d, w_ih, b_ih, w_hh, b_hh)
        return q


class LSTM(_RNNBase):
    r"""Dynamically quantized LSTM (≙ torch.ao.nn.quantized.dynamic.LSTM); TorchScript-able
    (Tensor and PackedSequence inputs, as torch.nn.LSTM)."""
    _FLOAT_MODULE = torch.nn.LSTM
    _MODE = "LSTM"

    @overload
    @torch._jit_internal._overload_method
    def forward(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None
                ) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
        pass

    @overload
    @torch._jit_internal._overload_method
    def forward(self, input: PackedSequence, hx: Optional[Tuple[Tensor, Tensor]] = None
                ) -> Tuple[PackedSequence, Tuple[Tensor, Tensor]]:
        pass

    def forward(self, input, hx=None):
        hx_list: Optional[List[Tensor]] = None
        if hx is not None:
            hx_list = [hx[0], hx[1]]
        # The isinstance checks must be conditionals for TorchScript (as torch.nn.LSTM's).
        if isinstance(input, PackedSequence):
            x, batch_sizes, sorted_indices, unsorted_indices = input
            out, h_n, c_n = self._forward_impl(x, batch_sizes, sorted_indices, unsorted_indices,
                                               hx_list)
            return PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices), (h_n, c_n)
        out, h_n, c_n = self._forward_impl(input, None, None, None, hx_list)
        return out, (h_n, c_n)


class GRU(_RNNBase):
    r"""Dynamically quantized GRU (≙ torch.ao.nn.quantized.dynamic.GRU); TorchScript-able
    (Tensor and PackedSequence inputs, as torch.nn.GRU)."""
    _FLOAT_MODULE = torch.nn.GRU
    _MODE = "GRU"

    @overload
    @torch._jit_internal._overload_method
    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        pass

    @overload
    @torch._jit_internal._overload_method
    def forward(self, input: PackedSequence, hx: Optional[Tensor] = None
                ) -> Tuple[PackedSequence, Tensor]:
        pass

    def forward(self, input, hx=None):
        hx_list: Optional[List[Tensor]] = None
        if hx is not None:
            hx_list = [hx]
        if isinstance(input, PackedSequence):
            x, batch_sizes, sorted_indices, unsorted_indices = input
            out, h_n, _ = self._forward_impl(x, batch_sizes, sorted_indices, unsorted_indices,
                                             hx_list)
            return PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices), h_n
        out, h_n, _ = self._forward_impl(input, None, None, None, hx_list)
        return out, h_n


# Cell state-dict layout (torch.ao's dynamic RNNCellBase keys):
#   self
#   |--- _packed_weight_ih : (w_ih, b_ih)      w qint8, or float32 holding float16 values
#   |--- _packed_weight_hh : (w_hh, b_hh)
# torch.ao stores its packed objects under these keys; qplugin stores the unpacked pairs and
# reads either (a torch.ao object through its pickled state: a copy, no PyTorch kernel runs).
# The `_params.param` (w_ih, b_ih, w_hh, b_hh) tuple of earlier qplugin checkpoints still loads.
def _cell_state_dict_hook(module, state_dict, prefix, local_metadata):
    key = prefix + "_params.param"
    if key in state_dict:
        w_ih, b_ih, w_hh, b_hh = state_dict.pop(key)
        state_dict[prefix + "_packed_weight_ih"] = (w_ih, b_ih)
        state_dict[prefix + "_packed_weight_hh"] = (w_hh, b_hh)


def _pair(v):
    if isinstance(v, torch.ScriptObject):
        v = v.__getstate__()[0]
    w, b = v[0], v[1]
    return w.detach(), None if b is None else b.detach()


def _cell_load_pre_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs):
    ih, hh = prefix + "_packed_weight_ih", prefix + "_packed_weight_hh"
    if ih in state_dict and hh in state_dict:
        (w_ih, b_ih), (w_hh, b_hh) = _pair(state_dict.pop(ih)), _pair(state_dict.pop(hh))
        state_dict[prefix + "_params.param"] = (w_ih, b_ih, w_hh, b_hh)


class _CellBase(torch.nn.Module):
    _FLOAT_MODULE = None
    _GATES = 1

    def __init__(self, input_size, hidden_size, bias=True, dtype=torch.qint8,
                 nonlinearity="tanh"):
        super().__init__()
        if dtype not in (torch.qint8, torch.float16):
            raise ValueError(f"qplugin.nn.dynamic.{type(self).__name__}: expected dtype "
                             f"torch.qint8 or torch.float16, got {dtype}")
        _store_args(self, locals(), "input_size hidden_size bias nonlinearity")
        self.weight_dtype = dtype
        self.cell_name = type(self).__name__
        G = self._GATES * hidden_size
        w_ih, w_hh = torch.randn(G, input_size), torch.randn(G, hidden_size)
        b_ih = torch.randn(G) if bias else None
        b_hh = torch.randn(G) if bias else None
        if dtype == torch.qint8:
            w_ih = torch.quantize_per_tensor(w_ih, 0.1, 0, torch.qint8)
            w_hh = torch.quantize_per_tensor(w_hh, 0.1, 0, torch.qint8)
        self._params = _cell_params(dtype, w_ih, b_ih, w_hh, b_hh)
        self._register_state_dict_hook(_cell_state_dict_hook)
        self._register_load_state_dict_pre_hook(_cell_load_pre_hook)

    def _get_name(self):
        return "DynamicQuantized" + type(self).__name__

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if type(self) is RNNCell and self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def __repr__(self):
        return self._get_name() + "(" + self.extra_repr() + ")"

    def _check(self, x: Tensor, h: Optional[Tensor]):
        if (x.dim() != 1 and x.dim() != 2) or x.size(-1) != self.input_size:
            raise RuntimeError(f"qplugin.nn.dynamic.{self.cell_name}: expected input of shape "
                               f"(batch, {self.input_size}) or ({self.input_size},), got "
                               f"{_shape(x)}")
        if h is not None:
            ok = h.dim() == x.dim() and h.size(-1) == self.hidden_size
            if ok and x.dim() == 2:
                ok = h.size(0) == x.size(0)
            if not ok:
                want = f"({x.size(0)}, {self.hidden_size})" if x.dim() == 2 else \
                    f"({self.hidden_size},)"
                raise RuntimeError(f"qplugin.nn.dynamic.{self.cell_name}: expected hidden state "
                                   f"of shape {want}, got {_shape(h)}")

    def _weight_bias(self):
        w_ih, b_ih, w_hh, b_hh = self._params.unpacked()
        return {"weight": {"weight_ih": w_ih, "weight_hh": w_hh},
                "bias": {"bias_ih": b_ih, "bias_hh": b_hh}}

    def get_weight(self):
        return self._weight_bias()["weight"]

    def get_bias(self):
        return self._weight_bias()["bias"]

    def set_weights(self, w_ih, b_ih, w_hh, b_hh):
        self._params = _cell_params(self.weight_dtype, w_ih, b_ih, w_hh, b_hh)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        _check_float(cls, mod)
        obs, dtype = _weight_observer(mod, cls.__name__)
        kw = {"nonlinearity": mod.nonlinearity} if cls is RNNCell else {}
        q = cls(mod.input_size, mod.hidden_size, bias=mod.bias, dtype=dtype, **kw)
        b_ih = mod.bias_ih.detach().float() if mod.bias else None
        b_hh = mod.bias_hh.detach().float() if mod.bias else None
        w_ih, w_hh = _weights(dtype, obs, mod.weight_ih, mod.weight_hh)
        q.set_weights(w_ih, b_ih, w_hh, b_hh)
        return q


def _batched(x: Tensor) -> Tensor:
    return x.unsqueeze(0) if x.dim() == 1 else x


class LSTMCell(_CellBase):
    r"""Dynamically quantized LSTMCell (≙ torch.ao.nn.quantized.dynamic.LSTMCell)."""
    _FLOAT_MODULE = torch.nn.LSTMCell
    _GATES = 4

    def forward(self, input: Tensor,
                hx: Optional[Tuple[Tensor, Tensor]] = None) -> Tuple[Tensor, Tensor]:
        x = _batched(input)
        if hx is None:
            self._check(input, None)
            h = x.new_zeros(x.size(0), self.hidden_size)
            c = h
        else:
            self._check(input, hx[0])
            self._check(input, hx[1])
            h, c = _batched(hx[0]), _batched(hx[1])
        h2, c2 = self._params.lstm_cell(x, h, c)
        if input.dim() == 1:
            return h2.squeeze(0), c2.squeeze(0)
        return h2, c2


class GRUCell(_CellBase):
    r"""Dynamically quantized GRUCell (≙ torch.ao.nn.quantized.dynamic.GRUCell)."""
    _FLOAT_MODULE = torch.nn.GRUCell
    _GATES = 3

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        self._check(input, hx)
        x = _batched(input)
        h = x.new_zeros(x.size(0), self.hidden_size) if hx is None else _batched(hx)
        h2 = self._params.gru_cell(x, h)
        return h2.squeeze(0) if input.dim() == 1 else h2


class RNNCell(_CellBase):
    r"""Dynamically quantized RNNCell (≙ torch.ao.nn.quantized.dynamic.RNNCell), tanh or relu."""
    _FLOAT_MODULE = torch.nn.RNNCell
    _GATES = 1

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh",
                 dtype=torch.qint8):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError("qplugin.nn.dynamic.RNNCell: expected nonlinearity 'tanh' or "
                             f"'relu', got {nonlinearity!r}")
        super().__init__(input_size, hidden_size, bias=bias, dtype=dtype,
                         nonlinearity=nonlinearity)

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        self._check(input, hx)
        x = _batched(input)
        h = x.new_zeros(x.size(0), self.hidden_size) if hx is None else _batched(hx)
        h2 = self._params.rnn_cell(x, h, self.nonlinearity == "relu")
        return h2.squeeze(0) if input.dim() == 1 else h2
