"""qplugin.nn Conv*/ConvTranspose*/intrinsic ConvReLU* modules and functional conv*: from_float via
torch.ao prepare/convert (incl. fused ConvReLU, ConvBn folded), state_dict round trip, deepcopy,
TorchScript save/load, padding_mode extension vs the float reference, repr/_get_name, schemas."""
from _conv_common import (  # noqa: E402,F401  (tests/conv/_conv_common.py)
    ISAS, START_ISA, F, assert_qclose, exact, make, pytest, qplugin, torch, warnings)
import copy  # noqa: E402
import io  # noqa: E402

import torch.ao.nn.quantized as nnq  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402

import qplugin.nn.modules.conv as qconv  # noqa: E402
from qplugin.nn._functional_conv import conv1d, conv2d, conv3d  # noqa: E402
from qplugin.nn.intrinsic.modules.conv_relu import ConvReLU2d  # noqa: E402
from _reference import module_oracle  # noqa: E402


def _observed(mod, x):
    mod.eval()
    mod.qconfig = tq.get_default_qconfig("x86")
    m = tq.prepare(torch.nn.Sequential(tq.QuantStub(), mod, tq.DeQuantStub()))
    m(x)
    return m[1]


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_from_float_matches_torch_ao(dim):
    torch.manual_seed(0)
    fm = getattr(torch.nn, f"Conv{dim}d")(6, 8, 3, padding=1, stride=2)
    x = torch.randn(2, 6, *([7] * dim))
    obs = _observed(fm, x)
    q = getattr(qconv, f"Conv{dim}d").from_float(obs)
    t = getattr(nnq, f"Conv{dim}d").from_float(obs)
    xq = torch.quantize_per_tensor(x, 0.05, 128, torch.quint8)
    # torch.ao's module where it is a valid oracle here, else the exact reference (its AVX2
    # kernels saturate on wide-range activations: tests/_reference.py gemm_oracle).
    assert_qclose(q(xq), module_oracle(t, xq).int())
    assert q._get_name() == f"QuantizedConv{dim}d"
    # state_dict loads into both directions
    t2 = getattr(nnq, f"Conv{dim}d")(6, 8, 3, padding=1, stride=2)
    t2.load_state_dict(q.state_dict())
    assert torch.equal(t2(xq).int_repr(), t(xq).int_repr())
    q2 = getattr(qconv, f"Conv{dim}d")(6, 8, 3, padding=1, stride=2)
    q2.load_state_dict(t.state_dict())
    assert torch.equal(q2(xq).int_repr(), q(xq).int_repr())
    assert torch.equal(copy.deepcopy(q)(xq).int_repr(), q(xq).int_repr())
    s = torch.jit.script(q)
    buf = io.BytesIO()
    torch.jit.save(s, buf)
    buf.seek(0)
    assert torch.equal(torch.jit.load(buf)(xq).int_repr(), q(xq).int_repr())


def test_fused_relu_and_bn():
    import torch.ao.nn.intrinsic as nni
    torch.manual_seed(0)
    conv, bn = torch.nn.Conv2d(4, 8, 3, padding=1), torch.nn.BatchNorm2d(8)
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.5, 2)
    fused = tq.fuse_modules(torch.nn.Sequential(conv, bn, torch.nn.ReLU()).eval(),
                            [["0", "1", "2"]])
    assert isinstance(fused[0], nni.ConvReLU2d)
    x = torch.randn(1, 4, 9, 9)
    obs = _observed(fused[0], x)
    q = ConvReLU2d.from_float(obs)
    from torch.ao.nn.intrinsic.quantized import ConvReLU2d as TConvReLU2d
    t = TConvReLU2d.from_float(obs)
    xq = torch.quantize_per_tensor(x, 0.05, 128, torch.quint8)
    # torch.ao's module where it is a valid oracle here, else the exact reference (its AVX2
    # kernels saturate on wide-range activations: tests/_reference.py gemm_oracle).
    assert_qclose(q(xq), module_oracle(t, xq).int())
    assert q._get_name() == "QuantizedConvReLU2d"


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_conv_transpose_module(dim):
    torch.manual_seed(0)
    m = getattr(qconv, f"ConvTranspose{dim}d")(4, 6, 3, stride=2, padding=1, output_padding=1)
    w = torch.quantize_per_tensor(torch.randn(4, 6, *([3] * dim)) * 0.1, 0.002, 0, torch.qint8)
    b = torch.randn(6)
    m.set_weight_bias(w, b)
    m.scale, m.zero_point = 0.05, 100
    x = torch.quantize_per_tensor(torch.rand(1, 4, *([5] * dim)), 0.02, 3, torch.quint8)
    ref = exact(getattr(F, f"conv_transpose{dim}d"), x, w, b, 0.05, 100, stride=2, padding=1,
                output_padding=1)
    assert_qclose(m(x), ref)
    m2 = getattr(qconv, f"ConvTranspose{dim}d")(4, 6, 3, stride=2, padding=1, output_padding=1)
    m2.load_state_dict(m.state_dict())
    assert torch.equal(m2(x).int_repr(), m(x).int_repr())


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_padding_modes(mode):
    x, w, b = make(2, 1, 4, 6, 8, 3, 1)
    y = conv2d(x, w, b, padding=2, padding_mode=mode, scale=0.05, zero_point=100)
    xf = F.pad(x.dequantize().double(), [2, 2, 2, 2], mode=mode)
    ref = exact(F.conv2d, torch.quantize_per_tensor(xf.float(), 0.02, 128, torch.quint8), w, b,
                0.05, 100)
    assert_qclose(y, ref)
    m = qconv.Conv2d(4, 6, 3, padding=2, padding_mode=mode)
    m.set_weight_bias(w, b)
    m.scale, m.zero_point = 0.05, 100
    assert torch.equal(m(x).int_repr(), y.int_repr())


def test_functional_doc_examples():
    # torch.ao.nn.quantized.functional docs (conv1d/2d/3d examples)
    filters = torch.randn(33, 16, 3, dtype=torch.float)
    inputs = torch.randn(20, 16, 50, dtype=torch.float)
    bias = torch.randn(33, dtype=torch.float)
    s, zp = 1.0, 0
    qf = torch.quantize_per_tensor(filters, s, zp, torch.qint8)
    qi = torch.quantize_per_tensor(inputs, s, zp, torch.quint8)
    import torch.ao.nn.quantized.functional as tqF
    assert_qclose(conv1d(qi, qf, bias, padding=1, scale=s, zero_point=zp),
                 tqF.conv1d(qi, qf, bias, padding=1, scale=s, zero_point=zp).int_repr().int())
    qf = torch.quantize_per_tensor(torch.randn(8, 4, 3, 3), s, zp, torch.qint8)
    qi = torch.quantize_per_tensor(torch.randn(1, 4, 5, 5), s, zp, torch.quint8)
    b = torch.randn(8)
    assert_qclose(conv2d(qi, qf, b, padding=1, scale=s, zero_point=zp),
                 tqF.conv2d(qi, qf, b, padding=1, scale=s, zero_point=zp).int_repr().int())
    qf = torch.quantize_per_tensor(torch.randn(8, 4, 3, 3, 3), s, zp, torch.qint8)
    qi = torch.quantize_per_tensor(torch.randn(1, 4, 5, 5, 5), s, zp, torch.quint8)
    assert_qclose(conv3d(qi, qf, b, padding=1, scale=s, zero_point=zp),
                 tqF.conv3d(qi, qf, b, padding=1, scale=s, zero_point=zp).int_repr().int())
    with pytest.raises(ValueError, match="quint8 input"):
        conv2d(qi.dequantize()[..., 0], qf, b)


def test_schemas_mirror_torch():
    for name in ["conv1d", "conv2d.new", "conv2d_relu.new", "conv3d.new", "conv_transpose2d",
                 "conv2d_prepack", "conv_transpose3d_prepack", "conv1d_unpack"]:
        base, _, ov = name.partition(".")
        ov = ov or "default"
        a = str(getattr(getattr(torch.ops.qplugin, base), ov)._schema)
        t = str(getattr(getattr(torch.ops.quantized, base), ov)._schema)
        norm = (lambda s: s.split("::", 1)[1].replace("qplugin.", "").replace("quantized.", "")
                .replace("PackedParamsBase", "PackedParams"))
        assert norm(a) == norm(t), (a, t)
