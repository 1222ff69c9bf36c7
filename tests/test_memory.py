# Memory stays flat: resident set size (/proc/self/statm) over 10,000 forwards of a small converted
# model, and over repeated prepack / unpack / __getstate__ / __setstate__ / state_dict round trips
# of the linear, conv, transposed-conv and embedding packed params. Warm up first (allocator
# arenas, one-time kernel tables, TorchScript profiling), then measure growth.
# Changes with: csrc/packed/*, tests/models/_models.py.
import copy
import gc
import os
import sys

import pytest
import torch

from _models import ResNetish, TransformerBlock, prepared, qplugin_convert  # noqa: E402
from _reference import one_thread  # noqa: E402,F401  (the autouse fixture)

import qplugin.nn as qnn  # noqa: E402

Q = torch.ops.qplugin
PAGE = os.sysconf("SC_PAGE_SIZE")

# Growth bound. Steady-state growth measured here: 0.00-0.12 MiB (NOTES_robust.md); keeping one
# 1x6x32 fp32 output per forward grows 11.9 MiB, one packed 64x128 linear per trip 15.7 MiB.
# 4 MiB over 10,000 forwards catches any leak of >= 420 bytes per forward --
# smaller than one leaked TensorImpl + StorageImpl pair, and than every intermediate activation of
# the models below (the smallest, ResNetish's 1x32 pooled vector, is 32 bytes of data plus ~400 of
# tensor bookkeeping). For the packed-param loops (ROUND_TRIPS iterations, each packing a weight
# of >= 8 KiB), it catches a leak of any packed or unpacked copy and of >= 2.1 KiB of bookkeeping
# per trip. One intra-op thread: fast (no OpenMP spinning on a shared machine) and the same code.
MAX_GROWTH = 4 * 1024 * 1024
FORWARDS = 10_000
ROUND_TRIPS = 2_000
if not sys.platform.startswith("linux"):
    pytest.skip("reads /proc/self/statm", allow_module_level=True)


def rss():
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def _growth(step, n, warmup):
    for i in range(warmup):
        step(i)
    before = rss()
    for i in range(n):
        step(i)
    return rss() - before


def _mb(b):
    return f"{b / 2**20:.2f} MiB"


# ResNetish (conv, depthwise, pooling, add, hardswish, linear) scripted, TransformerBlock
# (LayerNorm, Linear, mul, add) eager: both models, both front ends, in CI time.
@pytest.mark.parametrize("cls,scripted", [(ResNetish, True), (TransformerBlock, False)],
                         ids=["resnetish-torchscript", "transformer-eager"])
def test_forwards_keep_rss_flat(cls, scripted, batch=1):
    model = qplugin_convert(prepared(cls)).eval()
    if scripted:
        model = torch.jit.script(model)
    x = cls.example_input(batch=batch, seed=7)
    with torch.no_grad():
        expected = model(x)

        def step(i):
            y = model(x)
            if i % 1000 == 0:
                assert torch.equal(y, expected)

        grew = _growth(step, FORWARDS, warmup=500)
    print(f"RSS growth over {FORWARDS} forwards: {_mb(grew)}")
    assert grew <= MAX_GROWTH, f"RSS grew {_mb(grew)} over {FORWARDS} forwards (bound " \
                               f"{_mb(MAX_GROWTH)})"


# ---------------------------------------------------------------------------------------------
# Packed params.


def _qweight(shape, seed, per_channel=True, axis=0):
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(-128, 128, shape, generator=g, dtype=torch.int8)
    if not per_channel:
        return torch._make_per_tensor_quantized_tensor(codes, 0.01, 0)
    n = shape[axis]
    return torch._make_per_channel_quantized_tensor(
        codes, torch.rand(n, generator=g, dtype=torch.float64) * 0.01 + 0.001,
        torch.zeros(n, dtype=torch.long), axis)


def _roundtrip(prepack, unpack, module):
    """One trip: prepack, unpack, the torchbind __getstate__ / __setstate__ on a second object,
    copy.deepcopy (pickling), and a state_dict / load_state_dict round trip of a module holding
    the same kind of packed params."""
    other = prepack()

    def step(i):
        p = prepack()
        w = unpack(p)
        state = p._get_method("__getstate__")()
        other._get_method("__setstate__")(state)
        p2 = copy.deepcopy(p)
        module.load_state_dict(module.state_dict())
        if i % 500 == 0:
            assert torch.equal(unpack(other).int_repr(), w.int_repr())
            assert torch.equal(unpack(p2).int_repr(), w.int_repr())
    return step


def _first(f):
    return lambda p: f(p)[0]


def _linear_case():
    w = _qweight((64, 128), 1)  # 8 KiB
    b = torch.randn(64)
    return _roundtrip(lambda: Q.linear_prepack(w, b), _first(Q.linear_unpack),
                      qnn.Linear(128, 64))


def _conv_case():
    w = _qweight((32, 32, 3, 3), 2)  # 9 KiB
    b = torch.randn(32)
    return _roundtrip(lambda: Q.conv2d_prepack(w, b, [1, 1], [1, 1], [1, 1], 1),
                      _first(Q.conv2d_unpack), qnn.Conv2d(32, 32, 3))


def _conv_transpose_case():
    w = _qweight((32, 32, 3, 3), 3, per_channel=False)  # 9 KiB
    return _roundtrip(lambda: Q.conv_transpose2d_prepack(w, None, [2, 2], [1, 1], [0, 0], [1, 1],
                                                         1), _first(Q.conv_transpose2d_unpack),
                      qnn.ConvTranspose2d(32, 32, 3))


def _embedding_case():
    from torch.ao.quantization import float_qparams_weight_only_qconfig
    torch.manual_seed(4)
    fb = torch.nn.EmbeddingBag(256, 32, mode="sum")  # 8 KiB of codes
    fb.qconfig = float_qparams_weight_only_qconfig
    m = qnn.EmbeddingBag.from_float(fb)
    w = m.weight()
    return _roundtrip(lambda: Q.embedding_bag_prepack(w), Q.embedding_bag_unpack, m)


CASES = {"linear": _linear_case, "conv2d": _conv_case, "conv_transpose2d": _conv_transpose_case,
         "embedding": _embedding_case}


@pytest.mark.parametrize("name", list(CASES))
def test_packed_params_round_trips_keep_rss_flat(name):
    step = CASES[name]()
    grew = _growth(step, ROUND_TRIPS, warmup=200)
    print(f"{name}: RSS growth over {ROUND_TRIPS} round trips: {_mb(grew)}")
    assert grew <= MAX_GROWTH, f"{name}: RSS grew {_mb(grew)} over {ROUND_TRIPS} round trips " \
                               f"(bound {_mb(MAX_GROWTH)})"
