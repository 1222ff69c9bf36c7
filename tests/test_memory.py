# Memory stays flat: resident set size (/proc/self/statm) over 10,000 forwards of a small converted
# model, and over repeated prepack / unpack / __getstate__ / __setstate__ / state_dict round trips
# of the linear, conv, transposed-conv and embedding packed params. Warm up first (allocator
# arenas, one-time kernel tables, TorchScript profiling), then measure growth.
# Changes with: csrc/packed/*, tests/models/_models.py.
import gc
import io
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "models"))

from _models import ResNetish, TransformerBlock, prepared, qplugin_convert  # noqa: E402

import qplugin.nn as qnn  # noqa: E402

Q = torch.ops.qplugin
PAGE = os.sysconf("SC_PAGE_SIZE")

# Growth bound. Steady-state allocator noise here is well under 1 MB (measured: see
# NOTES_robust.md); 4 MiB over 10,000 forwards catches any leak of >= 420 bytes per forward --
# smaller than one leaked TensorImpl + StorageImpl pair, and than every intermediate activation of
# the models below (the smallest, ResNetish's 1x32 pooled vector, is 32 bytes of data plus ~400 of
# tensor bookkeeping). For the packed-param loops (ROUND_TRIPS iterations, each packing a weight
# of >= 32 KiB), it catches a leak of any packed copy and of >= 1.4 KiB of bookkeeping per trip.
MAX_GROWTH = 4 * 1024 * 1024
FORWARDS = 10_000
ROUND_TRIPS = 3_000
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


@pytest.mark.parametrize("cls,batch", [(ResNetish, 1), (TransformerBlock, 1)],
                         ids=["resnetish", "transformer"])
@pytest.mark.parametrize("scripted", [False, True], ids=["eager", "torchscript"])
def test_forwards_keep_rss_flat(cls, batch, scripted):
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
    """One trip: prepack, unpack, __getstate__ / __setstate__, pickling (torch.save / load) of
    the packed object, and a state_dict / load_state_dict round trip of a module holding one."""
    def step(i):
        p = prepack()
        w = unpack(p)
        state = p.__getstate__()
        p.__setstate__(state)
        buf = io.BytesIO()
        torch.save(p, buf)
        buf.seek(0)
        p2 = torch.load(buf, weights_only=False)
        module.load_state_dict(module.state_dict())
        if i % 500 == 0:
            w2 = unpack(p2)
            assert torch.equal(w2.int_repr(), w.int_repr())
        return p2
    return step


def _first(f):
    return lambda p: f(p)[0]


def _linear_case():
    w = _qweight((128, 256), 1)  # 32 KiB
    b = torch.randn(128)
    return _roundtrip(lambda: Q.linear_prepack(w, b), _first(Q.linear_unpack),
                      qnn.Linear(256, 128))


def _conv_case():
    w = _qweight((64, 64, 3, 3), 2)  # 36 KiB
    b = torch.randn(64)
    return _roundtrip(lambda: Q.conv2d_prepack(w, b, [1, 1], [1, 1], [1, 1], 1),
                      _first(Q.conv2d_unpack), qnn.Conv2d(64, 64, 3))


def _conv_transpose_case():
    w = _qweight((64, 64, 3, 3), 3, per_channel=False)  # 36 KiB
    return _roundtrip(lambda: Q.conv_transpose2d_prepack(w, None, [2, 2], [1, 1], [0, 0], [1, 1],
                                                         1), _first(Q.conv_transpose2d_unpack),
                      qnn.ConvTranspose2d(64, 64, 3))


def _embedding_case():
    from torch.ao.quantization import float_qparams_weight_only_qconfig
    torch.manual_seed(4)
    fb = torch.nn.EmbeddingBag(512, 64, mode="sum")  # 32 KiB of codes
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
    assert grew <= MAX_GROWTH, f"{name}: RSS grew {_mb(grew)} over {ROUND_TRIPS} round trips " \
                               f"(bound {_mb(MAX_GROWTH)})"
