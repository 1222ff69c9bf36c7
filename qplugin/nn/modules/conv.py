"""qplugin.nn.Conv1d/2d/3d and ConvTranspose1d/2d/3d (≙ torch.ao.nn.quantized.Conv*) on
torch.ops.qplugin.conv* / conv_transpose*.

Changes with: csrc/packed/conv_packed_params.{h,cpp} (packed object, pickled state),
qplugin/nn/intrinsic/modules/conv_relu.py, tests/conv/test_conv_modules.py.
The state-dict layout is torch.ao's (version 3: weight, bias, scale, zero_point), so checkpoints
load both ways. Extension: padding_mode 'reflect', 'replicate' and 'circular' (PyTorch's quantized
convs only take 'zeros' and 'reflect'): the padding copies quantized values, so it is exact.
"""
import copy
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch.nn.modules.utils import _pair, _single, _triple

from qplugin.nn.modules.linear import _hide_packed_params_repr
from qplugin.nn.modules.utils import (_check_zero_point, _observe_qint8_weight,
                                      _observed_output, _packed_forward, _store_args)

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_SUPPORTED_PADDING = ("zeros", "reflect", "replicate", "circular")


def _reverse_repeat_padding(padding: List[int]) -> List[int]:
    out: List[int] = []
    for i in range(len(padding)):
        out.append(padding[len(padding) - 1 - i])
        out.append(padding[len(padding) - 1 - i])
    return out


def _pad_quantized(x: torch.Tensor, pad: List[int], mode: str) -> torch.Tensor:
    """Pads the integer codes (exact: padding copies quantized values) and re-wraps them."""
    if not torch.jit.is_scripting():
        if type(x) is not torch.Tensor and hasattr(x, "int_data"):
            # qplugin.pt2.QTensor (the PT2 door): the same padding of its codes, re-wrapped with
            # its qparams, so no quantized-dtype tensor is made.
            codes = F.pad(x.int_repr().float(), pad, mode=mode).to(x.dtype)
            return type(x)(codes, x.q_scale(), x.q_zero_point())
    codes = F.pad(x.int_repr().float(), pad, mode=mode).to(torch.uint8)
    return torch._make_per_tensor_quantized_tensor(codes, x.q_scale(), x.q_zero_point())


def _packed_padding(padding: List[int], padding_mode: str) -> List[int]:
    """The padding packed into the weights: the module's for 'zeros'; none for the other modes
    (forward pads the input itself, _pad_quantized)."""
    if padding_mode == "zeros":
        return padding
    return [0 for _ in padding]


# The tuple form of a per-dimension argument, by the number of spatial dimensions.
_NTUPLE = {1: _single, 2: _pair, 3: _triple}


def _check_conv_rank(where: str, input: torch.Tensor, rank: int, shape: str) -> None:
    if len(input.shape) != rank:
        raise ValueError(f"{where}: expected a {rank}-D input{shape}, got {len(input.shape)}-D")


def _conv_input(where: str, input: torch.Tensor, rank: int, shape: str, padding: List[int],
                padding_mode: str) -> torch.Tensor:
    """A quantized conv's input, rank-checked (`shape`: " (N, C, ...)" or "" in the message)
    and padded for a padding_mode other than 'zeros'."""
    _check_conv_rank(where, input, rank, shape)
    if padding_mode != "zeros":
        input = _pad_quantized(input, _reverse_repeat_padding(padding), padding_mode)
    return input


def _conv_forward(op: str, overload: str, where: str, rank: int, shape: str,
                  transposed: bool = False, inputs: Tuple[str, ...] = ("input",)):
    """forward of a conv module (and its fused forms): the rank check (and padding for a
    padding_mode other than 'zeros'; transposed convs have only 'zeros'), then
    torch.ops.qplugin.<op> on the packed weight and the output qparams (utils._packed_forward)."""
    if transposed:
        prologue = f'_check_conv_rank("{where}", input, {rank}, "{shape}")'
    else:
        prologue = (f'input = _conv_input("{where}", input, {rank}, "{shape}", '
                    'list(self.padding), self.padding_mode)')
    return _packed_forward(op, overload, inputs=inputs, prologue=prologue, where=where,
                           namespace={"_conv_input": _conv_input,
                                      "_check_conv_rank": _check_conv_rank})


def _quantize_conv_weight(float_wt, observer, axis):
    """Quantizes with the (called) observer's qparams, as torch.ao's _quantize_weight."""
    scale, zp = observer.calculate_qparams()
    qscheme = observer.qscheme
    if qscheme in (torch.per_tensor_symmetric, torch.per_tensor_affine):
        qw = torch.quantize_per_tensor(float_wt, float(scale), int(zp), torch.qint8)
    elif qscheme in (torch.per_channel_symmetric, torch.per_channel_affine):
        if observer.ch_axis != axis:
            raise ValueError(f"qplugin.nn conv: expected a per-channel weight observer along axis "
                             f"{axis} (output channels), got ch_axis={observer.ch_axis}")
        qw = torch.quantize_per_channel(float_wt, scale.to(torch.double), zp.to(torch.int64),
                                        axis, torch.qint8)
    else:
        raise ValueError("qplugin.nn conv: expected a weight observer with a per-tensor or "
                         f"per-channel affine/symmetric qscheme, got {qscheme}")
    qmin, qmax = getattr(observer, "quant_min", None), getattr(observer, "quant_max", None)
    if qmin is not None and qmax is not None and (qmin > -128 or qmax < 127):
        q = qw.int_repr().clamp(qmin, qmax)
        if qw.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric):
            qw = torch._make_per_channel_quantized_tensor(
                q, qw.q_per_channel_scales(), qw.q_per_channel_zero_points(), axis)
        else:
            qw = torch._make_per_tensor_quantized_tensor(q, qw.q_scale(), qw.q_zero_point())
    return qw


def _rebuild_module(cls, state):
    """Unpickles a module pickled by _ConvNd.__reduce_ex__ (a module-level function, so that
    pickle finds it by name)."""
    new = cls.__new__(cls)
    new.__dict__.update(state)
    return new


class _ConvNd(torch.nn.Module):
    _version = 3
    _DIM = 2
    _NAME = "Conv2d"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        t = _NTUPLE[self._DIM]
        if not (self._DIM == 1 and isinstance(padding, str)):  # Conv1d keeps a string padding
            padding = t(padding)
        self._init(in_channels, out_channels, t(kernel_size), t(stride), padding, t(dilation),
                   False, t(0), groups, bias, padding_mode)

    @classmethod
    def _like(cls, mod):
        """An empty module (weights to be set) with the configuration of `mod`: a float, QAT or
        reference conv of the same kind."""
        return cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride, mod.padding,
                   mod.dilation, mod.groups, mod.bias is not None, mod.padding_mode)

    def _init(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
              transposed, output_padding, groups, bias, padding_mode, dtype=None):
        if padding_mode not in _SUPPORTED_PADDING:
            raise ValueError(f"qplugin.nn.{self._NAME}: expected padding_mode in "
                             f"{_SUPPORTED_PADDING}, got {padding_mode!r}")
        if groups <= 0 or in_channels % groups != 0:
            raise ValueError(f"qplugin.nn.{self._NAME}: expected in_channels ({in_channels}) "
                             f"divisible by groups ({groups})")
        if out_channels % groups != 0:
            raise ValueError(f"qplugin.nn.{self._NAME}: expected out_channels ({out_channels}) "
                             f"divisible by groups ({groups})")
        if transposed and padding_mode != "zeros":
            raise ValueError(f"qplugin.nn.{self._NAME}: expected padding_mode 'zeros', got "
                             f"{padding_mode!r}")
        _store_args(self, locals(), "in_channels out_channels kernel_size stride padding dilation "
                    "transposed output_padding groups padding_mode")
        if transposed:
            wshape = [in_channels, out_channels // groups]
        else:
            wshape = [out_channels, in_channels // groups]
        qweight = torch._empty_affine_quantized(wshape + list(kernel_size), scale=1, zero_point=0,
                                                dtype=torch.qint8)
        bias_float = torch.zeros(out_channels, dtype=torch.float) if bias else None
        self.set_weight_bias(qweight, bias_float)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self):
        return "Quantized" + self._NAME

    def extra_repr(self):
        s = ("{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}, "
             "scale={scale}, zero_point={zero_point}")
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.transposed and self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias() is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __repr__(self):
        return _hide_packed_params_repr(self, type(None))

    def _weight_bias(self):
        return self._packed_params.unpack()

    def weight(self):
        return self._weight_bias()[0]

    def bias(self):
        return self._weight_bias()[1]

    # State-dict layout (torch.ao.nn.quantized.Conv*'s, version 3; the packed weights never
    # leave the process: unpacked here, repacked for the running CPU on load):
    #   self
    #   |--- weight : Tensor (qint8)     |--- bias : Tensor (float32) or None
    #   |--- scale : Tensor (float64)    |--- zero_point : Tensor (int64)
    # Versions 1 and 2 of torch.ao had the same keys.
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        w, b = self._weight_bias()
        destination[prefix + "weight"] = w
        destination[prefix + "bias"] = b
        destination[prefix + "scale"] = torch.tensor(self.scale, dtype=torch.float64)
        destination[prefix + "zero_point"] = torch.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # A key missing from the dict is reported as missing (strict load_state_dict raises
        # its usual error naming it), not a KeyError; the current values are kept.
        missing = [prefix + k for k in ("weight", "bias", "scale", "zero_point")
                   if prefix + k not in state_dict]
        if missing:
            if strict:
                missing_keys.extend(missing)
            for k in ("weight", "bias", "scale", "zero_point"):
                state_dict.pop(prefix + k, None)
        else:
            self.set_weight_bias(state_dict.pop(prefix + "weight"),
                                 state_dict.pop(prefix + "bias"))
            self.scale = float(state_dict.pop(prefix + "scale"))
            self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    @torch.jit.export
    def __getstate__(self):
        (w, b) = self._weight_bias()
        return (self.in_channels, self.out_channels, self.kernel_size, self.stride, self.padding,
                self.dilation, self.transposed, self.output_padding, self.groups,
                self.padding_mode, w, b, self.scale, self.zero_point, self.training)

    @torch.jit.export
    def __setstate__(self, state):
        self.in_channels = state[0]
        self.out_channels = state[1]
        self.kernel_size = state[2]
        self.stride = state[3]
        self.padding = state[4]
        self.dilation = state[5]
        self.transposed = state[6]
        self.output_padding = state[7]
        self.groups = state[8]
        self.padding_mode = state[9]
        self.set_weight_bias(state[10], state[11])
        self.scale = state[12]
        self.zero_point = state[13]
        self.training = state[14]

    # Python pickling (torch.save, copy): the nn.Module way -- the whole __dict__ (hooks,
    # training flag, extra attributes), the packed object pickled by its own versioned, unpacked
    # state (csrc/packed). The tuple-state __getstate__/__setstate__ above are TorchScript's
    # (torch.jit.save); handing that tuple to Python's pickle would unpickle a module without
    # nn.Module's internals (PyTorch's quantized convs fail that way: PyTorch issue 69426).
    def __reduce_ex__(self, protocol):
        return (_rebuild_module, (type(self), self.__dict__))

    def __deepcopy__(self, memo):
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            new.__dict__[k] = copy.deepcopy(v, memo)
        return new

    def __copy__(self):
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    @classmethod
    def _float_types(cls):
        # qplugin's float / fused / QAT classes, plus torch.ao's twins when torch.ao imports
        # (qplugin/_ao.py): each entry is a tuple of classes.
        from qplugin._ao import classes
        d = cls._DIM
        return dict(
            float=(getattr(torch.nn, f"Conv{d}d"),),
            relu=classes(f"intrinsic.ConvReLU{d}d"),
            qat=classes(f"qat.Conv{d}d"),
            qat_bn=classes(f"intrinsic.qat.ConvBn{d}d"),
            qat_bn_relu=classes(f"intrinsic.qat.ConvBnReLU{d}d"),
            qat_relu=classes(f"intrinsic.qat.ConvReLU{d}d"))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        r"""From an observed ``nn.Conv{1,2,3}d`` (prepared and calibrated by
        torch.ao.quantization), a fused ``torch.ao.nn.intrinsic.ConvReLU*d`` (ConvBn*d fused in
        eval mode folds the batch norm into the conv first), or a QAT module
        (``torch.ao.nn.qat.Conv*d``, ``torch.ao.nn.intrinsic.qat.ConvBn*d`` / ``ConvBnReLU*d`` /
        ``ConvReLU*d``; batch norm folded as PyTorch does)."""
        from torch.nn.utils.fusion import fuse_conv_bn_weights
        t = cls._float_types()
        if hasattr(mod, "weight_fake_quant"):
            if type(mod) in t["qat_bn"] + t["qat_bn_relu"]:
                mod.weight, mod.bias = fuse_conv_bn_weights(
                    mod.weight, mod.bias, mod.bn.running_mean, mod.bn.running_var, mod.bn.eps,
                    mod.bn.weight, mod.bn.bias)
            if not hasattr(mod, "activation_post_process"):
                raise ValueError(f"qplugin.nn.{cls._NAME}.from_float: expected a QAT module with "
                                 "activation_post_process")
            wpp = mod.weight_fake_quant
            app = mod.activation_post_process
        else:
            allowed = cls._from_float_types(t)
            if type(mod) not in allowed:
                names = ", ".join(m.__name__ for m in allowed)
                raise TypeError(f"qplugin.nn.{cls.__name__}.from_float: expected {names}, got "
                                f"{type(mod).__name__}")
            app = _observed_output(f"qplugin.nn.{cls.__name__}.from_float", mod)
            if type(mod) not in t["float"]:  # a fused module (ConvReLU*d, ConvAdd2d, ...)
                mod = mod[0]
            wpp = mod.qconfig.weight()
        _observe_qint8_weight(f"qplugin.nn.{cls.__name__}.from_float", wpp, mod.weight,
                              use_precomputed_fake_quant)
        qweight = _quantize_conv_weight(mod.weight.float(), wpp, 0)
        q = cls._like(mod)
        q.set_weight_bias(qweight, None if mod.bias is None else mod.bias.detach().float())
        act_scale, act_zp = app.calculate_qparams()
        q.scale = float(act_scale)
        q.zero_point = int(act_zp)
        return q

    @classmethod
    def _from_float_types(cls, t):
        return t["float"]

    @classmethod
    def from_reference(cls, ref_qconv, output_scale, output_zero_point):
        """From a reference quantized conv (``torch.ao.nn.quantized.reference.Conv*d`` /
        ``ConvTranspose*d``)."""
        q = cls._like(ref_qconv)
        q.set_weight_bias(ref_qconv.get_quantized_weight(),
                          None if ref_qconv.bias is None else ref_qconv.bias.detach().float())
        q.scale = float(output_scale)
        q.zero_point = _check_zero_point(f"qplugin.nn.{cls.__name__}.from_reference",
                                         output_zero_point, "output_zero_point")
        return q


class Conv1d(_ConvNd):
    r"""Quantized 1-d conv (≙ torch.ao.nn.quantized.Conv1d): quint8 in/out (N, C, L), qint8
    weight (per tensor or per channel), fp32 bias; padding_mode also 'replicate'/'circular'."""

    _DIM = 1
    _NAME = "Conv1d"
    _FLOAT_MODULE = torch.nn.Conv1d

    def set_weight_bias(self, w: torch.Tensor, b: Optional[torch.Tensor]) -> None:
        self._packed_params = torch.ops.qplugin.conv1d_prepack(
            w, b, self.stride, _packed_padding(list(self.padding), self.padding_mode),
            self.dilation, self.groups)

    def _weight_bias(self):
        return torch.ops.qplugin.conv1d_unpack(self._packed_params)

    forward = _conv_forward("conv1d", "default", "qplugin.nn.Conv1d", 3, " (N, C, L)")


class Conv2d(_ConvNd):
    r"""Quantized 2-d conv (≙ torch.ao.nn.quantized.Conv2d); output channels_last like
    PyTorch's; padding_mode also 'replicate'/'circular'."""

    _DIM = 2
    _NAME = "Conv2d"
    _FLOAT_MODULE = torch.nn.Conv2d

    def set_weight_bias(self, w: torch.Tensor, b: Optional[torch.Tensor]) -> None:
        self._packed_params = torch.ops.qplugin.conv2d_prepack(
            w, b, self.stride, _packed_padding(list(self.padding), self.padding_mode),
            self.dilation, self.groups)

    forward = _conv_forward("conv2d", "new", "qplugin.nn.Conv2d", 4, " (N, C, H, W)")


class Conv3d(_ConvNd):
    r"""Quantized 3-d conv (≙ torch.ao.nn.quantized.Conv3d); output channels_last_3d;
    padding_mode also 'replicate'/'circular'."""

    _DIM = 3
    _NAME = "Conv3d"
    _FLOAT_MODULE = torch.nn.Conv3d

    def set_weight_bias(self, w: torch.Tensor, b: Optional[torch.Tensor]) -> None:
        self._packed_params = torch.ops.qplugin.conv3d_prepack(
            w, b, self.stride, _packed_padding(list(self.padding), self.padding_mode),
            self.dilation, self.groups)

    forward = _conv_forward("conv3d", "new", "qplugin.nn.Conv3d", 5, " (N, C, D, H, W)")


class _ConvTransposeNd(_ConvNd):
    """What ConvTranspose1d/2d/3d share; each writes out set_weight_bias, _weight_bias and
    forward (not built by a factory) so that TorchScript sees literal op names."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super(_ConvNd, self).__init__()  # torch.nn.Module's: _ConvNd's takes a conv's arguments
        t = _NTUPLE[self._DIM]
        self._init(in_channels, out_channels, t(kernel_size), t(stride), t(padding),
                   t(dilation), True, t(output_padding), groups, bias, padding_mode)

    @classmethod
    def _like(cls, mod):
        return cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride, mod.padding,
                   mod.output_padding, mod.groups, mod.bias is not None, mod.dilation,
                   mod.padding_mode)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From an observed ``nn.ConvTranspose{1,2,3}d``. Per-channel weight observers must use
        ch_axis=1 (the output channels of a transposed-conv weight); PyTorch's x86 engine has no
        per-channel transposed conv, qplugin does."""
        ft = getattr(torch.nn, f"ConvTranspose{cls._DIM}d")
        if type(mod) is not ft:
            raise TypeError(f"qplugin.nn.{cls.__name__}.from_float: expected {ft.__name__}, got "
                            f"{type(mod).__name__}")
        if getattr(mod, "qconfig", None) is None or not hasattr(mod, "activation_post_process"):
            raise ValueError(f"qplugin.nn.{cls.__name__}.from_float: expected an observed module "
                             "with a qconfig (prepare and calibrate first)")
        wpp = mod.qconfig.weight()
        _observe_qint8_weight(f"qplugin.nn.{cls.__name__}.from_float", wpp, mod.weight, False)
        qweight = _quantize_conv_weight(mod.weight.float(), wpp, 1)
        q = cls._like(mod)
        q.set_weight_bias(qweight, None if mod.bias is None else mod.bias.detach().float())
        s, z = mod.activation_post_process.calculate_qparams()
        q.scale = float(s)
        q.zero_point = int(z)
        return q


class ConvTranspose1d(_ConvTransposeNd):
    r"""Quantized transposed 1-d conv (≙ torch.ao.nn.quantized.ConvTranspose1d); per-tensor and
    per-channel (axis 1) weights, exact integer arithmetic."""

    _DIM = 1
    _NAME = "ConvTranspose1d"
    _FLOAT_MODULE = torch.nn.ConvTranspose1d

    def set_weight_bias(self, w: torch.Tensor, b: Optional[torch.Tensor]) -> None:
        self._packed_params = torch.ops.qplugin.conv_transpose1d_prepack(
            w, b, self.stride, self.padding, self.output_padding, self.dilation, self.groups)

    def _weight_bias(self):
        return torch.ops.qplugin.conv_transpose1d_unpack(self._packed_params)

    forward = _conv_forward("conv_transpose1d", "default", "qplugin.nn.ConvTranspose1d", 3, "",
                            transposed=True)


class ConvTranspose2d(_ConvTransposeNd):
    r"""Quantized transposed 2-d conv (≙ torch.ao.nn.quantized.ConvTranspose2d); per-tensor and
    per-channel (axis 1) weights, exact integer arithmetic."""

    _DIM = 2
    _NAME = "ConvTranspose2d"
    _FLOAT_MODULE = torch.nn.ConvTranspose2d

    def set_weight_bias(self, w: torch.Tensor, b: Optional[torch.Tensor]) -> None:
        self._packed_params = torch.ops.qplugin.conv_transpose2d_prepack(
            w, b, self.stride, self.padding, self.output_padding, self.dilation, self.groups)

    def _weight_bias(self):
        return torch.ops.qplugin.conv_transpose2d_unpack(self._packed_params)

    forward = _conv_forward("conv_transpose2d", "default", "qplugin.nn.ConvTranspose2d", 4, "",
                            transposed=True)


class ConvTranspose3d(_ConvTransposeNd):
    r"""Quantized transposed 3-d conv (≙ torch.ao.nn.quantized.ConvTranspose3d); per-tensor and
    per-channel (axis 1) weights, exact integer arithmetic."""

    _DIM = 3
    _NAME = "ConvTranspose3d"
    _FLOAT_MODULE = torch.nn.ConvTranspose3d

    def set_weight_bias(self, w: torch.Tensor, b: Optional[torch.Tensor]) -> None:
        self._packed_params = torch.ops.qplugin.conv_transpose3d_prepack(
            w, b, self.stride, self.padding, self.output_padding, self.dilation, self.groups)

    def _weight_bias(self):
        return torch.ops.qplugin.conv_transpose3d_unpack(self._packed_params)

    forward = _conv_forward("conv_transpose3d", "default", "qplugin.nn.ConvTranspose3d", 5, "",
                            transposed=True)
