# Fake kernels of the dynamic ops (qplugin/_meta_dynamic.py): torch.library.opcheck's FakeTensor,
# AOT-dispatch and autograd-registration tests for the linear ops. test_schema is not run: it
# fails inside PyTorch on any torchbind argument ("'__len__' is not implemented for
# __torch__.torch.classes..."). The RNN layer ops take two packed objects, which opcheck's
# repeated FakeTensor calls compare in its dispatch cache ("'__eq__' is not implemented"): they
# are checked by running the fake kernel under FakeTensorMode against the real op.
from torch._subclasses.fake_tensor import FakeTensorMode
import pytest
import torch

ops = torch.ops.qplugin
UTILS = ("test_faketensor", "test_aot_dispatch_dynamic", "test_autograd_registration")
# torch 2.14's AOT-dispatch check compares the torchbind arguments with __eq__, which the
# packed-params classes do not have until they get fake classes (#15, docs/pt2.md): on 2.14 that
# one check is not run for the linear ops; the FakeTensor and autograd checks still are.
if torch.__version__ >= "2.14":
    UTILS = tuple(u for u in UTILS if u != "test_aot_dispatch_dynamic")


def _int8(N, K):
    return ops.linear_prepack(torch.quantize_per_tensor(torch.randn(N, K), 0.05, 0, torch.qint8),
                              torch.randn(N))


def sample_inputs():
    p = _int8(8, 16)
    pf = ops.linear_prepack_fp16(torch.randn(8, 16), torch.randn(8))
    x = torch.randn(3, 5, 16)
    yield ops.linear_dynamic.default, (x, p, True)
    yield ops.linear_relu_dynamic.default, (x, p, False)
    yield ops.linear_dynamic_fp16.default, (x, pf)
    yield ops.linear_relu_dynamic_fp16.default, (x, pf)
    H, I = 6, 5
    w_ih4, w_hh4 = _int8(4 * H, I), _int8(4 * H, H)
    w_ih3, w_hh3 = _int8(3 * H, I), _int8(3 * H, H)
    xs, h0, c0 = torch.randn(7, 2, I), torch.randn(2, H), torch.randn(2, H)
    yield ops.quantized_lstm_layer_dynamic.default, (xs, None, h0, c0, w_ih4, w_hh4, False, True)
    yield ops.quantized_gru_layer_dynamic.default, (xs, None, h0, w_ih3, w_hh3, True, True)
    packed = torch.randn(6, I)
    bs = torch.tensor([2, 2, 1, 1])
    yield ops.quantized_lstm_layer_dynamic.default, (packed, bs, h0, c0, w_ih4, w_hh4, True, True)
    f_ih4, f_hh4 = (ops.linear_prepack_fp16(torch.randn(4 * H, n), torch.randn(4 * H))
                    for n in (I, H))
    f_ih3, f_hh3 = (ops.linear_prepack_fp16(torch.randn(3 * H, n), torch.randn(3 * H))
                    for n in (I, H))
    yield ops.quantized_lstm_layer_dynamic_fp16.default, (xs, None, h0, c0, f_ih4, f_hh4, False)
    yield ops.quantized_gru_layer_dynamic_fp16.default, (xs, None, h0, f_ih3, f_hh3, True)
    yield ops.quantized_lstm_layer_dynamic_fp16.default, (packed, bs, h0, c0, f_ih4, f_hh4, True)


@pytest.mark.parametrize("case", range(4))
def test_opcheck_linear(case):
    op, args = list(sample_inputs())[case]
    torch.library.opcheck(op, args, test_utils=UTILS)


@pytest.mark.parametrize("case", range(4, 10))
def test_fake_rnn_layers(case):
    op, args = list(sample_inputs())[case]
    real = op(*args)
    with FakeTensorMode() as mode:
        fargs = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        fake = op(*fargs)
    assert len(fake) == len(real)
    for f, r in zip(fake, real):
        assert f.shape == r.shape and f.dtype == r.dtype
