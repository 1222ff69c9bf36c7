# qplugin.quantization.get_default_qconfig_propagation_list: prepare observes the activations
# PyTorch never quantized, so convert can swap them for qplugin modules.

import torch  # noqa: E402
from torch import nn  # noqa: E402

import qplugin  # noqa: E402
import qplugin.nn as qnn  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.silu = nn.SiLU()
        self.gelu = nn.GELU()
        self.tanh = nn.Tanh()
        self.sig = nn.Sigmoid()
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.sig(self.tanh(self.gelu(self.silu(self.quant(x))))))


def _prepared(allow_list):
    torch.manual_seed(0)
    m = Net().eval()
    m.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    m = torch.ao.quantization.prepare(m, allow_list=allow_list)
    for _ in range(4):
        m(torch.randn(2, 8, 5, 5) * 3)
    return m


def test_list_contains_torch_defaults_and_mapping_keys():
    from torch.ao.quantization.quantization_mappings import get_default_qconfig_propagation_list
    ours = qplugin.quantization.get_default_qconfig_propagation_list()
    assert set(get_default_qconfig_propagation_list()) <= ours
    assert {nn.SiLU, nn.GELU, nn.Mish, nn.Softplus, nn.Tanh, nn.Sigmoid, nn.Softmax} <= ours


def test_prepare_with_list_observes_and_convert_swaps():
    m = _prepared(qplugin.quantization.get_default_qconfig_propagation_list())
    assert hasattr(m.silu, "activation_post_process")
    q = qplugin.quantization.convert(m)
    assert isinstance(q.silu, qnn.SiLU) and isinstance(q.gelu, qnn.GELU)
    assert isinstance(q.tanh, qnn.Tanh) and isinstance(q.sig, qnn.Sigmoid)
    x = torch.randn(2, 8, 5, 5) * 3
    ref = m(x)  # observed float model
    out = q(x)
    # Four requantizations of values in [-1, 1]: within a few output steps of float.
    assert (out - ref).abs().max().item() < 0.05


def test_prepare_without_list_leaves_silu_unobserved():
    # Why the helper exists: torch's default list does not reach SiLU.
    m = _prepared(None)
    assert not hasattr(m.silu, "activation_post_process")
