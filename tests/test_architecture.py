"""Walks docs/architecture.md's "Adding an op" recipe over every row of every op table
(qplugin/_tables/): a row whose op lacks a registered QuantizedCPU kernel, the row's schema (or
PyTorch's), test cases, a bench case, its functional form, module, export or mapping entry
fails here, naming the recipe step. Changes with: docs/architecture.md, qplugin/_tables/,
tools/bench/bench_elementwise.py.
"""
import os
import re
import sys

import pytest
import torch

import qplugin
from qplugin import nn as qnn
from qplugin._tables import FAMILIES
from qplugin.nn import functional as qF

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "architecture.md")
ROWS = [pytest.param(family, row, id=f"{family}-{row.name}")
        for family, rows in FAMILIES.items() for row in rows]


def _recipe():
    """The numbered steps of the doc's "Adding an op" section: {number: bold title}."""
    text = open(DOC, encoding="utf-8").read()
    section = text.split("## Adding an op", 1)[1].split("\n## ", 1)[0]
    return {int(n): title for n, title in re.findall(r"^(\d+)\. \*\*(.+?)\*\*", section, re.M)}


# The steps this test checks, by the doc's titles: renaming or renumbering a step in the doc
# without updating this test fails test_recipe_is_the_documented_one.
STEPS = {1: "Schema", 2: "Kernel", 3: "Table row", 4: "Test cases", 5: "Python surface",
         6: "Bench case"}


def test_recipe_is_the_documented_one():
    recipe = _recipe()
    for number, title in STEPS.items():
        assert recipe.get(number) == title, (
            f"docs/architecture.md step {number} is {recipe.get(number)!r}, this test checks"
            f" {title!r}")


def _step(n):
    return f"docs/architecture.md step {n} ({STEPS[n]})"


def _bench_case_names():
    """Names of the bench cases of the activation family (tools/bench.py act_cases and
    tools/bench/bench_elementwise.py activation_cases, run on a tiny input)."""
    for p in (os.path.join(ROOT, "tools"), os.path.join(ROOT, "tools", "bench")):
        if p not in sys.path:
            sys.path.append(p)
    import bench
    import bench_elementwise
    xf = torch.linspace(-4, 4, 64).reshape(1, 4, 4, 4)
    x = torch.quantize_per_tensor(xf, 8 / 255, 128, torch.quint8)
    names = [c[0] for c in bench_elementwise.activation_cases(x, x.dequantize(), "tiny")]
    names += [c[0] for c in bench.act_cases()]
    return names


@pytest.fixture(scope="module")
def bench_names():
    try:
        return _bench_case_names()
    except Exception as e:  # a row the bench cannot time (e.g. its op is not registered)
        pytest.fail(f"{_step(6)}: tools/bench cannot build its activation cases: {e!r}")


@pytest.mark.parametrize("family,row", ROWS)
def test_step_1_2_op_registered_with_kernel(family, row):
    assert hasattr(torch.ops.qplugin, row.op), f"{_step(1)}: no torch.ops.qplugin.{row.op}"
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"qplugin::{row.op}", "QuantizedCPU"), (
        f"{_step(2)}: qplugin::{row.op} has no QuantizedCPU kernel")
    got = str(getattr(torch.ops.qplugin, row.op).default._schema)
    if row.schema is not None:
        assert got == row.schema, f"{_step(1)}: registered {got!r}, the row pins {row.schema!r}"
    else:
        assert row.torch_op is not None, f"{_step(3)}: {row.name}: neither schema nor torch_op"
        theirs = str(getattr(torch.ops.quantized, row.torch_op).default._schema)
        assert got.split("::", 1)[1] == theirs.split("::", 1)[1].replace(row.torch_op, row.op, 1)


@pytest.mark.parametrize("family,row", ROWS)
def test_step_3_4_row_and_test_cases(family, row):
    assert row.summary and callable(row.reference), f"{_step(3)}: {row.name}"
    assert row.cases, f"{_step(4)}: {row.name} has no test case"
    assert row.output_qparams in ("given", "input") or isinstance(row.output_qparams, dict)
    # The table's test file parametrizes over every case of every row of its family.
    test_file = os.path.join(ROOT, "tests", family, "test_table.py")
    assert os.path.exists(test_file), f"{_step(4)}: no tests/{family}/test_table.py"


@pytest.mark.parametrize("family,row", ROWS)
def test_step_5_python_surface(family, row):
    fn = getattr(qF, row.name, None)
    assert callable(fn) and row.name in qF.__all__, (
        f"{_step(5)}: no qplugin.nn.functional.{row.name}")
    if row.torch_module is not None or row.module is not None:
        assert row.module and row.torch_module, f"{_step(5)}: {row.name}: module without mirror"
        cls = getattr(qnn, row.module, None)
        assert cls is not None and row.module in qnn.__all__, f"{_step(5)}: no qplugin.nn.{row.module}"
        assert cls._FLOAT_MODULE is row.torch_module
        mapping = qplugin.quantization.get_default_static_quant_module_mappings()
        assert mapping.get(row.torch_module) is cls, (
            f"{_step(5)}: the quantization mapping lacks {row.torch_module.__name__} -> {row.module}")
    if row.generated or row.functional == "generated":
        for a in row.module_args:
            if a.to_op:
                a.annotation  # raises for an argument generated code cannot type


@pytest.mark.parametrize("family,row", ROWS)
def test_step_6_bench_case(family, row, bench_names):
    assert any(n.split(" ", 1)[0] == row.op for n in bench_names), (
        f"{_step(6)}: no bench case for {row.op}")
