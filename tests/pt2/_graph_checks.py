"""The check every PT2 export test makes on an exported program (tests/pt2): no QTensor and no
quantized dtype in any node's value or arguments, no `quantized::` / `quantized_decomposed` op and
no aten `quantize_per_tensor`; returns the qplugin op targets ("qplugin.<op>.<overload>") for the
caller's own assertions."""
import torch
import torch.utils._pytree as pytree

from qplugin.pt2 import QTensor

QUANTIZED_DTYPES = {torch.quint8, torch.qint8, torch.qint32, torch.quint4x2, torch.quint2x4}


def qplugin_targets(ep):
    targets = []
    for node in ep.graph.nodes:
        vals = node.meta.get("val")
        for v in (vals if isinstance(vals, (tuple, list)) else [vals]):
            if isinstance(v, torch.Tensor):
                assert not isinstance(v, QTensor), node.format_node()
                assert v.dtype not in QUANTIZED_DTYPES, node.format_node()
        for a in pytree.tree_leaves((node.args, node.kwargs)):
            assert a not in QUANTIZED_DTYPES, node.format_node()
        if node.op == "call_function":
            t = str(node.target)
            targets.append(t)
            assert not t.startswith("quantized.") and "quantized_decomposed" not in t, t
            assert "quantize_per_tensor.default" not in t, t
    qops = [t for t in targets if t.startswith("qplugin.")]
    assert qops, targets
    return qops
