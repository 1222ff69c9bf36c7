"""The op tables: one per op family, one row per op. Each row names the op, its schema (or the
torch.ops.quantized op it mirrors), the float reference, the default output qparams, the
qplugin.nn module and functional form, the torch.nn class it converts from, and test cases.
The Python surface is produced from them (qplugin/nn/_functional_activation.py,
qplugin/nn/modules/activation.py, qplugin/nn/__init__.py, qplugin/quantization's mapping), the
tests read their cases from them, and tests/test_architecture.py walks docs/architecture.md's
"adding an op" recipe over every row. Families: activation (qplugin/_tables/activation.py).
"""
from . import activation  # noqa: F401

FAMILIES = {"activation": activation.ROWS}
