"""quantize_dynamic (≙ torch.ao.quantization.quantize_dynamic, same arguments and defaults) and
the default dynamic mapping: float Linear / fused LinearReLU (and the RNN modules, where qplugin
has them) -> qplugin.nn.dynamic. Weights are quantized once (qint8) or stored as float16;
activations are quantized per call by the ops. Nothing here needs torch.ao.
Changes with: qplugin/nn/dynamic (the from_float of every mapped module),
tests/dynamic/test_quantize_dynamic.py.
"""
import copy
import itertools
from typing import Any, Callable, Dict

import torch
from torch import nn

__all__ = ["DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS", "get_default_dynamic_quant_module_mappings",
           "quantize_dynamic"]


def _build_mapping() -> Dict[Callable, Any]:
    from qplugin._ao import classes, torch_ao
    from qplugin.nn import dynamic as qnnd

    mapping: Dict[Callable, Any] = {
        nn.Linear: qnnd.Linear,
        nn.modules.linear.NonDynamicallyQuantizableLinear: qnnd.Linear,
    }
    for cls in classes("intrinsic.LinearReLU"):
        mapping[cls] = qnnd.LinearReLU
    qatd = torch_ao("nn.qat.dynamic")
    if qatd is not None:
        mapping[qatd.Linear] = qnnd.Linear
    for name in ("LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell"):
        if hasattr(qnnd, name):
            mapping[getattr(nn, name)] = getattr(qnnd, name)
    return mapping


DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS = _build_mapping()


def get_default_dynamic_quant_module_mappings() -> Dict[Callable, Any]:
    """A copy of the default float -> qplugin.nn.dynamic module mapping."""
    return copy.copy(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS)


def quantize_dynamic(model: nn.Module, qconfig_spec=None, dtype=torch.qint8, mapping=None,
                     inplace: bool = False) -> nn.Module:
    r"""Replaces Linear (and RNN) submodules by dynamically quantized qplugin.nn.dynamic modules
    (≙ torch.ao.quantization.quantize_dynamic).

    Args:
        model: the float model.
        qconfig_spec: None (every Linear / RNN module with the default dynamic qconfig of
            `dtype`), a set of module types and/or qualified names (same), or a dict mapping
            types or names to QConfigs (then `dtype` is ignored).
        dtype: torch.qint8 (int8 weights, activations quantized per call) or torch.float16
            (float16 weights, fp32 products).
        mapping: float class -> dynamic class (default: DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS).
        inplace: change `model` itself instead of a deep copy.
    """
    from . import convert, propagate_qconfig_
    from .qconfig import default_dynamic_qconfig, float16_dynamic_qconfig

    defaults = {torch.qint8: default_dynamic_qconfig, torch.float16: float16_dynamic_qconfig}
    if qconfig_spec is None or isinstance(qconfig_spec, set):
        if dtype not in defaults:
            raise ValueError("qplugin.quantization.quantize_dynamic: expected dtype torch.qint8 "
                             f"or torch.float16 (or a full qconfig_spec dict), got {dtype}")
        if qconfig_spec is None:
            qconfig_spec = {nn.Linear: defaults[dtype], nn.LSTM: defaults[dtype],
                            nn.GRU: defaults[dtype], nn.LSTMCell: defaults[dtype],
                            nn.RNNCell: defaults[dtype], nn.GRUCell: defaults[dtype]}
        else:
            qconfig_spec = dict(zip(qconfig_spec, itertools.repeat(defaults[dtype])))
    elif not isinstance(qconfig_spec, dict):
        raise TypeError("qplugin.quantization.quantize_dynamic: expected qconfig_spec to be None, "
                        f"a set or a dict, got {type(qconfig_spec).__name__}")
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping, inplace=True)
    return model


# ---------------------------------------------------------------------------------------------
# Migration of torch.ao dynamic models (from_torch_ao's table, qplugin/quantization/_migrate.py):
# the weights are read with the torch.ao modules' own weight() / bias() / _weight_bias(), i.e.
# PyTorch's unpack (a memory copy; no PyTorch kernel runs on the migrated model).


def _migrate_linear(qcls):
    def build(t):
        dtype = t._packed_params.dtype
        w, b = t._weight_bias()
        q = qcls(t.in_features, t.out_features, b is not None, dtype=dtype)
        q.set_weight_bias(w, b)
        q.version = getattr(t, "version", 4)
        return q
    return build


def _migrate_rnn(qcls):
    def build(t):
        q = qcls(t.input_size, t.hidden_size, t.num_layers, t.bias, t.batch_first, t.dropout,
                 t.bidirectional, dtype=t.dtype)
        wb = t._weight_bias()
        D = 2 if t.bidirectional else 1
        for layer in range(t.num_layers):
            for d in range(D):
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                q.set_layer_weights(
                    layer * D + d, wb["weight"]["weight_ih" + sfx], wb["bias"]["bias_ih" + sfx],
                    wb["weight"]["weight_hh" + sfx], wb["bias"]["bias_hh" + sfx])
        return q
    return build


def _migrate_cell(qcls):
    def build(t):
        kw = {"nonlinearity": t.nonlinearity} if qcls.__name__ == "RNNCell" else {}
        q = qcls(t.input_size, t.hidden_size, bias=t.bias, dtype=t.weight_dtype, **kw)
        wb = t._weight_bias()
        q.set_weights(wb["weight"]["weight_ih"], wb["bias"]["bias_ih"], wb["weight"]["weight_hh"],
                      wb["bias"]["bias_hh"])
        return q
    return build


def _register_migrations() -> None:
    from qplugin._ao import torch_ao
    from qplugin.nn import dynamic as qnnd
    from ._migrate import _MIGRATIONS, _conv

    nnqd = torch_ao("nn.quantized.dynamic")
    nniqd = torch_ao("nn.intrinsic.quantized.dynamic")
    if nnqd is None:
        return
    table = {nnqd.Linear: _migrate_linear(qnnd.Linear)}
    if nniqd is not None:
        table[nniqd.LinearReLU] = _migrate_linear(qnnd.LinearReLU)
    for name in ("LSTM", "GRU"):
        table[getattr(nnqd, name)] = _migrate_rnn(getattr(qnnd, name))
    for name in ("LSTMCell", "GRUCell", "RNNCell"):
        table[getattr(nnqd, name)] = _migrate_cell(getattr(qnnd, name))
    # Dynamic convs: the static conv builder (same constructor arguments, weight(), bias()).
    for name in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                 "ConvTranspose3d"):
        if hasattr(nnqd, name):
            table[getattr(nnqd, name)] = _conv(getattr(qnnd, name))
    _MIGRATIONS.update(table)
    DYNAMIC_MIGRATIONS.update(table)


# The torch.ao dynamic classes from_torch_ao migrates (tested in tests/dynamic, not in
# tests/models/test_migration.py, whose cases take quantized inputs).
DYNAMIC_MIGRATIONS: Dict[Callable, Any] = {}
_register_migrations()
