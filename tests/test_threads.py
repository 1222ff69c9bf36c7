# Thread safety and thread-count independence. (1) One shared converted model (ResNetish: convs,
# depthwise, pooling, add, hardswish, linear; TransformerBlock: LayerNorm, Linear, mul, add), eager
# and TorchScript, run concurrently from several Python threads on different inputs: every output
# byte-identical to the single-threaded one. (2) Intra-op threads: torch.set_num_threads(n), n in
# 1..4, give byte-identical results for conv, linear, pooling, elementwise, norm and embedding
# ops (inputs large enough that at::parallel_for splits them). The C++ loader's --threads-run is
# tested in tests/test_cpp_loader.py. Changes with: tests/models/_models.py.
import threading

import pytest
import torch

from _models import ResNetish, TransformerBlock, prepared, qplugin_convert  # noqa: E402
from _reference import assert_bytes_equal  # noqa: E402
from _sweeps import make_q  # noqa: E402

Q = torch.ops.qplugin
N_THREADS = 4
ITERS = 6
MODELS = {"resnetish": ResNetish, "transformer": TransformerBlock}


@pytest.fixture(scope="module")
def converted():
    """{name: (eager model, scripted model, inputs)}: converted once, shared by every test."""
    out = {}
    for name, cls in MODELS.items():
        m = qplugin_convert(prepared(cls)).eval()
        inputs = [cls.example_input(seed=1000 + i) for i in range(N_THREADS)]
        out[name] = (m, torch.jit.script(m), inputs)
    return out


def _run_concurrently(fn, inputs, expected):
    """N_THREADS Python threads, thread i runs fn(inputs[(i + j) % n]) ITERS times (so threads
    overlap on the same and on different inputs); returns the list of mismatches/errors."""
    barrier = threading.Barrier(len(inputs))
    errors = []

    def worker(i):
        try:
            barrier.wait()
            for j in range(ITERS):
                k = (i + j) % len(inputs)
                with torch.no_grad():
                    y = fn(inputs[k])
                if not torch.equal(y, expected[k]):
                    errors.append(f"thread {i} iteration {j} input {k}: max |diff| "
                                  f"{(y - expected[k]).abs().max().item()}")
        except Exception as e:  # noqa: BLE001 - reported below, with the thread
            errors.append(f"thread {i}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"
    return errors


@pytest.mark.parametrize("scripted", [False, True], ids=["eager", "torchscript"])
@pytest.mark.parametrize("name", list(MODELS))
def test_shared_model_from_many_python_threads(converted, name, scripted):
    eager, script, inputs = converted[name]
    model = script if scripted else eager
    with torch.no_grad():
        expected = [model(x) for x in inputs]
    # Different inputs give different outputs: a thread reading another's buffers would show.
    assert not torch.equal(expected[0], expected[1])
    prev = torch.get_num_threads()
    for intra in (1, 2):  # with and without intra-op parallelism inside each call
        torch.set_num_threads(intra)
        try:
            errors = _run_concurrently(model, inputs, expected)
        finally:
            torch.set_num_threads(prev)
        assert not errors, f"{name} ({'scripted' if scripted else 'eager'}, intra-op threads " \
                           f"{intra}): " + "; ".join(errors[:5])


def test_eager_and_scripted_agree(converted):
    for name, (eager, script, inputs) in converted.items():
        with torch.no_grad():
            assert torch.equal(eager(inputs[0]), script(inputs[0])), name


# ---------------------------------------------------------------------------------------------
# Intra-op thread counts.


def _q(shape, dtype, scale, zp, seed, channels_last=False):
    g = torch.Generator().manual_seed(seed)
    lo, hi = (0, 255) if dtype == torch.quint8 else (-128, 127)
    q = make_q(torch.randint(lo, hi + 1, shape, generator=g), scale, zp, dtype)
    if channels_last:
        q = q.contiguous(memory_format=torch.channels_last if len(shape) == 4
                         else torch.channels_last_3d)
    return q


def _wq(shape, seed, per_channel_axis=None):
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(-128, 128, shape, generator=g, dtype=torch.int8)
    if per_channel_axis is None:
        return torch._make_per_tensor_quantized_tensor(codes, 0.004, 0)
    n = shape[per_channel_axis]
    scales = torch.rand(n, generator=g, dtype=torch.float64) * 0.004 + 0.001
    return torch._make_per_channel_quantized_tensor(codes, scales, torch.zeros(n, dtype=torch.long),
                                                    per_channel_axis)


def _bias(n, seed):
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


def _cases():
    """{name: fn() -> tensor}: each op on an input big enough to be split over 4 threads."""
    x4 = _q((2, 32, 28, 28), torch.quint8, 0.05, 100, 1)
    x4cl = x4.contiguous(memory_format=torch.channels_last)
    x1 = _q((1, 64, 20, 20), torch.quint8, 0.05, 7, 2)
    x5 = _q((2, 16, 8, 12, 12), torch.quint8, 0.03, 130, 3, channels_last=True)
    xs8 = _q((4, 48, 30, 30), torch.qint8, 0.02, -3, 4)
    w2 = _wq((48, 32, 3, 3), 5, per_channel_axis=0)
    wdw = _wq((64, 1, 3, 3), 6)
    w3 = _wq((24, 16, 3, 3, 3), 7, per_channel_axis=0)
    wt = _wq((32, 16, 4, 4), 8)
    wl = _wq((300, 512), 9, per_channel_axis=0)
    xl = _q((200, 512), torch.quint8, 0.02, 128, 10)
    xl1 = _q((1, 512), torch.quint8, 0.02, 128, 11)
    ln = _q((64, 3, 768), torch.quint8, 0.05, 120, 12)
    emb_w = torch.randn(2000, 64, generator=torch.Generator().manual_seed(13))
    emb8 = Q.embedding_bag_byte_prepack(emb_w)
    emb4 = Q.embedding_bag_4bit_prepack(emb_w)
    g = torch.Generator().manual_seed(14)
    idx = torch.randint(0, 2000, (4000,), generator=g)
    offs = torch.arange(0, 4000, 10)
    xsm = _q((1, 64, 6, 6), torch.quint8, 0.05, 100, 16, channels_last=True)
    xsm1 = _q((1, 128, 7, 7), torch.quint8, 0.05, 100, 17, channels_last=True)
    gn_w, gn_b = torch.rand(48, generator=g) + 0.5, torch.randn(48, generator=g)
    ln_w, ln_b = torch.rand(768, generator=g) + 0.5, torch.randn(768, generator=g) * 0.1
    return {
        "conv2d_nchw": lambda: Q.conv2d(x4, Q.conv2d_prepack(w2[:, :32], _bias(48, 1), [1, 1],
                                                               [1, 1], [1, 1], 1), 0.3, 60),
        "conv2d_nhwc_relu": lambda: Q.conv2d_relu(
            x4cl, Q.conv2d_prepack(w2[:, :32], None, [2, 2], [1, 1], [1, 1], 1), 0.2, 10),
        "conv2d_depthwise_batch1": lambda: Q.conv2d(
            x1, Q.conv2d_prepack(wdw, _bias(64, 2), [1, 1], [1, 1], [1, 1], 64), 0.1, 128),
        "conv2d_groups": lambda: Q.conv2d(
            x4, Q.conv2d_prepack(_wq((32, 8, 3, 3), 15), None, [1, 1], [0, 0], [2, 2], 4),
            0.2, 128),
        # Fewer output pixels than channels (the columns split over the threads, not the rows):
        # the implicit GEMM (3x3) and the direct one (1x1).
        "conv2d_small_plane_wide": lambda: Q.conv2d(
            xsm, Q.conv2d_prepack(_wq((256, 64, 3, 3), 18, per_channel_axis=0), _bias(256, 6),
                                  [1, 1], [1, 1], [1, 1], 1), 0.3, 128),
        "conv2d_1x1_small_plane_wide": lambda: Q.conv2d(
            xsm1, Q.conv2d_prepack(_wq((512, 128, 1, 1), 19, per_channel_axis=0), None,
                                   [1, 1], [0, 0], [1, 1], 1), 0.3, 128),
        "conv3d": lambda: Q.conv3d(x5, Q.conv3d_prepack(w3, _bias(24, 3), [1, 1, 1], [1, 1, 1],
                                                        [1, 1, 1], 1), 0.3, 128),
        "conv_transpose2d": lambda: Q.conv_transpose2d(
            x4, Q.conv_transpose2d_prepack(wt, _bias(16, 4), [2, 2], [1, 1], [0, 0], [1, 1], 1),
            0.2, 128),
        "linear": lambda: Q.linear(xl, Q.linear_prepack(wl, _bias(300, 5)), 0.5, 128),
        "linear_relu_batch1": lambda: Q.linear_relu(xl1, Q.linear_prepack(wl, None), 0.5, 20),
        "max_pool2d": lambda: Q.max_pool2d(x4, [3, 3], [2, 2], [1, 1], [1, 1], False),
        "max_pool2d_nhwc": lambda: Q.max_pool2d(x4cl, [2, 2], [2, 2], [0, 0], [1, 1], True),
        "avg_pool2d": lambda: Q.avg_pool2d(x4, [3, 3], [1, 1], [1, 1]),
        "avg_pool3d_nhwc": lambda: Q.avg_pool3d(x5, [2, 2, 2], [2, 2, 2], [0, 0, 0]),
        "adaptive_avg_pool2d": lambda: Q.adaptive_avg_pool2d(x4, [7, 5]),
        "adaptive_avg_pool2d_nhwc": lambda: Q.adaptive_avg_pool2d(x4cl, [1, 1]),
        "upsample_bilinear2d": lambda: Q.upsample_bilinear2d(x4cl, [45, 61], False, None, None),
        "upsample_nearest2d": lambda: Q.upsample_nearest2d(x4, [56, 40], None, None),
        "add": lambda: Q.add(x4, x4cl[:, :, :, :].flip(3).contiguous(), 0.07, 90),
        "add_relu_broadcast": lambda: Q.add_relu(x4, x4[:, :, :1], 0.09, 30),
        "mul": lambda: Q.mul(xs8, xs8.flip(0).contiguous(), 0.01, 0),
        "cat_requant": lambda: Q.cat([x4, x4cl], 1, 0.06, 100),
        "layer_norm": lambda: Q.layer_norm(ln, [768], ln_w, ln_b, 1e-5, 0.03, 128),
        "group_norm": lambda: Q.group_norm(xs8, 6, gn_w, gn_b, 1e-5, 0.04, 0),
        "instance_norm": lambda: Q.instance_norm(x4, None, None, 1e-5, 0.03, 128),
        "embedding_bag_byte_sum": lambda: Q.embedding_bag_byte_rowwise_offsets(
            emb8, idx, offs, False, 0),
        "embedding_bag_4bit_mean": lambda: Q.embedding_bag_4bit_rowwise_offsets(
            emb4, idx, offs, False, 1),
    }


CASES = _cases()


@pytest.mark.parametrize("name", list(CASES))
def test_intra_op_thread_counts_give_identical_bytes(name):
    fn = CASES[name]
    prev = torch.get_num_threads()
    outs = {}
    try:
        for n in (1, 2, 3, 4):
            torch.set_num_threads(n)
            assert torch.get_num_threads() == n
            outs[n] = fn()
    finally:
        torch.set_num_threads(prev)
    assert torch.get_num_threads() == prev
    for n in (2, 3, 4):
        if outs[1].is_quantized:
            assert_bytes_equal(outs[n], outs[1], msg=f"{name}: {n} threads vs 1")
        else:
            assert outs[n].stride() == outs[1].stride(), f"{name}: strides, {n} threads vs 1"
            assert torch.equal(outs[n].view(torch.int32), outs[1].view(torch.int32)), (
                f"{name}: {n} threads vs 1 not bit-identical")
