"""Shared helpers of the qplugin.nn modules: argument checks, from_float checks, and the
scale/zero_point buffer handling (assignment + state-dict loading) used by every module that
carries output qparams. Changes with: every file in qplugin/nn/modules and qplugin/nn/intrinsic.
"""
import math
import numbers
from typing import Any, Callable, Dict, List, Optional, Tuple, Type

import torch
from torch.nn.utils.parametrize import type_before_parametrizations

__all__: List[str] = []

# Activation dtypes the qplugin ops accept (the order is the one used in messages).
_QUANTIZED_DTYPES = (torch.quint8, torch.qint8, torch.qint32)
_QPARAM_NAMES = ("scale", "zero_point")


def _dtype_names(dtypes) -> str:
    names = [str(d) for d in dtypes]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _class_names(classes) -> str:
    names = [f"{c.__module__}.{c.__qualname__}" for c in classes]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _store_args(obj: Any, values: Dict[str, Any], names: str) -> None:
    """``obj.<name> = values[name]`` for each space-separated name: the constructors that keep
    their arguments as attributes (as torch.ao's do) call ``_store_args(self, locals(), "a b")``."""
    for name in names.split():
        setattr(obj, name, values[name])


def _check_scale(owner: str, scale: Any, name: str = "scale") -> float:
    """A finite, positive real (or one-element tensor) -> float; else TypeError/ValueError."""
    if isinstance(scale, torch.Tensor):
        if scale.is_quantized or scale.numel() != 1 or scale.is_complex():
            raise TypeError(f"{owner}: expected {name} to be a float or a one-element real tensor,"
                            f" got a tensor of dtype {scale.dtype} and shape {list(scale.shape)}")
        value = float(scale.item())
    elif isinstance(scale, numbers.Real) and not isinstance(scale, bool):
        value = float(scale)
    else:
        raise TypeError(f"{owner}: expected {name} to be a float, got {type(scale).__name__}")
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"{owner}: expected a finite, positive {name}, got {value}")
    return value


def _scale_buffer(owner: str, scale: float, shape=(), **factory_kwargs) -> torch.Tensor:
    """The `scale` buffer: a checked scale stored as a tensor (factory device/dtype), which must
    stay positive and finite in that dtype (1e-50 underflows float32)."""
    t = torch.full(shape, _check_scale(owner, scale), **factory_kwargs)
    if not bool((t > 0).all() and torch.isfinite(t).all()):
        raise ValueError(f"{owner}: expected a scale representable as a positive, finite"
                         f" {t.dtype}, got {scale}")
    return t


def _check_zero_point(owner: str, zero_point: Any, name: str = "zero_point") -> int:
    """An integer -> int: a Python/NumPy int, an integral float (PyTorch's modules accept
    `Hardswish(scale, 1.0)`: they pass it on to ops that take it as int), or a one-element
    integer or integral floating-point tensor. A non-integral or non-finite float raises
    ValueError (it would silently truncate); anything else TypeError."""
    if isinstance(zero_point, torch.Tensor):
        if (zero_point.is_quantized or zero_point.numel() != 1 or zero_point.is_complex()
                or zero_point.dtype == torch.bool):
            raise TypeError(f"{owner}: expected {name} to be an int or a one-element integer"
                            f" tensor, got a tensor of dtype {zero_point.dtype} and shape"
                            f" {list(zero_point.shape)}")
        if not zero_point.is_floating_point():
            return int(zero_point.item())
        zero_point = float(zero_point.item())
    if isinstance(zero_point, numbers.Integral) and not isinstance(zero_point, bool):
        return int(zero_point)
    if isinstance(zero_point, numbers.Real) and not isinstance(zero_point, bool):
        value = float(zero_point)
        if math.isfinite(value) and value.is_integer():
            return int(value)
        raise ValueError(f"{owner}: expected {name} to be an integer (an int or an integral"
                         f" float), got {value!r}")
    raise TypeError(f"{owner}: expected {name} to be an int, got {type(zero_point).__name__}"
                    f" {zero_point!r}")


def _check_real(owner: str, value: Any, name: str) -> float:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = float(value)
        if math.isfinite(value):
            return value
        raise ValueError(f"{owner}: expected a finite {name}, got {value}")
    raise TypeError(f"{owner}: expected {name} to be a float, got {type(value).__name__}")


def _check_bool(owner: str, value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: expected {name} to be a bool, got {type(value).__name__}")
    return value


def _check_float_dtype(owner: str, dtype: Any) -> None:
    """The factory dtype of floating buffers/parameters: None or a floating torch.dtype."""
    if dtype is None:
        return
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"{owner}: expected dtype to be None or a floating-point torch.dtype"
                        f" (torch.float32, torch.float64, ...), got {dtype!r}")


def _check_quantized_dtype(owner: str, dtype: Any) -> torch.dtype:
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"{owner}: expected dtype to be a torch.dtype"
                        f" ({_dtype_names(_QUANTIZED_DTYPES)}), got {type(dtype).__name__}")
    if dtype not in _QUANTIZED_DTYPES:
        raise ValueError(f"{owner}: expected dtype {_dtype_names(_QUANTIZED_DTYPES)}, got {dtype}")
    return dtype


def _check_float_module(owner: str, mod: Any, float_classes: Tuple[Type, ...],
                        hint: Dict[Type, str] = None) -> None:
    """from_float/from_reference input: exactly one of `float_classes` (parametrized ok)."""
    if not isinstance(mod, torch.nn.Module):
        raise TypeError(f"{owner}: expected an observed {_class_names(float_classes)}, got"
                        f" {type(mod).__name__}")
    t = type_before_parametrizations(mod)
    if t not in float_classes:
        extra = ""
        if hint:
            for cls, text in hint.items():
                if t is cls:
                    extra = f"; {text}"
        raise TypeError(f"{owner}: expected an observed {_class_names(float_classes)}, got"
                        f" {t.__module__}.{t.__qualname__}{extra}")


def _observer_qparams(owner: str, mod: torch.nn.Module) -> Tuple[float, int]:
    """(scale, zero_point) of the output observer that prepare (qplugin.quantization or torch.ao) attached."""
    obs = getattr(mod, "activation_post_process", None)
    if obs is None or not hasattr(obs, "calculate_qparams"):
        raise ValueError(f"{owner}: expected a module with an output observer"
                         " (activation_post_process), got one without; run"
                         " qplugin.quantization.prepare and calibrate it first")
    scale, zero_point = obs.calculate_qparams()
    return _check_scale(owner, scale), _check_zero_point(owner, zero_point)


class _QParamsMixin:
    """Modules whose output qparams live in the buffers `scale` and `zero_point`.

    - Assigning `module.scale = 0.5` (or a tensor of one element, e.g. an observer's qparams)
      writes the value into the buffer, keeping its dtype, device and shape, so code written for
      PyTorch's modules (plain float attributes, or buffers replaced by [1]-shaped tensors) keeps
      working and the state dict keeps one layout.
    - `_load_qparams` (called from `_load_from_state_dict`) accepts any one-element scale and
      zero_point, and a state dict without them (older PyTorch-style layouts), in which case the
      constructor values are kept.
    """

    def _qparam_owner(self) -> str:
        # The user-facing name in messages, e.g. "qplugin.nn.intrinsic.BNReLU2d".
        return getattr(type(self), "_QPLUGIN_NAME", None) or f"qplugin.nn.{type(self).__name__}"

    def _coerce_qparam(self, name: str, value: Any, current: torch.Tensor) -> torch.Tensor:
        owner = self._qparam_owner()
        if name == "scale":
            v = _check_scale(owner, value)
        else:
            v = _check_zero_point(owner, value)  # integral float buffers (old PyTorch) pass
        t = torch.tensor(v, dtype=current.dtype, device=current.device).reshape(current.shape)
        if name == "scale" and not (torch.isfinite(t).all() and (t > 0).all()):
            raise ValueError(f"{owner}: expected a scale representable as a positive, finite"
                             f" {current.dtype}, got {v}")
        return t

    def __setattr__(self, name: str, value: Any) -> None:
        buffers = self.__dict__.get("_buffers")
        if name in _QPARAM_NAMES and buffers is not None and buffers.get(name) is not None:
            value = self._coerce_qparam(name, value, buffers[name])
        super().__setattr__(name, value)

    def _load_qparams(self, state_dict: Dict[str, Any], prefix: str,
                      error_msgs: List[str]) -> None:
        for name in _QPARAM_NAMES:
            key = prefix + name
            current = self._buffers[name]
            if key not in state_dict:
                # A state dict written before qplugin stored qparams (PyTorch-style ELU): keep the
                # constructor's value, and do not report the key as missing.
                state_dict[key] = current.detach().clone()
                continue
            try:
                state_dict[key] = self._coerce_qparam(name, state_dict[key], current)
            except (TypeError, ValueError) as e:
                error_msgs.append(f"While loading {key!r}: {e}")
                state_dict[key] = current.detach().clone()

    # Every subclass's state-dict loading (its layout is drawn above its _save_to_state_dict,
    # or above its _version where it writes nothing beyond torch.nn's own saving):
    # the qparams first (any one-element scale/zero_point, or none), then torch.nn's loading.
    def _load_from_state_dict(self, state_dict: Dict[str, Any], prefix: str, local_metadata,
                              strict: bool, missing_keys: List[str], unexpected_keys: List[str],
                              error_msgs: List[str]) -> None:
        self._load_qparams(state_dict, prefix, error_msgs)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


def _observed_output(where: str, mod):
    """from_float of an observed float module (conv, linear): its activation_post_process,
    after checking it has a qconfig and was observed."""
    if getattr(mod, "qconfig", None) is None:
        raise ValueError(f"{where}: expected a module with a qconfig (run "
                         "qplugin.quantization.prepare first)")
    if not hasattr(mod, "activation_post_process"):
        raise ValueError(f"{where}: expected an observed module with activation_post_process "
                         "(prepare and calibrate)")
    return mod.activation_post_process


def _observe_qint8_weight(where: str, wpp, weight, use_precomputed_fake_quant: bool) -> None:
    """from_float: the weight observer (or fake quant) `wpp` sees `weight` (unless its qparams
    are precomputed) and must be qint8."""
    if not use_precomputed_fake_quant:
        wpp(weight)
    if wpp.dtype != torch.qint8:
        raise ValueError(f"{where}: expected a weight observer of dtype torch.qint8, got "
                         f"{wpp.dtype}")


class _PackedHolder(torch.nn.Module):
    """A child module holding one packed-weights object (a torchbind class) for its owner
    (qplugin.nn.Linear's and the dynamic linears' LinearPackedParams, EmbeddingPackedParams):
    an identity forward (the owner calls the op), a state dict of `dtype` and the unpacked
    weights under `_STATE_KEY` (the owner's layout comment draws it), and the unpacked weights'
    repr. Subclasses set `_STATE_KEY` and `_unpacked()` and load the state themselves."""

    _STATE_KEY = "_packed_params"

    def forward(self, x):
        return x

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + self._STATE_KEY] = self._unpacked()

    def __repr__(self):
        return self._unpacked().__repr__()


def _dynamic_weight_observer(qconfig):
    """The weight observer factory of a dynamic module's qconfig; without one (no qconfig, or no
    weight in it), the default dynamic qconfig's, as torch.ao."""
    if qconfig is None or qconfig.weight is None:
        from qplugin.quantization import default_dynamic_qconfig
        qconfig = default_dynamic_qconfig
    return qconfig.weight


class _QuantizedName:
    """`_get_name` (the name in reprs) of the modules PyTorch names "Quantized" + the float
    class's name (QuantizedLayerNorm, QuantizedSoftmax, ...): read from `_FLOAT_MODULE`, so a
    user subclass keeps its parent's name, as with PyTorch's written-out names."""

    def _get_name(self):
        return "Quantized" + self._FLOAT_MODULE.__name__


class _FromFloat:
    """from_float for the stateless modules: the float module's configuration, any qconfig or
    observer ignored (none is attached by torch.ao.quantization.prepare: pools keep the input's
    qparams)."""

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A module with `mod`'s configuration (`mod`: exactly cls._FLOAT_MODULE, with or without
        qconfig). `use_precomputed_fake_quant` is accepted for torch.ao compatibility."""
        _check_float_module(f"qplugin.nn.{cls.__name__}.from_float", mod, (cls._FLOAT_MODULE,))
        return cls(**{k: getattr(mod, k) for k in cls._CONFIG})

    def _get_name(self):
        return type(self).__name__


# (QTensor class, router) of the PT2 door, registered by qplugin.pt2 when it is imported.
_PT2_ROUTER: List[Any] = []


def _packed_op_call(op, args: Tuple[Any, ...]):
    """``op(*args)`` for a qplugin op taking packed params (a torchbind object): conv, linear.

    On a qplugin.pt2.QTensor activation (``args[0]``) the op's PT2 route runs here, in Python,
    rather than from QTensor's __torch_function__: under torch.compile the packed params are a
    fake script object, and a torchbind op called with one dispatches in Python without
    consulting __torch_function__ (and a packet call fails overload resolution), so the legacy
    op must not reach the graph. Dynamo inlines this function and the router: the graph gets the
    op's `.plain` overload on the codes. The modules call it with the overload, not the packet,
    outside TorchScript (which does not know overload names).
    """
    if _PT2_ROUTER:
        qtensor, route = _PT2_ROUTER[0]
        if isinstance(args[0], qtensor):
            return route(op, args, {})
    return _plain_op_call(op, args)


def _plain_tensors(args: Tuple[Any, ...]) -> bool:
    """Whether every tensor among ``args`` (and in their lists/tuples, e.g. an LSTM cell's
    ``[h, c]``) is exactly a torch.Tensor, with at least one tensor: the calls where disabling
    subclass torch functions changes nothing but the cost."""
    seen = False
    for a in args:
        if isinstance(a, torch.Tensor):
            if type(a) is not torch.Tensor:
                return False
            seen = True
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, torch.Tensor):
                    if type(b) is not torch.Tensor:
                        return False
                    seen = True
    return seen


def _plain_op_call(op, args: Tuple[Any, ...]):
    """``op(*args)`` for an op taking a torchbind object (packed params) outside TorchScript.

    torch's Python call of an op looks up __torch_function__ on every argument that is not a
    tensor or a plain Python value; on a torchbind object that lookup raises and catches a C++
    exception inside torch (ScriptObject attribute lookup), ~30 of the ~47 us of a call on a
    tiny input on a Zen 1 (torch.ao's ops pay the same). With subclass torch functions disabled
    torch skips the lookup (14-18 us). Only when every tensor argument is a plain torch.Tensor
    and outside torch.compile, so that a tensor subclass's __torch_function__ still runs. The
    static modules reach it through _packed_op_call, the dynamic ones (linear, conv, RNN
    layers and cells) directly."""
    if _plain_tensors(args) and not torch.compiler.is_compiling():
        with torch._C.DisableTorchFunctionSubclass():
            return op(*args)
    return op(*args)


def _packed_forward(op: str, overload: str, *, weight: str = "self._packed_params",
                    inputs: Tuple[str, ...] = ("input",), annotated: bool = False,
                    prologue: str = "", extra: Tuple[str, ...] = (),
                    namespace: Optional[Dict[str, Any]] = None, where: str) -> Callable:
    """The forward of a module over a packed-params op (linear, conv and their fused forms):
    `torch.ops.qplugin.<op>(*inputs, weight, self.scale, self.zero_point, *extra)` written out
    literally for TorchScript, and outside it the op's `<overload>` through _packed_op_call (the
    PT2 route). The source is generated (qplugin/_codegen.py) from these arguments, one line of
    `prologue` (e.g. the conv's input check) first; `where` names the class for the file name."""
    from ..._codegen import compile_function
    params = ", ".join(inputs)
    sig = (f"self, {', '.join(f'{n}: torch.Tensor' for n in inputs)}) -> torch.Tensor"
           if annotated else f"self, {params})")
    args = ", ".join((*inputs, weight, "self.scale", "self.zero_point", *extra))
    source = (f"def forward({sig}:\n"
              + (f"    {prologue}\n" if prologue else "")
              + "    if torch.jit.is_scripting():\n"
              f"        return torch.ops.qplugin.{op}({args})\n"
              f"    return _packed_op_call(torch.ops.qplugin.{op}.{overload}, ({args},))\n")
    scope = {"torch": torch, "_packed_op_call": _packed_op_call, **(namespace or {})}
    return compile_function(source, "forward", f"{where}'s packed-op forward", scope,
                            "qplugin.nn.modules.utils")
