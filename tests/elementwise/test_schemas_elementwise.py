"""Pins the schemas of the elementwise ops: the mirrors of torch.ops.quantized must have exactly
PyTorch's schema (name swap only), every overload included; the extensions are pinned here.
Schemas: csrc/ops/elementwise.cpp, csrc/ops/activation_ext.cpp.
"""
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import pytest  # noqa: E402
import torch  # noqa: E402

import qplugin  # noqa: E402,F401

MIRRORED = [
    "add", "add_relu", "mul", "mul_relu", "add_out", "add_relu_out", "mul_out", "mul_relu_out",
    "add_scalar", "add_scalar_relu", "add_scalar_out", "add_scalar_relu_out",
    "mul_scalar", "mul_scalar_relu", "mul_scalar_out", "mul_scalar_relu_out",
    "cat", "cat_relu", "cat_out", "cat_relu_out",
    "leaky_relu", "sigmoid", "celu", "threshold", "clamp", "softmax",
]

EXTENSIONS = {
    "hardsigmoid": "qplugin::hardsigmoid(Tensor qx, float? output_scale=None, "
                   "int? output_zero_point=None) -> Tensor",
    "tanh": "qplugin::tanh(Tensor qx, float? output_scale=None, int? output_zero_point=None)"
            " -> Tensor",
    "gelu": "qplugin::gelu(Tensor qx, float? output_scale=None, int? output_zero_point=None, "
            "str approximate=\"none\") -> Tensor",
    "silu": "qplugin::silu(Tensor qx, float output_scale, int output_zero_point) -> Tensor",
    "mish": "qplugin::mish(Tensor qx, float output_scale, int output_zero_point) -> Tensor",
    "softplus": "qplugin::softplus(Tensor qx, float output_scale, int output_zero_point, "
                "Scalar beta=1, Scalar threshold=20) -> Tensor",
}


def _schemas(ns, name):
    packet = getattr(getattr(torch.ops, ns), name)
    return {o: str(getattr(packet, o)._schema) for o in packet.overloads()}


@pytest.mark.parametrize("name", MIRRORED)
def test_mirrors_pytorch_schema(name):
    ours = _schemas("qplugin", name)
    theirs = {o: s.replace("quantized::", "qplugin::", 1)
              for o, s in _schemas("quantized", name).items()}
    assert ours == theirs


@pytest.mark.parametrize("name", list(EXTENSIONS))
def test_extension_schema(name):
    assert _schemas("qplugin", name) == {"default": EXTENSIONS[name]}
