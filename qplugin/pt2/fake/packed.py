"""Fake classes of the packed-params objects (docs/pt2.md section 2), and `packed_view`.

Every packed-params class has a C++ `__obj_flatten__` (csrc/library.cpp) returning its shape and
config as (name, value) pairs — never the weights: Dynamo's guards call it on every compiled call.
torch.export / torch.compile turn it into an instance of the fake class below (`__obj_unflatten__`),
which holds the same names as attributes and answers the real class's methods from them
(`in_features()`, `stride()`, ...). The names differ from the method names on purpose: a fake
object's attributes and methods share one namespace, and PyTorch reads the attributes by the
flattened names.

Fake kernels read a packed argument through `packed_view(obj)`: the fake instance, whether `obj`
is a FakeScriptObject (torch 2.13 refuses plain attribute access on it inside a fake kernel, so
its `wrapped_obj` is used), a real ScriptObject (opcheck and eager fake-mode calls pass those:
built from its `__obj_flatten__`) or already a fake instance.

Changes with: csrc/library.cpp (__obj_flatten__), fake/linear.py, fake/conv.py.
"""
import torch

__all__ = ["packed_view", "FakeLinearPackedParams", "FakeLinearPackedParamsFp16", "FakeCellParams",
           "FakeConv2dPackedParams", "FakeConv3dPackedParams", "FakeEmbeddingPackedParams"]

_NS = "__torch__.torch.classes.qplugin."
_BY_QUALNAME = {}


def _not_while_tracing(cls_name, method):
    raise NotImplementedError(
        f"qplugin.{cls_name}.{method}() is not available while tracing (torch.export / "
        "torch.compile see the packed object's shape and config only); call it on the real "
        "object outside the traced code")


class _FakePacked:
    _FIELDS = ()
    _NAME = ""

    def __init__(self, **fields):
        missing = [f for f in self._FIELDS if f not in fields]
        if missing:
            raise ValueError(f"qplugin.{self._NAME}: __obj_unflatten__ expected the fields "
                             f"{list(self._FIELDS)}, got {sorted(fields)}")
        for f in self._FIELDS:
            v = fields[f]
            setattr(self, f, tuple(v) if isinstance(v, list) else v)

    @classmethod
    def __obj_unflatten__(cls, flat):
        return cls(**dict(flat))

    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__

    def __repr__(self):
        cfg = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS)
        return f"Fake{self._NAME}({cfg})"

    def __len__(self):
        # As the real class's (csrc/library.cpp): no length, TypeError like any unsized object.
        raise TypeError(f"object of type qplugin.{self._NAME} has no len()")

    # Methods of the real class that need the weights or the packing.
    def kernel(self):
        _not_while_tracing(self._NAME, "kernel")

    def unpack(self):
        _not_while_tracing(self._NAME, "unpack")


def _register(name):
    def deco(cls):
        cls._NAME = name
        # register_fake_class wants the classmethod in the class's own __dict__.
        cls.__obj_unflatten__ = classmethod(_FakePacked.__obj_unflatten__.__func__)
        _BY_QUALNAME[_NS + name] = cls
        try:
            torch._library.register_fake_class(f"qplugin::{name}")(cls)
        except (AttributeError, RuntimeError):  # an older torch, or a library without the class
            pass
        return cls
    return deco


def _bias(has_bias, n):
    return torch.empty(n, dtype=torch.float32) if has_bias else None


class _FakeLinear(_FakePacked):
    """in_features / out_features / bias of both linear packed params (int8 and float16)."""

    def in_features(self):
        return self.weight_shape[1]

    def out_features(self):
        return self.weight_shape[0]

    def bias(self):
        return _bias(self.has_bias, self.weight_shape[0])


@_register("LinearPackedParams")
class FakeLinearPackedParams(_FakeLinear):
    _FIELDS = ("weight_shape", "qscheme", "has_bias")

    def packed_size_bytes(self):
        _not_while_tracing(self._NAME, "packed_size_bytes")

    def packed_weight_bytes(self):
        _not_while_tracing(self._NAME, "packed_weight_bytes")


@_register("LinearPackedParamsFp16")
class FakeLinearPackedParamsFp16(_FakeLinear):
    _FIELDS = ("weight_shape", "has_bias")


@_register("CellParams")
class FakeCellParams(_FakePacked):
    """One RNN layer/direction's W_ih and W_hh (int8 or float16; csrc/packed/cell_params.h)."""
    _FIELDS = ("weight_dtype", "w_ih_shape", "w_hh_shape", "reduce_range_")

    def dtype(self):
        return self.weight_dtype

    def reduce_range(self):
        return self.reduce_range_


class _FakeConvPacked(_FakePacked):
    """weight_shape: [C_out, C_in/g, k...] (conv) or [C_in, C_out/g, k...] (transposed); the 2d
    class holds conv1d weights as [.., .., 1, k] with stride/padding/... [1 or 0, value]."""
    _FIELDS = ("weight_shape", "qscheme", "has_bias", "strides", "paddings", "output_paddings",
               "dilations", "n_groups", "transposed")

    def stride(self):
        return list(self.strides)

    def padding(self):
        return list(self.paddings)

    def output_padding(self):
        return list(self.output_paddings)

    def dilation(self):
        return list(self.dilations)

    def groups(self):
        return self.n_groups

    def transpose(self):
        return self.transposed

    # Derived (not methods of the real class): what the fake kernels need.
    def kernel_size(self):
        return tuple(self.weight_shape[2:])

    def in_channels(self):
        w = self.weight_shape
        return w[0] if self.transposed else w[1] * self.n_groups

    def out_channels(self):
        w = self.weight_shape
        return w[1] * self.n_groups if self.transposed else w[0]


@_register("Conv2dPackedParams")
class FakeConv2dPackedParams(_FakeConvPacked):
    pass


@_register("Conv3dPackedParams")
class FakeConv3dPackedParams(_FakeConvPacked):
    pass


@_register("EmbeddingPackedParams")
class FakeEmbeddingPackedParams(_FakePacked):
    _FIELDS = ("bits", "num_embeddings", "embedding_dim")

    def bit_rate(self):
        return self.bits

    def version(self):
        return 1


def packed_view(obj):
    """The fake-class instance (shape and config) of a packed-params object: a FakeScriptObject
    (its wrapped_obj), a real torchbind ScriptObject (built from its __obj_flatten__) or a fake
    instance (returned as is)."""
    if isinstance(obj, _FakePacked):
        return obj
    wrapped = getattr(obj, "wrapped_obj", None)  # torch._library.fake_class_registry
    if isinstance(wrapped, _FakePacked):
        return wrapped
    if isinstance(obj, torch.ScriptObject):
        qn = obj._type().qualified_name()
        cls = _BY_QUALNAME.get(qn)
        if cls is not None:
            # A real object met inside a fake kernel (opcheck's fake check, FakeTensorMode over
            # real arguments): its __obj_flatten__ reads the real weight's qscheme through the
            # dispatcher, which the active fake mode would reject; it reads metadata only.
            with torch._C._DisableTorchDispatch():
                flat = obj.__obj_flatten__()
            return cls.__obj_unflatten__(flat)
        raise TypeError(f"qplugin: expected a qplugin packed-params object, got {qn}")
    raise TypeError(f"qplugin: expected a qplugin packed-params object, got "
                    f"{type(obj).__name__}")
