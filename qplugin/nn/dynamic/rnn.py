"""qplugin.nn.dynamic.LSTM / GRU (≙ torch.ao.nn.quantized.dynamic.LSTM / GRU) and the cells
LSTMCell / GRUCell / RNNCell: float input and output; int8 weights (activations quantized per
call, 7-bit, as torch.ao) or float16 weights (fp32 products).

int8 layers run torch.ops.qplugin.quantized_{lstm,gru}_layer_dynamic (one C++ loop per layer and
direction over qplugin's packed GEMM); float16 layers and the cells run here over the linear ops.
Multi-layer, bidirectional, batch_first, PackedSequence input, hx given or not; dropout is
ignored in eval as torch's (these modules are inference-only). No proj_size (torch.ao's dynamic
LSTM has none either).
State dict: `_all_weight_values.<i>.param` = (w_ih, b_ih, w_hh, b_hh) per layer and direction
(w qint8, or float32 holding float16 values) — not torch.ao's CellParams objects; a torch.ao
model converts with from_float of its float original, or through `_weight_bias()`.
Changes with: csrc/ops/rnn_dynamic.cpp, csrc/ops/cpu/rnn_dynamic_kernel.cpp,
tests/dynamic/test_rnn_dynamic.py.
"""
from typing import List, Optional, Tuple

import torch
from torch import Tensor
from torch.nn.utils.rnn import PackedSequence

from qplugin.nn.modules.linear import _quantize_weight

__all__ = ["LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell"]


def _weight_observer(mod, where):
    if getattr(mod, "qconfig", None) is not None and mod.qconfig.weight is not None:
        obs = mod.qconfig.weight
    else:
        from qplugin.quantization import default_dynamic_qconfig
        obs = default_dynamic_qconfig.weight
    dtype = obs().dtype
    if dtype not in (torch.qint8, torch.float16):
        raise ValueError(f"qplugin.nn.dynamic.{where}.from_float: expected a weight observer of "
                         f"dtype torch.qint8 or torch.float16, got {dtype}")
    return obs, dtype


def _quantize(w, obs_factory):
    obs = obs_factory()
    obs(w)
    return _quantize_weight(w.detach().float(), obs)


class PackedParameter(torch.nn.Module):
    """One layer and direction: packed w_ih / w_hh (int8) or their float16-rounded fp32 copies."""

    def __init__(self, w_ih, b_ih, w_hh, b_hh, dtype):
        super().__init__()
        self.set(w_ih, b_ih, w_hh, b_hh, dtype)

    def set(self, w_ih, b_ih, w_hh, b_hh, dtype):
        self.dtype = dtype
        if dtype == torch.qint8:
            self.ih = torch.ops.qplugin.linear_prepack(w_ih, b_ih)
            self.hh = torch.ops.qplugin.linear_prepack(w_hh, b_hh)
        else:
            self.ih = torch.ops.qplugin.linear_prepack_fp16(w_ih.float(), b_ih)
            self.hh = torch.ops.qplugin.linear_prepack_fp16(w_hh.float(), b_hh)

    def unpacked(self):
        if self.dtype == torch.qint8:
            w_ih, b_ih = torch.ops.qplugin.linear_unpack(self.ih)
            w_hh, b_hh = torch.ops.qplugin.linear_unpack(self.hh)
        else:
            w_ih, b_ih = torch.ops.qplugin.linear_unpack_fp16(self.ih)
            w_hh, b_hh = torch.ops.qplugin.linear_unpack_fp16(self.hh)
        return w_ih, b_ih, w_hh, b_hh

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "param"] = self.unpacked()
        destination[prefix + "dtype"] = self.dtype

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
        self.set(w_ih, b_ih, w_hh, b_hh, dtype)

    def __getstate__(self):
        d = self.__dict__.copy()
        d["ih"], d["hh"] = None, None
        d["_unpacked"] = self.unpacked()
        return d

    def __setstate__(self, d):
        unpacked = d.pop("_unpacked")
        self.__dict__.update(d)
        self.set(*unpacked, d["dtype"])


def _fp16_layer(mode: str, x: Tensor, batch_sizes: Optional[Tensor], h0: Tensor,
                c0: Optional[Tensor], ih, hh, reverse: bool):
    """The float16-weight layer loop (PyTorch's cell math; rows as the int8 C++ op)."""
    if batch_sizes is None:
        T, B = x.shape[0], x.shape[1]
        bs = [B] * T
        flat = x.reshape(T * B, x.shape[2])
    else:
        bs = [int(b) for b in batch_sizes]
        T = len(bs)
        flat = x
    offs = [0]
    for b in bs[:-1]:
        offs.append(offs[-1] + b)
    ig = torch.ops.qplugin.linear_dynamic_fp16(flat, ih) if flat.shape[0] else None
    h = h0.clone()
    c = c0.clone() if c0 is not None else None
    H = h0.shape[1]
    out = flat.new_empty(flat.shape[0], H)
    order = range(T - 1, -1, -1) if reverse else range(T)
    for t in order:
        n = bs[t]
        igt = ig[offs[t]:offs[t] + n]
        hb = h[:n]
        hg = torch.ops.qplugin.linear_dynamic_fp16(hb, hh)
        if mode == "LSTM":
            gates = hg.add_(igt)
            i, f, g, o = gates.chunk(4, 1)
            i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
            cb = c[:n]
            cb.copy_(f * cb + i * g)
            hb.copy_(o * cb.tanh())
        else:
            hr, hz, hn = hg.chunk(3, 1)
            ir, iz, inn = igt.chunk(3, 1)
            r = (hr + ir).sigmoid()
            z = (hz + iz).sigmoid()
            nn_ = (inn + hn * r).tanh()
            hb.copy_((hb - nn_) * z + nn_)
        out[offs[t]:offs[t] + n] = hb
    if batch_sizes is None:
        out = out.view(T, x.shape[1], H)
    return out, h, c


class _RNNBase(torch.nn.Module):
    _FLOAT_MODULE = None
    _version = 2

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, dtype=torch.qint8):
        super().__init__()
        if dtype not in (torch.qint8, torch.float16):
            raise ValueError(f"qplugin.nn.dynamic.{mode}: expected dtype torch.qint8 or "
                             f"torch.float16, got {dtype}")
        if not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"qplugin.nn.dynamic.{mode}: expected num_layers >= 1, got "
                             f"{num_layers}")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.dtype = dtype
        self.version = 2
        gates = 4 if mode == "LSTM" else 3
        D = 2 if bidirectional else 1
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
                params.append(PackedParameter(w_ih, b_ih, w_hh, b_hh, dtype))
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

    def _check(self, x, batch_sizes, hx_list, B):
        name = f"qplugin.nn.dynamic.{self.mode}"
        want = 2 if batch_sizes is not None else 3
        if x.dim() != want:
            raise RuntimeError(f"{name}: expected input with {want} dimensions, got {x.dim()}")
        if x.size(-1) != self.input_size:
            raise RuntimeError(f"{name}: expected input.size(-1) == input_size = "
                               f"{self.input_size}, got {x.size(-1)}")
        D = 2 if self.bidirectional else 1
        shape = (self.num_layers * D, B, self.hidden_size)
        for i, h in enumerate(hx_list):
            if tuple(h.shape) != shape:
                raise RuntimeError(f"{name}: expected hidden[{i}] of size {shape}, got "
                                   f"{tuple(h.shape)}")

    def _run(self, x, batch_sizes, hx_list):
        D = 2 if self.bidirectional else 1
        lstm = self.mode == "LSTM"
        h_out, c_out = [], []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                idx = layer * D + d
                p = self._all_weight_values[idx]
                h0 = hx_list[0][idx]
                c0 = hx_list[1][idx] if lstm else None
                if p.dtype == torch.qint8:
                    if lstm:
                        o, h, c = torch.ops.qplugin.quantized_lstm_layer_dynamic(
                            layer_in, batch_sizes, h0, c0, p.ih, p.hh, d == 1, True)
                    else:
                        o, h = torch.ops.qplugin.quantized_gru_layer_dynamic(
                            layer_in, batch_sizes, h0, p.ih, p.hh, d == 1, True)
                        c = None
                else:
                    o, h, c = _fp16_layer(self.mode, layer_in, batch_sizes, h0, c0, p.ih, p.hh,
                                          d == 1)
                outs.append(o)
                h_out.append(h)
                if lstm:
                    c_out.append(c)
            layer_in = outs[0] if D == 1 else torch.cat(outs, -1)
        h_n = torch.stack(h_out, 0)
        if lstm:
            return layer_in, (h_n, torch.stack(c_out, 0))
        return layer_in, h_n

    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        if packed:
            x, batch_sizes, sorted_indices, unsorted_indices = input
            B = int(batch_sizes[0])
        else:
            x, batch_sizes, sorted_indices, unsorted_indices = input, None, None, None
            if self.batch_first:
                x = x.transpose(0, 1)
            if x.dim() != 3:
                raise RuntimeError(f"qplugin.nn.dynamic.{self.mode}: expected input with 3 "
                                   f"dimensions, got {x.dim()}")
            B = x.size(1)
        D = 2 if self.bidirectional else 1
        lstm = self.mode == "LSTM"
        if hx is None:
            z = torch.zeros(self.num_layers * D, B, self.hidden_size, dtype=torch.float)
            hx_list = [z, z] if lstm else [z]
        else:
            hx_list = list(hx) if lstm else [hx]
            if sorted_indices is not None:
                hx_list = [h.index_select(1, sorted_indices) for h in hx_list]
        self._check(x, batch_sizes, hx_list, B)
        out, hidden = self._run(x.float(), batch_sizes, [h.float() for h in hx_list])
        if unsorted_indices is not None:
            if lstm:
                hidden = tuple(h.index_select(1, unsorted_indices) for h in hidden)
            else:
                hidden = hidden.index_select(1, unsorted_indices)
        if packed:
            return PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices), hidden
        if self.batch_first:
            out = out.transpose(0, 1)
        return out, hidden

    def _weight_bias(self):
        """{'weight': {'weight_ih_l0': ..., ...}, 'bias': {...}} as torch.ao's."""
        d = {"weight": {}, "bias": {}}
        D = 2 if self.bidirectional else 1
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

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        from torch.nn.utils.parametrize import type_before_parametrizations
        if type_before_parametrizations(mod) is not cls._FLOAT_MODULE:
            raise TypeError(f"qplugin.nn.dynamic.{cls.__name__}.from_float: expected "
                            f"torch.nn.{cls._FLOAT_MODULE.__name__}, got {type(mod).__name__}")
        if not hasattr(mod, "qconfig"):
            raise ValueError(f"qplugin.nn.dynamic.{cls.__name__}.from_float: expected a module "
                             "with a qconfig (qplugin.quantization.quantize_dynamic sets it)")
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
                if dtype == torch.qint8:
                    w_ih, w_hh = _quantize(w_ih, obs), _quantize(w_hh, obs)
                else:
                    w_ih, w_hh = w_ih.detach().float(), w_hh.detach().float()
                q._all_weight_values[layer * D + d].set(w_ih, b_ih, w_hh, b_hh, dtype)
        return q


class LSTM(_RNNBase):
    r"""Dynamically quantized LSTM (≙ torch.ao.nn.quantized.dynamic.LSTM)."""
    _FLOAT_MODULE = torch.nn.LSTM

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(_RNNBase):
    r"""Dynamically quantized GRU (≙ torch.ao.nn.quantized.dynamic.GRU)."""
    _FLOAT_MODULE = torch.nn.GRU

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


class _CellBase(torch.nn.Module):
    _FLOAT_MODULE = None
    _GATES = 1

    def __init__(self, input_size, hidden_size, bias=True, dtype=torch.qint8, nonlinearity="tanh"):
        super().__init__()
        if dtype not in (torch.qint8, torch.float16):
            raise ValueError(f"qplugin.nn.dynamic.{type(self).__name__}: expected dtype "
                             f"torch.qint8 or torch.float16, got {dtype}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_dtype = dtype
        self.nonlinearity = nonlinearity
        G = self._GATES * hidden_size
        w_ih, w_hh = torch.randn(G, input_size), torch.randn(G, hidden_size)
        b_ih = torch.randn(G) if bias else None
        b_hh = torch.randn(G) if bias else None
        if dtype == torch.qint8:
            w_ih = torch.quantize_per_tensor(w_ih, 0.1, 0, torch.qint8)
            w_hh = torch.quantize_per_tensor(w_hh, 0.1, 0, torch.qint8)
        self._params = PackedParameter(w_ih, b_ih, w_hh, b_hh, dtype)

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

    def _lin(self, x, which):
        p = self._params
        packed = p.ih if which == 0 else p.hh
        if p.dtype == torch.qint8:
            return torch.ops.qplugin.linear_dynamic(x, packed, True)
        return torch.ops.qplugin.linear_dynamic_fp16(x, packed)

    def _check(self, x, h):
        name = f"qplugin.nn.dynamic.{type(self).__name__}"
        if x.dim() not in (1, 2) or x.size(-1) != self.input_size:
            raise RuntimeError(f"{name}: expected input of shape (batch, {self.input_size}) or "
                               f"({self.input_size},), got {tuple(x.shape)}")
        want = (x.size(0), self.hidden_size) if x.dim() == 2 else (self.hidden_size,)
        if h is not None and tuple(h.shape) != want:
            raise RuntimeError(f"{name}: expected hidden state of shape {want}, got "
                               f"{tuple(h.shape)}")

    def _weight_bias(self):
        w_ih, b_ih, w_hh, b_hh = self._params.unpacked()
        return {"weight": {"weight_ih": w_ih, "weight_hh": w_hh},
                "bias": {"bias_ih": b_ih, "bias_hh": b_hh}}

    def get_weight(self):
        return self._weight_bias()["weight"]

    def get_bias(self):
        return self._weight_bias()["bias"]

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        from torch.nn.utils.parametrize import type_before_parametrizations
        if type_before_parametrizations(mod) is not cls._FLOAT_MODULE:
            raise TypeError(f"qplugin.nn.dynamic.{cls.__name__}.from_float: expected "
                            f"torch.nn.{cls._FLOAT_MODULE.__name__}, got {type(mod).__name__}")
        if not hasattr(mod, "qconfig"):
            raise ValueError(f"qplugin.nn.dynamic.{cls.__name__}.from_float: expected a module "
                             "with a qconfig (qplugin.quantization.quantize_dynamic sets it)")
        obs, dtype = _weight_observer(mod, cls.__name__)
        kw = {"nonlinearity": mod.nonlinearity} if cls is RNNCell else {}
        q = cls(mod.input_size, mod.hidden_size, bias=mod.bias, dtype=dtype, **kw)
        b_ih = mod.bias_ih.detach().float() if mod.bias else None
        b_hh = mod.bias_hh.detach().float() if mod.bias else None
        if dtype == torch.qint8:
            w_ih, w_hh = _quantize(mod.weight_ih, obs), _quantize(mod.weight_hh, obs)
        else:
            w_ih, w_hh = mod.weight_ih.detach().float(), mod.weight_hh.detach().float()
        q._params.set(w_ih, b_ih, w_hh, b_hh, dtype)
        return q


def _batched(x):
    return x.unsqueeze(0) if x.dim() == 1 else x


class LSTMCell(_CellBase):
    r"""Dynamically quantized LSTMCell (≙ torch.ao.nn.quantized.dynamic.LSTMCell)."""
    _FLOAT_MODULE = torch.nn.LSTMCell
    _GATES = 4

    def forward(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None):
        self._check(input, None if hx is None else hx[0])
        if hx is not None:
            self._check(input, hx[1])
        x = _batched(input)
        if hx is None:
            z = x.new_zeros(x.size(0), self.hidden_size)
            h, c = z, z
        else:
            h, c = _batched(hx[0]), _batched(hx[1])
        gates = self._lin(h, 1).add_(self._lin(x, 0))
        i, f, g, o = gates.chunk(4, 1)
        c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h2 = o.sigmoid() * c2.tanh()
        if input.dim() == 1:
            return h2.squeeze(0), c2.squeeze(0)
        return h2, c2


class GRUCell(_CellBase):
    r"""Dynamically quantized GRUCell (≙ torch.ao.nn.quantized.dynamic.GRUCell)."""
    _FLOAT_MODULE = torch.nn.GRUCell
    _GATES = 3

    def forward(self, input: Tensor, hx: Optional[Tensor] = None):
        self._check(input, hx)
        x = _batched(input)
        h = x.new_zeros(x.size(0), self.hidden_size) if hx is None else _batched(hx)
        ir, iz, inn = self._lin(x, 0).chunk(3, 1)
        hr, hz, hn = self._lin(h, 1).chunk(3, 1)
        r = (hr + ir).sigmoid()
        z = (hz + iz).sigmoid()
        n = (inn + hn * r).tanh()
        h2 = (h - n) * z + n
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

    def forward(self, input: Tensor, hx: Optional[Tensor] = None):
        self._check(input, hx)
        x = _batched(input)
        h = x.new_zeros(x.size(0), self.hidden_size) if hx is None else _batched(hx)
        pre = self._lin(x, 0) + self._lin(h, 1)
        h2 = pre.tanh() if self.nonlinearity == "tanh" else pre.relu()
        return h2.squeeze(0) if input.dim() == 1 else h2
