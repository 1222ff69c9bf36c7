# Pins every torch.ops.qplugin schema (a change shows up in review; the op tables' schemas are pinned
# in their rows, qplugin/_tables/) and checks that each public op
# mirrors PyTorch's schema: same argument names, types, defaults and returns as
# torch.ops.quantized.X / aten::quantized_batch_norm, modulo the namespace.
# Pins: test_schemas.txt. Changes with: csrc/ops/*.cpp (the schemas).
# Refill: EXPECTTEST_ACCEPT=1 python -m pytest <this>.
import os
import pathlib
import re

import pytest
import torch

from qplugin._tables import activation as _activation


def _is_plain(overload):
    """The PT2 door's overloads (`.plain`, `.<ov>_plain`, docs/pt2.md section 3) are pinned in
    tests/pt2/schemas/*.txt (tests/pt2/test_plain_schemas.py), not mirrored here."""
    return overload == "plain" or overload.endswith("_plain")


def _legacy_overloads(packet):
    return [o for o in packet.overloads() if not _is_plain(o)]


def _overloads(packet):
    return [getattr(packet, o) for o in sorted(_legacy_overloads(packet))]


def schema(name):
    """Every overload's schema of torch.ops.qplugin.<name>, one per line (sorted by overload)."""
    return "\n".join(str(o._schema) for o in _overloads(getattr(torch.ops.qplugin, name)))


def _norm(text):
    """Packed-param class names differ by namespace only: quantized::LinearPackedParamsBase is
    qplugin::LinearPackedParams (and, for the fp16 ops, qplugin::LinearPackedParamsFp16)."""
    return re.sub(r"__torch__\.torch\.classes\.\w+\.(\w+?)(?:Fp16)?(?:Base)?\b", r"PACKED:\1",
                  text)


# op -> the PyTorch op it mirrors.
MIRRORS = {
    "embedding_bag_byte_prepack": torch.ops.quantized.embedding_bag_byte_prepack,
    "embedding_bag_4bit_prepack": torch.ops.quantized.embedding_bag_4bit_prepack,
    "embedding_bag_byte_unpack": torch.ops.quantized.embedding_bag_byte_unpack,
    "embedding_bag_4bit_unpack": torch.ops.quantized.embedding_bag_4bit_unpack,
    "embedding_bag_prepack": torch.ops.quantized.embedding_bag_prepack,
    "embedding_bag_unpack": torch.ops.quantized.embedding_bag_unpack,
    "embedding_bag_byte_rowwise_offsets": torch.ops.quantized.embedding_bag_byte_rowwise_offsets,
    "embedding_bag_4bit_rowwise_offsets": torch.ops.quantized.embedding_bag_4bit_rowwise_offsets,
    "embedding_bag_byte": torch.ops.quantized.embedding_bag_byte,
    "embedding_bag_4bit": torch.ops.quantized.embedding_bag_4bit,
    "embedding_byte": torch.ops.quantized.embedding_byte,
    "embedding_4bit": torch.ops.quantized.embedding_4bit,
    "embedding_bag_2bit_prepack": torch.ops.quantized.embedding_bag_2bit_prepack,
    "embedding_bag_2bit_unpack": torch.ops.quantized.embedding_bag_2bit_unpack,
    "embedding_bag_2bit_rowwise_offsets": torch.ops.quantized.embedding_bag_2bit_rowwise_offsets,
    "quantized_batch_norm": torch.ops.aten.quantized_batch_norm,
    "batch_norm": torch.ops.quantized.batch_norm,
    "batch_norm1d": torch.ops.quantized.batch_norm1d,
    "batch_norm2d": torch.ops.quantized.batch_norm2d,
    "batch_norm3d": torch.ops.quantized.batch_norm3d,
    "batch_norm_relu": torch.ops.quantized.batch_norm_relu,
    "batch_norm1d_relu": torch.ops.quantized.batch_norm1d_relu,
    "batch_norm2d_relu": torch.ops.quantized.batch_norm2d_relu,
    "batch_norm3d_relu": torch.ops.quantized.batch_norm3d_relu,
    "layer_norm": torch.ops.quantized.layer_norm,
    "group_norm": torch.ops.quantized.group_norm,
    "instance_norm": torch.ops.quantized.instance_norm,
    "_upsample_nearest_exact1d": torch.ops.aten._upsample_nearest_exact1d,
    "_upsample_nearest_exact2d": torch.ops.aten._upsample_nearest_exact2d,
    "_upsample_nearest_exact3d": torch.ops.aten._upsample_nearest_exact3d,
    "adaptive_avg_pool1d": torch.ops.aten.adaptive_avg_pool1d,
    "adaptive_avg_pool2d": torch.ops.aten.adaptive_avg_pool2d,
    "adaptive_avg_pool3d": torch.ops.aten.adaptive_avg_pool3d,
    "avg_pool1d": torch.ops.aten.avg_pool1d,
    "avg_pool2d": torch.ops.aten.avg_pool2d,
    "avg_pool3d": torch.ops.aten.avg_pool3d,
    "max_pool1d": torch.ops.quantized.max_pool1d,
    "max_pool2d": torch.ops.quantized.max_pool2d,
    "max_pool3d": torch.ops.aten.max_pool3d,
    "upsample_bilinear2d": torch.ops.aten.upsample_bilinear2d,
    "upsample_linear1d": torch.ops.aten.upsample_linear1d,
    "upsample_nearest1d": torch.ops.aten.upsample_nearest1d,
    "upsample_nearest2d": torch.ops.aten.upsample_nearest2d,
    "upsample_nearest3d": torch.ops.aten.upsample_nearest3d,
    "upsample_trilinear3d": torch.ops.aten.upsample_trilinear3d,
    "conv1d": torch.ops.quantized.conv1d,
    "conv1d_prepack": torch.ops.quantized.conv1d_prepack,
    "conv1d_relu": torch.ops.quantized.conv1d_relu,
    "conv1d_unpack": torch.ops.quantized.conv1d_unpack,
    "conv2d": torch.ops.quantized.conv2d,
    "conv2d_prepack": torch.ops.quantized.conv2d_prepack,
    "conv2d_relu": torch.ops.quantized.conv2d_relu,
    "conv2d_unpack": torch.ops.quantized.conv2d_unpack,
    "conv3d": torch.ops.quantized.conv3d,
    "conv3d_prepack": torch.ops.quantized.conv3d_prepack,
    "conv3d_relu": torch.ops.quantized.conv3d_relu,
    "conv3d_unpack": torch.ops.quantized.conv3d_unpack,
    "conv_transpose1d": torch.ops.quantized.conv_transpose1d,
    "conv_transpose1d_prepack": torch.ops.quantized.conv_transpose1d_prepack,
    "conv_transpose1d_unpack": torch.ops.quantized.conv_transpose1d_unpack,
    "conv_transpose2d": torch.ops.quantized.conv_transpose2d,
    "conv_transpose2d_prepack": torch.ops.quantized.conv_transpose2d_prepack,
    "conv_transpose2d_unpack": torch.ops.quantized.conv_transpose2d_unpack,
    "conv_transpose3d": torch.ops.quantized.conv_transpose3d,
    "conv_transpose3d_prepack": torch.ops.quantized.conv_transpose3d_prepack,
    "conv_transpose3d_unpack": torch.ops.quantized.conv_transpose3d_unpack,
    "linear": torch.ops.quantized.linear,
    "linear_dynamic": torch.ops.quantized.linear_dynamic,
    "linear_relu_dynamic": torch.ops.quantized.linear_relu_dynamic,
    "linear_dynamic_fp16": torch.ops.quantized.linear_dynamic_fp16,
    "linear_relu_dynamic_fp16": torch.ops.quantized.linear_relu_dynamic_fp16,
    "linear_prepack_fp16": torch.ops.quantized.linear_prepack_fp16,
    "linear_unpack_fp16": torch.ops.quantized.linear_unpack_fp16,
    "linear_prepack": torch.ops.quantized.linear_prepack,
    "linear_relu": torch.ops.quantized.linear_relu,
    "linear_leaky_relu": torch.ops.quantized.linear_leaky_relu,
    "linear_tanh": torch.ops.quantized.linear_tanh,
    "prelu": torch.ops.quantized.prelu,
    "conv2d_add": torch.ops.quantized.conv2d_add,
    "conv2d_add_relu": torch.ops.quantized.conv2d_add_relu,
    "matmul": torch.ops.quantized.matmul,
    "linear_unpack": torch.ops.quantized.linear_unpack,
    # dynamic RNN cells (issue 17)
    "quantized_lstm_cell_dynamic": torch.ops.quantized.quantized_lstm_cell_dynamic,
    "quantized_gru_cell_dynamic": torch.ops.quantized.quantized_gru_cell_dynamic,
    "quantized_rnn_tanh_cell_dynamic": torch.ops.quantized.quantized_rnn_tanh_cell_dynamic,
    "quantized_rnn_relu_cell_dynamic": torch.ops.quantized.quantized_rnn_relu_cell_dynamic,
    # CellParams makers (rnn.CellParamsBase is qplugin.CellParams) and their consumers, the
    # stacked-layer ops (aten's .input / .data; not its _legacy overloads)
    "make_quantized_cell_params": torch.ops.quantized.make_quantized_cell_params,
    "make_quantized_cell_params_dynamic": torch.ops.quantized.make_quantized_cell_params_dynamic,
    "make_quantized_cell_params_fp16": torch.ops.quantized.make_quantized_cell_params_fp16,
    "quantized_lstm": torch.ops.aten.quantized_lstm,
    "quantized_gru": torch.ops.aten.quantized_gru,
    # elementwise (issue 6)
    "add_out": torch.ops.quantized.add_out,
    "add_relu_out": torch.ops.quantized.add_relu_out,
    "mul_out": torch.ops.quantized.mul_out,
    "mul_relu_out": torch.ops.quantized.mul_relu_out,
    "cat": torch.ops.quantized.cat,
    "cat_relu": torch.ops.quantized.cat_relu,
    "cat_out": torch.ops.quantized.cat_out,
    "cat_relu_out": torch.ops.quantized.cat_relu_out,
    # dynamic convs (issue 17)
    "conv1d_dynamic": torch.ops.quantized.conv1d_dynamic,
    "conv2d_dynamic": torch.ops.quantized.conv2d_dynamic,
    "conv3d_dynamic": torch.ops.quantized.conv3d_dynamic,
    "conv_transpose1d_dynamic": torch.ops.quantized.conv_transpose1d_dynamic,
    "conv_transpose2d_dynamic": torch.ops.quantized.conv_transpose2d_dynamic,
    "conv_transpose3d_dynamic": torch.ops.quantized.conv_transpose3d_dynamic,
}
# Mirrors with several overloads (every overload equals PyTorch's, modulo the namespace).
OVERLOADED_MIRRORS = {
    "add": torch.ops.quantized.add,
    "add_relu": torch.ops.quantized.add_relu,
    "mul": torch.ops.quantized.mul,
    "mul_relu": torch.ops.quantized.mul_relu,
    "add_scalar": torch.ops.quantized.add_scalar,
    "add_scalar_relu": torch.ops.quantized.add_scalar_relu,
    "add_scalar_out": torch.ops.quantized.add_scalar_out,
    "add_scalar_relu_out": torch.ops.quantized.add_scalar_relu_out,
    "mul_scalar": torch.ops.quantized.mul_scalar,
    "mul_scalar_relu": torch.ops.quantized.mul_scalar_relu,
    "mul_scalar_out": torch.ops.quantized.mul_scalar_out,
    "mul_scalar_relu_out": torch.ops.quantized.mul_scalar_relu_out,
}
# Extensions: no PyTorch counterpart in torch.ops.quantized (docs/deviations.md).
EXTENSIONS = ("adaptive_max_pool2d", "quantized_lstm_layer_dynamic", "quantized_gru_layer_dynamic",
              "quantized_lstm_layer_dynamic_fp16", "quantized_gru_layer_dynamic_fp16")
# The float16 cells: PyTorch's cell ops take either packed type through one base class; qplugin's
# fp16 class is separate and an overload is not picked by class in eager Python, so they are
# named <op>_fp16, with <op>'s schema otherwise (test_fp16_cells_mirror_the_int8_cells).
FP16_CELLS = tuple(f"quantized_{k}_cell_dynamic_fp16" for k in ("lstm", "gru", "rnn_tanh",
                                                                 "rnn_relu"))
EXTENSIONS += FP16_CELLS
# The activation family: its rows pin the extensions' schemas and name the mirrored torch op
# (qplugin/_tables/activation.py); test_table_schemas checks them.
MIRRORS.update({row.op: getattr(torch.ops.quantized, row.torch_op) for row in _activation.ROWS
                if row.torch_op})
EXTENSIONS += tuple(row.op for row in _activation.ROWS if row.schema)
TABLE_OPS = {row.op for row in _activation.ROWS}
# Library-level ops with no PyTorch counterpart (leading underscore: private).
# qplugin extensions with no PyTorch counterpart of the same schema (pinned, not mirrored).
PRIVATE = ("_cpu_isa", "_detected_cpu_isa", "_set_cpu_isa", "_set_amx", "_amx_enabled", "_build_torch_version",
           "_output_pool_stats", "_release_output_pool", "_kernel_path_counts")


# test_schemas.txt: every op's schema, one overload a line, grouped by op (each group in
# schema()'s order: sorted by overload name); test_pinned_schema checks each op's group. A new op:
# add its line(s) there.
PINNED = pathlib.Path(__file__).with_suffix(".txt")


def _op(line):
    """"qplugin::add.Scalar(Tensor qa, ...) -> ..." -> "add"."""
    return line.split("(", 1)[0].split("::", 1)[1].split(".", 1)[0]


def pinned():
    """op -> its pinned schema lines, joined as schema(op) joins them."""
    out = {}
    for line in PINNED.read_text().splitlines():
        out.setdefault(_op(line), []).append(line)
    return {op: "\n".join(lines) for op, lines in out.items()}


def _refill():
    """EXPECTTEST_ACCEPT=1: rewrite test_schemas.txt with the registered schemas (the pinned ops
    only, in their order), as assertExpectedInline refilled the per-op pins."""
    PINNED.write_text("".join(schema(op) + "\n" for op in pinned()))


if os.environ.get("EXPECTTEST_ACCEPT"):
    _refill()


@pytest.mark.parametrize("op", list(pinned()))
def test_pinned_schema(op):
    assert schema(op) == pinned()[op]


def test_every_op_is_pinned():
    """Every qplugin op has a pinned schema in PINNED (and a mirror or is private): a new op must
    be added there."""
    # Packets with PT2-door overloads only (quantize_per_tensor, dequantize) are pinned in
    # tests/pt2/schemas/ (test_plain_schemas.py).
    registered = {s.name.split("::", 1)[1] for s in torch._C._jit_get_all_schemas()
                  if s.name.startswith("qplugin::") and not _is_plain(s.overload_name)
                  and not s.name.startswith("qplugin::_rt_")}  # test_router.py's test-only ops
    have = set(pinned()) | TABLE_OPS
    assert registered == have, (
        f"not pinned: {sorted(registered - have)}; pinned but not registered: "
        f"{sorted(have - registered)}")
    assert registered == set(MIRRORS) | set(PRIVATE) | set(OVERLOADED_MIRRORS) | set(EXTENSIONS)


def _arg(a):
    return (a.name, str(a.type), a.has_default_value(), a.default_value, a.kwarg_only, a.is_out,
            a.is_write, a.alias_info is None)


@pytest.mark.parametrize("name", list(MIRRORS))
def test_mirrors_pytorch_schema(name):
    ours_all = {o._schema.overload_name: o._schema for o in _overloads(getattr(torch.ops.qplugin, name))}
    theirs_all = {o._schema.overload_name: o._schema for o in _overloads(MIRRORS[name])}
    # Every overload qplugin has exists in PyTorch with the same schema (qplugin may skip some of
    # PyTorch's overloads; today it has all of them, legacy conv2d.default included).
    assert set(ours_all) <= set(theirs_all), (sorted(ours_all), sorted(theirs_all))
    for overload, ours in ours_all.items():
        theirs = theirs_all[overload]
        assert ours.name.split("::", 1)[1] == theirs.name.split("::", 1)[1]
        assert [_norm(str(_arg(a))) for a in ours.arguments] == [_norm(str(_arg(a))) for a in theirs.arguments]
        assert [_norm(str(_arg(a))) for a in ours.returns] == [_norm(str(_arg(a))) for a in theirs.returns]
        assert ours.is_mutable == theirs.is_mutable
        # The whole string, modulo the namespace and the packed-param class names.
        assert _norm(str(ours).split("::", 1)[1]) == _norm(str(theirs).split("::", 1)[1])


# Ops registered under a named overload only, as the PyTorch overload models use (conv2d.new).
# Plus the legacy default overloads (stride/padding/dilation/groups ignored, as PyTorch's).
NAMED_OVERLOADS = {"conv2d": ["new", "default"], "conv2d_relu": ["new", "default"],
                   "conv3d": ["new", "default"], "conv3d_relu": ["new", "default"],
                   "quantized_lstm": ["input", "data"], "quantized_gru": ["input", "data"]}


@pytest.mark.parametrize("name", list(MIRRORS) + list(PRIVATE))
def test_registered_overloads(name):
    assert (_legacy_overloads(getattr(torch.ops.qplugin, name))
            == NAMED_OVERLOADS.get(name, ["default"]))


@pytest.mark.parametrize("name", list(OVERLOADED_MIRRORS))
def test_overloaded_mirrors_pytorch_schemas(name):
    ours = getattr(torch.ops.qplugin, name)
    theirs = OVERLOADED_MIRRORS[name]
    assert _legacy_overloads(ours) == theirs.overloads()
    for o in _legacy_overloads(ours):
        assert (str(getattr(ours, o)._schema).split("::", 1)[1]
                == str(getattr(theirs, o)._schema).split("::", 1)[1])


@pytest.mark.parametrize("name", list(EXTENSIONS))
def test_extensions_have_one_overload(name):
    assert _legacy_overloads(getattr(torch.ops.qplugin, name)) == ["default"]


@pytest.mark.parametrize("name", FP16_CELLS)
def test_fp16_cells_mirror_the_int8_cells(name):
    ours = str(getattr(torch.ops.qplugin, name).default._schema)
    theirs = str(getattr(torch.ops.quantized, name[:-len("_fp16")]).default._schema)
    assert ours.replace("_fp16(", "(").replace("LinearPackedParamsFp16", "LinearPackedParams") \
        == theirs.replace("quantized::", "qplugin::").replace("quantized.LinearPackedParamsBase",
                                                               "qplugin.LinearPackedParams")


@pytest.mark.parametrize("row", _activation.ROWS, ids=lambda r: r.name)
def test_table_schemas(row):
    """A row either mirrors a torch.ops.quantized op (test_mirrors_pytorch_schema) or pins its
    extension schema; never both, never neither."""
    assert (row.torch_op is None) != (row.schema is None), row.name
    if row.schema is not None:
        assert schema(row.op) == row.schema
