# The packed-params classes on the PT2 door (docs/pt2.md section 2): C++ __obj_flatten__ gives the
# shape and config (never the weights) as (name, value) pairs, __eq__ compares the pickled states,
# the fake classes (qplugin/pt2/fake/packed.py) rebuild the config and answer the real methods,
# packed_view works on real objects, FakeScriptObjects and fake instances.
# Changes with: csrc/library.cpp, qplugin/pt2/fake/packed.py.
import copy
import io

import pytest
import torch
from torch._library.fake_class_registry import FakeScriptObject, maybe_to_fake_obj
from torch._subclasses.fake_tensor import FakeTensorMode

import qplugin  # noqa: F401
from qplugin.pt2.fake import packed as fp

from _reference import qint8_weight as _qw

Q = torch.ops.qplugin


def _g(seed):
    return torch.Generator().manual_seed(seed)


def _bias(n, seed=1):
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


def _linear(per_channel=False, bias=True, seed=0):
    return Q.linear_prepack(_qw((5, 7), per_channel, seed=seed), _bias(5) if bias else None)


# (name, factory(seed) -> packed object, expected flatten dict, real methods to compare)
CASES = {
    "linear_pt": (lambda s: _linear(False, True, s),
                  {"weight_shape": [5, 7], "qscheme": "per_tensor_affine", "has_bias": True}),
    "linear_pc_nobias": (lambda s: _linear(True, False, s),
                         {"weight_shape": [5, 7], "qscheme": "per_channel_affine",
                          "has_bias": False}),
    "linear_fp16": (lambda s: Q.linear_prepack_fp16(torch.randn(4, 6, generator=_g(s)),
                                                    _bias(4)),
                    {"weight_shape": [4, 6], "has_bias": True}),
    "conv1d": (lambda s: Q.conv1d_prepack(_qw((6, 2, 3), seed=s), _bias(6), [2], [1], [1], 2),
               {"weight_shape": [6, 2, 1, 3], "qscheme": "per_tensor_affine", "has_bias": True,
                "strides": [1, 2], "paddings": [0, 1], "output_paddings": [0, 0],
                "dilations": [1, 1], "n_groups": 2, "transposed": False}),
    "conv2d_pc": (lambda s: Q.conv2d_prepack(_qw((8, 3, 3, 2), True, seed=s), None, [1, 2],
                                             [1, 0], [2, 1], 1),
                  {"weight_shape": [8, 3, 3, 2], "qscheme": "per_channel_affine",
                   "has_bias": False, "strides": [1, 2], "paddings": [1, 0],
                   "output_paddings": [0, 0], "dilations": [2, 1], "n_groups": 1,
                   "transposed": False}),
    "conv3d": (lambda s: Q.conv3d_prepack(_qw((4, 2, 1, 2, 3), seed=s), _bias(4), [1, 1, 2],
                                          [0, 1, 1], [1, 1, 1], 1),
               {"weight_shape": [4, 2, 1, 2, 3], "qscheme": "per_tensor_affine",
                "has_bias": True, "strides": [1, 1, 2], "paddings": [0, 1, 1],
                "output_paddings": [0, 0, 0], "dilations": [1, 1, 1], "n_groups": 1,
                "transposed": False}),
    "conv_transpose2d": (lambda s: Q.conv_transpose2d_prepack(_qw((4, 3, 2, 2), seed=s),
                                                              _bias(6), [2, 2], [0, 1], [1, 0],
                                                              [1, 1], 2),
                         {"weight_shape": [4, 3, 2, 2], "qscheme": "per_tensor_affine",
                          "has_bias": True, "strides": [2, 2], "paddings": [0, 1],
                          "output_paddings": [1, 0], "dilations": [1, 1], "n_groups": 2,
                          "transposed": True}),
    "cell_params": (lambda s: Q.make_quantized_cell_params_dynamic(
        Q.linear_prepack(_qw((12, 7), seed=s), _bias(12)),
        Q.linear_prepack(_qw((12, 3), seed=s + 1), None), _bias(12), _bias(12), True),
        {"weight_dtype": "qint8", "w_ih_shape": [12, 7], "w_hh_shape": [12, 3],
         "reduce_range_": True}),
    "cell_params_fp16": (lambda s: Q.make_quantized_cell_params_fp16(
        Q.linear_prepack_fp16(torch.randn(8, 5, generator=_g(s)), _bias(8)),
        Q.linear_prepack_fp16(torch.randn(8, 2, generator=_g(s + 1)), _bias(8))),
        {"weight_dtype": "float16", "w_ih_shape": [8, 5], "w_hh_shape": [8, 2],
         "reduce_range_": False}),
    "embedding": (lambda s: Q.embedding_bag_prepack(
        torch.quantize_per_channel(torch.randn(10, 8, generator=_g(s)), torch.rand(10) * 0 + 0.1,
                                   torch.zeros(10), 0, torch.quint8)),
                  {"bits": 8, "num_embeddings": 10, "embedding_dim": 8}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_obj_flatten_is_config_only(name):
    make, want = CASES[name]
    obj = make(0)
    flat = obj.__obj_flatten__()
    assert isinstance(flat, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in flat)
    got = dict(flat)
    assert got == want
    # No tensor anywhere: Dynamo's guards call this on every compiled call.
    assert not any(isinstance(v, torch.Tensor) for v in got.values())
    # The flattened names are not method names (fake attributes and methods share a namespace).
    assert not set(got) & set(obj._method_names())


@pytest.mark.parametrize("name", sorted(CASES))
def test_fake_class_answers_like_the_real_object(name):
    make, _ = CASES[name]
    obj = make(0)
    view = fp.packed_view(obj)
    assert type(view).__name__ == "Fake" + obj._type().name()
    checked = 0
    for m in ("in_features", "out_features", "stride", "padding", "output_padding", "dilation",
              "groups", "transpose", "bit_rate", "version", "dtype", "reduce_range"):
        if hasattr(obj, m) and m in obj._method_names():
            assert getattr(view, m)() == getattr(obj, m)(), m
            checked += 1
    assert checked >= 2
    if hasattr(view, "bias") and "bias" in obj._method_names():
        b = obj.bias()
        vb = view.bias()
        assert (b is None) == (vb is None)
        if b is not None:
            assert vb.shape == b.shape and vb.dtype == b.dtype
    with pytest.raises(NotImplementedError, match="not available while tracing"):
        view.unpack()


def test_conv_fake_derived_sizes():
    w = fp.packed_view(CASES["conv_transpose2d"][0](0))
    assert (w.in_channels(), w.out_channels(), w.kernel_size()) == (4, 6, (2, 2))
    w = fp.packed_view(CASES["conv2d_pc"][0](0))
    assert (w.in_channels(), w.out_channels(), w.kernel_size()) == (3, 8, (3, 2))
    w = fp.packed_view(CASES["conv1d"][0](0))
    assert (w.in_channels(), w.out_channels(), w.kernel_size()) == (4, 6, (1, 3))


@pytest.mark.parametrize("name", sorted(CASES))
def test_packed_view_of_fake_script_object(name):
    obj = CASES[name][0](0)
    with FakeTensorMode() as mode:
        fake = maybe_to_fake_obj(mode, obj)
    assert isinstance(fake, FakeScriptObject)
    v = fp.packed_view(fake)
    assert v is fake.wrapped_obj
    assert fp.packed_view(v) is v
    for k, val in dict(obj.__obj_flatten__()).items():
        got = getattr(v, k)
        assert (list(got) if isinstance(got, tuple) else got) == val


def test_packed_view_rejects_other_objects():
    with pytest.raises(TypeError, match="qplugin packed-params object"):
        fp.packed_view(torch.zeros(2))


def _roundtrip(obj):
    # Pickled state round trip through TorchScript serialization: a new object, same content.
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = obj

        def forward(self, x):
            return x

    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(M()), buf)
    buf.seek(0)
    return torch.jit.load(buf).p


@pytest.mark.parametrize("name", sorted(CASES))
def test_eq_compares_content(name):
    make, _ = CASES[name]
    a, a2, b = make(0), make(0), make(3)
    assert a == a
    assert a == a2 and a2 == a          # separately packed, same content
    assert not (a == b)                 # different weights, same config
    assert a == copy.deepcopy(a)
    assert a == _roundtrip(a)


def test_eq_sees_bias_and_qparams():
    w = _qw((5, 7))
    a = Q.linear_prepack(w, _bias(5))
    assert not (a == Q.linear_prepack(w, _bias(5, seed=9)))
    assert not (a == Q.linear_prepack(w, None))
    w2 = torch.quantize_per_tensor(w.dequantize(), 0.02, 2, torch.qint8)
    assert not (a == Q.linear_prepack(w2, _bias(5)))


def test_fake_classes_registered():
    from torch._library.fake_class_registry import has_fake_class
    for name in ("LinearPackedParams", "LinearPackedParamsFp16", "Conv2dPackedParams",
                 "Conv3dPackedParams", "EmbeddingPackedParams", "CellParams"):
        assert has_fake_class(f"__torch__.torch.classes.qplugin.{name}"), name


def test_export_dynamic_linear_with_packed_object():
    # The packed object is lifted as an input of the exported graph; the op's fake kernel reads
    # it through the fake class (qplugin/_meta_dynamic.py).
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = Q.linear_prepack(_qw((5, 7)), _bias(5))

        def forward(self, x):
            return Q.linear_dynamic(x, self.p)

    m = M()
    x = torch.randn(3, 7)
    ep = torch.export.export(m, (x,), strict=False)
    assert torch.equal(ep.module()(x), m(x))
