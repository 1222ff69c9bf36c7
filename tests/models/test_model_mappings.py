"""qplugin.quantization.DEFAULT_MODULE_MAPPING against torch.ao's own mappings (every class
torch converts is covered, or listed below as a known gap with the reason), the extension for
non-QAT fused ConvBn*/ConvBnReLU*/LinearBn1d, and user mappings (extend / override).
"""
import copy

import pytest
import torch

from _block_torch_ao import skip_module_if_blocked

skip_module_if_blocked()
import torch.ao.nn.intrinsic as nni
import torch.ao.quantization as tq
from torch import nn
from torch.ao.quantization import quantization_mappings as tqm

import qplugin.quantization as qq
from qplugin import nn as qnn
from qplugin.nn import intrinsic as qnni

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

# Keys of torch.ao's DEFAULT_STATIC_QUANT_MODULE_MAPPINGS that qplugin does not map, and why.
KNOWN_GAPS = {}
if not hasattr(qnn, "Embedding"):
    KNOWN_GAPS[nn.Embedding] = "qplugin.nn.Embedding arrives with issue #8"
if not hasattr(qnn, "EmbeddingBag"):
    KNOWN_GAPS[nn.EmbeddingBag] = "qplugin.nn.EmbeddingBag arrives with issue #8"


def test_public_name_and_alias():
    assert qq.DEFAULT_MODULE_MAPPING is qq.DEFAULT_STATIC_QUANT_MODULE_MAPPINGS
    copy_ = qq.get_default_static_quant_module_mappings()
    assert copy_ == qq.DEFAULT_MODULE_MAPPING and copy_ is not qq.DEFAULT_MODULE_MAPPING
    for name in ("DEFAULT_MODULE_MAPPING", "quantize", "quantize_qat", "from_torch_ao",
                 "load_torch_ao_state_dict", "get_default_torch_ao_migrations"):
        assert name in qq.__all__ and hasattr(qq, name)


def test_covers_torch_static_mapping():
    ours = qq.DEFAULT_MODULE_MAPPING
    uncovered = {k.__name__ for k in tqm.DEFAULT_STATIC_QUANT_MODULE_MAPPINGS
                 if k not in ours and k not in KNOWN_GAPS}
    assert uncovered == set()
    # The gap list is honest: nothing in it is mapped.
    assert [k.__name__ for k in KNOWN_GAPS if k in ours] == []
    # Same target as torch's, by name (torch.ao.nn.quantized.X -> qplugin.nn.X).
    for k, v in tqm.DEFAULT_STATIC_QUANT_MODULE_MAPPINGS.items():
        if k in ours:
            assert ours[k].__name__ == v.__name__, k


def test_covers_torch_qat_mapping():
    """Everything prepare_qat can produce is converted (the QAT classes), and so are the float
    fused classes the QAT mapping starts from (ConvBn*d, ConvBnReLU*d, LinearBn1d: extension)."""
    ours = qq.DEFAULT_MODULE_MAPPING
    for k, v in tqm.DEFAULT_QAT_MODULE_MAPPINGS.items():
        assert v in ours, v
        assert k in ours, k


class _ConvBnNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.c1, self.b1, self.r1 = nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.flat = nn.Flatten()
        self.fc, self.bn = nn.Linear(8 * 6 * 6, 10), nn.BatchNorm1d(10)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.b2(self.c2(self.r1(self.b1(self.c1(self.quant(x))))))
        return self.dequant(self.bn(self.fc(self.flat(x))))


def _conv_bn_net(train_fuse):
    torch.manual_seed(0)
    m = _ConvBnNet()
    g = torch.Generator().manual_seed(1)
    for bn in (m.b1, m.b2, m.bn):
        with torch.no_grad():
            bn.running_mean.copy_(torch.randn(bn.num_features, generator=g) * 0.2)
            bn.running_var.copy_(torch.rand(bn.num_features, generator=g) + 0.5)
            bn.weight.copy_(torch.rand(bn.num_features, generator=g) + 0.5)
    groups = [["c1", "b1", "r1"], ["c2", "b2"], ["fc", "bn"]]
    if train_fuse:
        m.train()
        m = tq.fuse_modules_qat(m, groups)  # non-QAT fused nni.ConvBnReLU2d, ConvBn2d, LinearBn1d
    m.eval()
    if not train_fuse:
        m = tq.fuse_modules(m, groups)  # folds: ConvReLU2d, Conv2d, Linear
    m.qconfig = tq.get_default_qconfig("x86")
    tq.prepare(m, inplace=True, allow_list=qq.get_default_qconfig_propagation_list())
    for i in range(3):
        m(torch.randn(4, 3, 8, 8, generator=torch.Generator().manual_seed(50 + i)))
    return m


def test_train_mode_fused_conv_bn_converts_like_eval_mode_fused():
    train_fused = _conv_bn_net(True)
    assert type(train_fused.c1) is nni.ConvBnReLU2d and type(train_fused.c2) is nni.ConvBn2d
    assert type(train_fused.fc) is nni.LinearBn1d
    ours = qq.convert(train_fused)
    assert type(ours.c1) is qnni.ConvReLU2d and type(ours.c2) is qnn.Conv2d
    assert type(ours.fc) is qnn.Linear
    # torch.ao leaves them float (no mapping): the model then fails on quantized input.
    theirs = tq.convert(copy.deepcopy(train_fused))
    assert type(theirs.c1) is nni.ConvBnReLU2d
    # Reference: the eval-mode fused (folded) model converted by torch.ao.
    ref = tq.convert(_conv_bn_net(False))
    x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(9))
    got, want = ours(x), ref(x)
    scale = ref.fc.scale
    assert float((got - want).abs().max()) <= 2 * scale
    assert float(((got - want).abs() <= 1e-6).float().mean()) >= 0.99


class _Custom(nn.Module):
    def forward(self, x):
        return x * 2


class _QCustom(nn.Module):
    @classmethod
    def from_float(cls, mod):
        return cls()

    def forward(self, x):
        return torch.ops.qplugin.relu6(x, False)


def test_user_mapping_extends_and_overrides():
    m = nn.Sequential(tq.QuantStub(), nn.Hardswish(), _Custom(), nn.ReLU6(), tq.DeQuantStub())
    m.eval().qconfig = tq.get_default_qconfig("x86")
    allow = qq.get_default_qconfig_propagation_list() | {_Custom}
    tq.prepare(m, inplace=True, allow_list=allow)
    m(torch.randn(2, 5))
    mapping = qq.get_default_static_quant_module_mappings()
    mapping[_Custom] = _QCustom           # extends
    mapping[nn.Hardswish] = _QCustom      # overrides
    got = qq.convert(m, mapping)
    assert [type(c) for c in got] == [qnn.Quantize, _QCustom, _QCustom, qnn.ReLU6, qnn.DeQuantize]
    got(torch.randn(2, 5))
    # Default: the unmapped custom module is left alone.
    got = qq.convert(m)
    assert type(got[2]) is _Custom and type(got[1]) is qnn.Hardswish
    assert qq.DEFAULT_MODULE_MAPPING[nn.Hardswish] is qnn.Hardswish
