# Pins every torch.ops.qplugin schema (a change shows up in review; the op tables' schemas are pinned
# in their rows, qplugin/_tables/) and checks that each public op
# mirrors PyTorch's schema: same argument names, types, defaults and returns as
# torch.ops.quantized.X / aten::quantized_batch_norm, modulo the namespace.
# Changes with: csrc/ops/*.cpp (the schemas). Refill: EXPECTTEST_ACCEPT=1 python -m pytest <this>.
import re

import expecttest
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
PRIVATE = ("_cpu_isa", "_detected_cpu_isa", "_set_cpu_isa", "_build_torch_version")


class TestSchemas(expecttest.TestCase):
    def test_embedding_bag_byte_prepack(self):
        self.assertExpectedInline(schema("embedding_bag_byte_prepack"), """qplugin::embedding_bag_byte_prepack(Tensor weight) -> Tensor""")

    def test_embedding_bag_4bit_prepack(self):
        self.assertExpectedInline(schema("embedding_bag_4bit_prepack"), """qplugin::embedding_bag_4bit_prepack(Tensor weight, bool optimized_qparams=False, int nbins=200, float ratio=0.16) -> Tensor""")

    def test_embedding_bag_byte_unpack(self):
        self.assertExpectedInline(schema("embedding_bag_byte_unpack"), """qplugin::embedding_bag_byte_unpack(Tensor weight) -> Tensor""")

    def test_embedding_bag_4bit_unpack(self):
        self.assertExpectedInline(schema("embedding_bag_4bit_unpack"), """qplugin::embedding_bag_4bit_unpack(Tensor weight) -> Tensor""")

    def test_embedding_bag_prepack(self):
        self.assertExpectedInline(schema("embedding_bag_prepack"), """qplugin::embedding_bag_prepack(Tensor weight) -> __torch__.torch.classes.qplugin.EmbeddingPackedParams W_prepack""")

    def test_embedding_bag_unpack(self):
        self.assertExpectedInline(schema("embedding_bag_unpack"), """qplugin::embedding_bag_unpack(__torch__.torch.classes.qplugin.EmbeddingPackedParams W_prepack) -> Tensor W_origin""")

    def test_embedding_bag_byte_rowwise_offsets(self):
        self.assertExpectedInline(schema("embedding_bag_byte_rowwise_offsets"), """qplugin::embedding_bag_byte_rowwise_offsets(Tensor weight, Tensor indices, Tensor? offsets=None, bool scale_grad_by_freq=False, int mode=0, bool pruned_weights=False, Tensor? per_sample_weights=None, Tensor? compressed_indices_mapping=None, bool include_last_offset=False) -> Tensor""")

    def test_embedding_bag_4bit_rowwise_offsets(self):
        self.assertExpectedInline(schema("embedding_bag_4bit_rowwise_offsets"), """qplugin::embedding_bag_4bit_rowwise_offsets(Tensor weight, Tensor indices, Tensor? offsets=None, bool scale_grad_by_freq=False, int mode=0, bool pruned_weights=False, Tensor? per_sample_weights=None, Tensor? compressed_indices_mapping=None, bool include_last_offset=False) -> Tensor""")

    def test_embedding_bag_byte(self):
        self.assertExpectedInline(schema("embedding_bag_byte"), """qplugin::embedding_bag_byte(__torch__.torch.classes.qplugin.EmbeddingPackedParams weight, Tensor indices, Tensor? offsets=None, bool scale_grad_by_freq=False, int mode=0, bool pruned_weights=False, Tensor? per_sample_weights=None, Tensor? compressed_indices_mapping=None, bool include_last_offset=False) -> Tensor""")

    def test_embedding_bag_4bit(self):
        self.assertExpectedInline(schema("embedding_bag_4bit"), """qplugin::embedding_bag_4bit(__torch__.torch.classes.qplugin.EmbeddingPackedParams weight, Tensor indices, Tensor? offsets=None, bool scale_grad_by_freq=False, int mode=0, bool pruned_weights=False, Tensor? per_sample_weights=None, Tensor? compressed_indices_mapping=None, bool include_last_offset=False) -> Tensor""")

    def test_embedding_byte(self):
        self.assertExpectedInline(schema("embedding_byte"), """qplugin::embedding_byte(__torch__.torch.classes.qplugin.EmbeddingPackedParams weight, Tensor indices, bool pruned_weights=False) -> Tensor""")

    def test_embedding_4bit(self):
        self.assertExpectedInline(schema("embedding_4bit"), """qplugin::embedding_4bit(__torch__.torch.classes.qplugin.EmbeddingPackedParams weight, Tensor indices, bool pruned_weights=False) -> Tensor""")

    def test_embedding_bag_2bit_prepack(self):
        self.assertExpectedInline(schema("embedding_bag_2bit_prepack"), """qplugin::embedding_bag_2bit_prepack(Tensor weight, bool optimized_qparams=False, int nbins=200, float ratio=0.16) -> Tensor""")

    def test_embedding_bag_2bit_unpack(self):
        self.assertExpectedInline(schema("embedding_bag_2bit_unpack"), """qplugin::embedding_bag_2bit_unpack(Tensor weight) -> Tensor""")

    def test_embedding_bag_2bit_rowwise_offsets(self):
        self.assertExpectedInline(schema("embedding_bag_2bit_rowwise_offsets"), """qplugin::embedding_bag_2bit_rowwise_offsets(Tensor weight, Tensor indices, Tensor? offsets=None, bool scale_grad_by_freq=False, int mode=0, bool pruned_weights=False, Tensor? per_sample_weights=None, Tensor? compressed_indices_mapping=None, bool include_last_offset=False) -> Tensor""")

    def test_conv1d(self):
        self.assertExpectedInline(schema("conv1d"), """qplugin::conv1d(Tensor qx, __torch__.torch.classes.qplugin.Conv2dPackedParams packed_weight, float output_scale, int output_zero_point) -> Tensor""")

    def test_conv1d_prepack(self):
        self.assertExpectedInline(schema("conv1d_prepack"), """qplugin::conv1d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, int groups) -> __torch__.torch.classes.qplugin.Conv2dPackedParams""")

    def test_conv1d_relu(self):
        self.assertExpectedInline(schema("conv1d_relu"), """qplugin::conv1d_relu(Tensor qx, __torch__.torch.classes.qplugin.Conv2dPackedParams packed_weight, float output_scale, int output_zero_point) -> Tensor""")

    def test_conv1d_unpack(self):
        self.assertExpectedInline(schema("conv1d_unpack"), """qplugin::conv1d_unpack(__torch__.torch.classes.qplugin.Conv2dPackedParams packed_weights) -> (Tensor unpacked_weights, Tensor? B_origin)""")

    def test_conv2d(self):
        self.assertExpectedInline(schema("conv2d"), """\
qplugin::conv2d(Tensor qx, __torch__.torch.classes.qplugin.Conv2dPackedParams weight, int[] stride, int[] padding, int[] dilation, int groups, float output_scale, int output_zero_point) -> Tensor
qplugin::conv2d.new(Tensor qx, __torch__.torch.classes.qplugin.Conv2dPackedParams packed_weight, float output_scale, int output_zero_point) -> Tensor""")

    def test_conv2d_prepack(self):
        self.assertExpectedInline(schema("conv2d_prepack"), """qplugin::conv2d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, int groups) -> __torch__.torch.classes.qplugin.Conv2dPackedParams""")

    def test_conv2d_relu(self):
        self.assertExpectedInline(schema("conv2d_relu"), """\
qplugin::conv2d_relu(Tensor qx, __torch__.torch.classes.qplugin.Conv2dPackedParams weight, int[] stride, int[] padding, int[] dilation, int groups, float output_scale, int output_zero_point) -> Tensor
qplugin::conv2d_relu.new(Tensor qx, __torch__.torch.classes.qplugin.Conv2dPackedParams packed_weight, float output_scale, int output_zero_point) -> Tensor""")

    def test_conv2d_unpack(self):
        self.assertExpectedInline(schema("conv2d_unpack"), """qplugin::conv2d_unpack(__torch__.torch.classes.qplugin.Conv2dPackedParams packed_weights) -> (Tensor unpacked_weights, Tensor? B_origin)""")

    def test_conv3d(self):
        self.assertExpectedInline(schema("conv3d"), """\
qplugin::conv3d(Tensor qx, __torch__.torch.classes.qplugin.Conv3dPackedParams weight, int[] stride, int[] padding, int[] dilation, int groups, float output_scale, int output_zero_point) -> Tensor
qplugin::conv3d.new(Tensor qx, __torch__.torch.classes.qplugin.Conv3dPackedParams packed_weight, float output_scale, int output_zero_point) -> Tensor""")

    def test_conv3d_prepack(self):
        self.assertExpectedInline(schema("conv3d_prepack"), """qplugin::conv3d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, int groups) -> __torch__.torch.classes.qplugin.Conv3dPackedParams""")

    def test_conv3d_relu(self):
        self.assertExpectedInline(schema("conv3d_relu"), """\
qplugin::conv3d_relu(Tensor qx, __torch__.torch.classes.qplugin.Conv3dPackedParams weight, int[] stride, int[] padding, int[] dilation, int groups, float output_scale, int output_zero_point) -> Tensor
qplugin::conv3d_relu.new(Tensor qx, __torch__.torch.classes.qplugin.Conv3dPackedParams packed_weight, float output_scale, int output_zero_point) -> Tensor""")

    def test_conv3d_unpack(self):
        self.assertExpectedInline(schema("conv3d_unpack"), """qplugin::conv3d_unpack(__torch__.torch.classes.qplugin.Conv3dPackedParams packed_weights) -> (Tensor unpacked_weights, Tensor? B_origin)""")

    def test_conv_transpose1d(self):
        self.assertExpectedInline(schema("conv_transpose1d"), """qplugin::conv_transpose1d(Tensor qx, __torch__.torch.classes.qplugin.Conv2dPackedParams packed_weight, float output_scale, int output_zero_point) -> Tensor""")

    def test_conv_transpose1d_prepack(self):
        self.assertExpectedInline(schema("conv_transpose1d_prepack"), """qplugin::conv_transpose1d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] output_padding, int[] dilation, int groups) -> __torch__.torch.classes.qplugin.Conv2dPackedParams""")

    def test_conv_transpose1d_unpack(self):
        self.assertExpectedInline(schema("conv_transpose1d_unpack"), """qplugin::conv_transpose1d_unpack(__torch__.torch.classes.qplugin.Conv2dPackedParams packed_weights) -> (Tensor unpacked_weights, Tensor? B_origin)""")

    def test_conv_transpose2d(self):
        self.assertExpectedInline(schema("conv_transpose2d"), """qplugin::conv_transpose2d(Tensor qx, __torch__.torch.classes.qplugin.Conv2dPackedParams packed_weight, float output_scale, int output_zero_point) -> Tensor""")

    def test_conv_transpose2d_prepack(self):
        self.assertExpectedInline(schema("conv_transpose2d_prepack"), """qplugin::conv_transpose2d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] output_padding, int[] dilation, int groups) -> __torch__.torch.classes.qplugin.Conv2dPackedParams""")

    def test_conv_transpose2d_unpack(self):
        self.assertExpectedInline(schema("conv_transpose2d_unpack"), """qplugin::conv_transpose2d_unpack(__torch__.torch.classes.qplugin.Conv2dPackedParams packed_weights) -> (Tensor unpacked_weights, Tensor? B_origin)""")

    def test_conv_transpose3d(self):
        self.assertExpectedInline(schema("conv_transpose3d"), """qplugin::conv_transpose3d(Tensor qx, __torch__.torch.classes.qplugin.Conv3dPackedParams packed_weight, float output_scale, int output_zero_point) -> Tensor""")

    def test_conv_transpose3d_prepack(self):
        self.assertExpectedInline(schema("conv_transpose3d_prepack"), """qplugin::conv_transpose3d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] output_padding, int[] dilation, int groups) -> __torch__.torch.classes.qplugin.Conv3dPackedParams""")

    def test_conv_transpose3d_unpack(self):
        self.assertExpectedInline(schema("conv_transpose3d_unpack"), """qplugin::conv_transpose3d_unpack(__torch__.torch.classes.qplugin.Conv3dPackedParams packed_weights) -> (Tensor unpacked_weights, Tensor? B_origin)""")

    def test_linear(self):
        self.assertExpectedInline(schema("linear"), """qplugin::linear(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParams W_prepack, float Y_scale_i, int Y_zero_point_i) -> Tensor Y""")

    def test_linear_prepack(self):
        self.assertExpectedInline(schema("linear_prepack"), """qplugin::linear_prepack(Tensor W, Tensor? B=None) -> __torch__.torch.classes.qplugin.LinearPackedParams W_prepack""")

    def test_linear_relu(self):
        self.assertExpectedInline(schema("linear_relu"), """qplugin::linear_relu(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParams W_prepack, float Y_scale_i, int Y_zero_point_i) -> Tensor Y""")

    def test_linear_dynamic(self):
        self.assertExpectedInline(schema("linear_dynamic"), """qplugin::linear_dynamic(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParams W_prepack, bool reduce_range=False) -> Tensor Y""")

    def test_linear_relu_dynamic(self):
        self.assertExpectedInline(schema("linear_relu_dynamic"), """qplugin::linear_relu_dynamic(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParams W_prepack, bool reduce_range=False) -> Tensor Y""")

    def test_linear_dynamic_fp16(self):
        self.assertExpectedInline(schema("linear_dynamic_fp16"), """qplugin::linear_dynamic_fp16(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 W_prepack) -> Tensor Y""")

    def test_linear_relu_dynamic_fp16(self):
        self.assertExpectedInline(schema("linear_relu_dynamic_fp16"), """qplugin::linear_relu_dynamic_fp16(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 W_prepack) -> Tensor Y""")

    def test_linear_prepack_fp16(self):
        self.assertExpectedInline(schema("linear_prepack_fp16"), """qplugin::linear_prepack_fp16(Tensor W, Tensor? B=None) -> __torch__.torch.classes.qplugin.LinearPackedParamsFp16 W_prepack""")

    def test_linear_unpack_fp16(self):
        self.assertExpectedInline(schema("linear_unpack_fp16"), """qplugin::linear_unpack_fp16(__torch__.torch.classes.qplugin.LinearPackedParamsFp16 W_prepack) -> (Tensor W_origin, Tensor? B_origin)""")

    def test_quantized_lstm_layer_dynamic(self):
        self.assertExpectedInline(schema("quantized_lstm_layer_dynamic"), """qplugin::quantized_lstm_layer_dynamic(Tensor input, Tensor? batch_sizes, Tensor h0, Tensor c0, __torch__.torch.classes.qplugin.LinearPackedParams w_ih, __torch__.torch.classes.qplugin.LinearPackedParams w_hh, bool reverse=False, bool reduce_range=True) -> (Tensor output, Tensor h_n, Tensor c_n)""")

    def test_quantized_gru_layer_dynamic(self):
        self.assertExpectedInline(schema("quantized_gru_layer_dynamic"), """qplugin::quantized_gru_layer_dynamic(Tensor input, Tensor? batch_sizes, Tensor h0, __torch__.torch.classes.qplugin.LinearPackedParams w_ih, __torch__.torch.classes.qplugin.LinearPackedParams w_hh, bool reverse=False, bool reduce_range=True) -> (Tensor output, Tensor h_n)""")

    def test_quantized_lstm_layer_dynamic_fp16(self):
        self.assertExpectedInline(schema("quantized_lstm_layer_dynamic_fp16"), """qplugin::quantized_lstm_layer_dynamic_fp16(Tensor input, Tensor? batch_sizes, Tensor h0, Tensor c0, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh, bool reverse=False) -> (Tensor output, Tensor h_n, Tensor c_n)""")

    def test_quantized_gru_layer_dynamic_fp16(self):
        self.assertExpectedInline(schema("quantized_gru_layer_dynamic_fp16"), """qplugin::quantized_gru_layer_dynamic_fp16(Tensor input, Tensor? batch_sizes, Tensor h0, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh, bool reverse=False) -> (Tensor output, Tensor h_n)""")

    def test_quantized_lstm_cell_dynamic(self):
        self.assertExpectedInline(schema("quantized_lstm_cell_dynamic"), """qplugin::quantized_lstm_cell_dynamic(Tensor input, Tensor[] hx, __torch__.torch.classes.qplugin.LinearPackedParams w_ih, __torch__.torch.classes.qplugin.LinearPackedParams w_hh, Tensor bias_ih, Tensor bias_hh) -> (Tensor, Tensor)""")

    def test_quantized_gru_cell_dynamic(self):
        self.assertExpectedInline(schema("quantized_gru_cell_dynamic"), """qplugin::quantized_gru_cell_dynamic(Tensor input, Tensor hx, __torch__.torch.classes.qplugin.LinearPackedParams w_ih, __torch__.torch.classes.qplugin.LinearPackedParams w_hh, Tensor b_ih, Tensor b_hh) -> Tensor""")

    def test_quantized_rnn_tanh_cell_dynamic(self):
        self.assertExpectedInline(schema("quantized_rnn_tanh_cell_dynamic"), """qplugin::quantized_rnn_tanh_cell_dynamic(Tensor input, Tensor hx, __torch__.torch.classes.qplugin.LinearPackedParams w_ih, __torch__.torch.classes.qplugin.LinearPackedParams w_hh, Tensor b_ih, Tensor b_hh) -> Tensor""")

    def test_quantized_rnn_relu_cell_dynamic(self):
        self.assertExpectedInline(schema("quantized_rnn_relu_cell_dynamic"), """qplugin::quantized_rnn_relu_cell_dynamic(Tensor input, Tensor hx, __torch__.torch.classes.qplugin.LinearPackedParams w_ih, __torch__.torch.classes.qplugin.LinearPackedParams w_hh, Tensor b_ih, Tensor b_hh) -> Tensor""")

    def test_quantized_lstm_cell_dynamic_fp16(self):
        self.assertExpectedInline(schema("quantized_lstm_cell_dynamic_fp16"), """qplugin::quantized_lstm_cell_dynamic_fp16(Tensor input, Tensor[] hx, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh, Tensor bias_ih, Tensor bias_hh) -> (Tensor, Tensor)""")

    def test_quantized_gru_cell_dynamic_fp16(self):
        self.assertExpectedInline(schema("quantized_gru_cell_dynamic_fp16"), """qplugin::quantized_gru_cell_dynamic_fp16(Tensor input, Tensor hx, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh, Tensor b_ih, Tensor b_hh) -> Tensor""")

    def test_quantized_rnn_tanh_cell_dynamic_fp16(self):
        self.assertExpectedInline(schema("quantized_rnn_tanh_cell_dynamic_fp16"), """qplugin::quantized_rnn_tanh_cell_dynamic_fp16(Tensor input, Tensor hx, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh, Tensor b_ih, Tensor b_hh) -> Tensor""")

    def test_quantized_rnn_relu_cell_dynamic_fp16(self):
        self.assertExpectedInline(schema("quantized_rnn_relu_cell_dynamic_fp16"), """qplugin::quantized_rnn_relu_cell_dynamic_fp16(Tensor input, Tensor hx, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh, Tensor b_ih, Tensor b_hh) -> Tensor""")

    def test_make_quantized_cell_params(self):
        self.assertExpectedInline(schema("make_quantized_cell_params"), """qplugin::make_quantized_cell_params(Tensor w_ih, Tensor w_hh, Tensor b_ih, Tensor b_hh) -> __torch__.torch.classes.qplugin.CellParams""")

    def test_make_quantized_cell_params_dynamic(self):
        self.assertExpectedInline(schema("make_quantized_cell_params_dynamic"), """qplugin::make_quantized_cell_params_dynamic(__torch__.torch.classes.qplugin.LinearPackedParams w_ih, __torch__.torch.classes.qplugin.LinearPackedParams w_hh, Tensor bias_ih, Tensor bias_hh, bool reduce_range=False) -> __torch__.torch.classes.qplugin.CellParams""")

    def test_make_quantized_cell_params_fp16(self):
        self.assertExpectedInline(schema("make_quantized_cell_params_fp16"), """qplugin::make_quantized_cell_params_fp16(__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh) -> __torch__.torch.classes.qplugin.CellParams""")

    def test_quantized_lstm(self):
        self.assertExpectedInline(schema("quantized_lstm"), """\
qplugin::quantized_lstm.data(Tensor data, Tensor batch_sizes, Tensor[] hx, __torch__.torch.classes.qplugin.CellParams[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, *, ScalarType? dtype=None, bool use_dynamic=False) -> (Tensor, Tensor, Tensor)
qplugin::quantized_lstm.input(Tensor input, Tensor[] hx, __torch__.torch.classes.qplugin.CellParams[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first, *, ScalarType? dtype=None, bool use_dynamic=False) -> (Tensor, Tensor, Tensor)""")

    def test_quantized_gru(self):
        self.assertExpectedInline(schema("quantized_gru"), """\
qplugin::quantized_gru.data(Tensor data, Tensor batch_sizes, Tensor hx, __torch__.torch.classes.qplugin.CellParams[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)
qplugin::quantized_gru.input(Tensor input, Tensor hx, __torch__.torch.classes.qplugin.CellParams[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)""")

    def test_conv1d_dynamic(self):
        self.assertExpectedInline(schema("conv1d_dynamic"), """qplugin::conv1d_dynamic(Tensor qx, __torch__.torch.classes.qplugin.Conv2dPackedParams packed_weight, bool reduce_range=False) -> Tensor""")

    def test_conv_transpose1d_dynamic(self):
        self.assertExpectedInline(schema("conv_transpose1d_dynamic"), """qplugin::conv_transpose1d_dynamic(Tensor qx, __torch__.torch.classes.qplugin.Conv2dPackedParams packed_weight, bool reduce_range=False) -> Tensor""")

    def test_conv2d_dynamic(self):
        self.assertExpectedInline(schema("conv2d_dynamic"), """qplugin::conv2d_dynamic(Tensor qx, __torch__.torch.classes.qplugin.Conv2dPackedParams packed_weight, bool reduce_range=False) -> Tensor""")

    def test_conv_transpose2d_dynamic(self):
        self.assertExpectedInline(schema("conv_transpose2d_dynamic"), """qplugin::conv_transpose2d_dynamic(Tensor qx, __torch__.torch.classes.qplugin.Conv2dPackedParams packed_weight, bool reduce_range=False) -> Tensor""")

    def test_conv3d_dynamic(self):
        self.assertExpectedInline(schema("conv3d_dynamic"), """qplugin::conv3d_dynamic(Tensor qx, __torch__.torch.classes.qplugin.Conv3dPackedParams packed_weight, bool reduce_range=False) -> Tensor""")

    def test_conv_transpose3d_dynamic(self):
        self.assertExpectedInline(schema("conv_transpose3d_dynamic"), """qplugin::conv_transpose3d_dynamic(Tensor qx, __torch__.torch.classes.qplugin.Conv3dPackedParams packed_weight, bool reduce_range=False) -> Tensor""")

    def test_linear_unpack(self):
        self.assertExpectedInline(schema("linear_unpack"), """qplugin::linear_unpack(__torch__.torch.classes.qplugin.LinearPackedParams W_prepack) -> (Tensor W_origin, Tensor? B_origin)""")

    def test__upsample_nearest_exact1d(self):
        self.assertExpectedInline(schema("_upsample_nearest_exact1d"), """qplugin::_upsample_nearest_exact1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor""")

    def test__upsample_nearest_exact2d(self):
        self.assertExpectedInline(schema("_upsample_nearest_exact2d"), """qplugin::_upsample_nearest_exact2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor""")

    def test__upsample_nearest_exact3d(self):
        self.assertExpectedInline(schema("_upsample_nearest_exact3d"), """qplugin::_upsample_nearest_exact3d(Tensor self, SymInt[3] output_size, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor""")

    def test_adaptive_avg_pool1d(self):
        self.assertExpectedInline(schema("adaptive_avg_pool1d"), """qplugin::adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor""")

    def test_adaptive_avg_pool2d(self):
        self.assertExpectedInline(schema("adaptive_avg_pool2d"), """qplugin::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor""")

    def test_adaptive_avg_pool3d(self):
        self.assertExpectedInline(schema("adaptive_avg_pool3d"), """qplugin::adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor""")

    def test_adaptive_max_pool2d(self):
        self.assertExpectedInline(schema("adaptive_max_pool2d"), """qplugin::adaptive_max_pool2d(Tensor self, int[2] output_size) -> Tensor""")

    def test_avg_pool1d(self):
        self.assertExpectedInline(schema("avg_pool1d"), """qplugin::avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], bool ceil_mode=False, bool count_include_pad=True) -> Tensor""")

    def test_avg_pool2d(self):
        self.assertExpectedInline(schema("avg_pool2d"), """qplugin::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor""")

    def test_avg_pool3d(self):
        self.assertExpectedInline(schema("avg_pool3d"), """qplugin::avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor""")

    def test_max_pool1d(self):
        self.assertExpectedInline(schema("max_pool1d"), """qplugin::max_pool1d(Tensor qx, int[] kernel_size, int[] stride, int[] padding, int[] dilation, bool ceil_mode) -> Tensor""")

    def test_max_pool2d(self):
        self.assertExpectedInline(schema("max_pool2d"), """qplugin::max_pool2d(Tensor qx, int[] kernel_size, int[] stride, int[] padding, int[] dilation, bool ceil_mode) -> Tensor""")

    def test_max_pool3d(self):
        self.assertExpectedInline(schema("max_pool3d"), """qplugin::max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> Tensor""")

    def test_upsample_bilinear2d(self):
        self.assertExpectedInline(schema("upsample_bilinear2d"), """qplugin::upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor""")

    def test_upsample_linear1d(self):
        self.assertExpectedInline(schema("upsample_linear1d"), """qplugin::upsample_linear1d(Tensor self, SymInt[1] output_size, bool align_corners, float? scales=None) -> Tensor""")

    def test_upsample_nearest1d(self):
        self.assertExpectedInline(schema("upsample_nearest1d"), """qplugin::upsample_nearest1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor""")

    def test_upsample_nearest2d(self):
        self.assertExpectedInline(schema("upsample_nearest2d"), """qplugin::upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor""")

    def test_upsample_nearest3d(self):
        self.assertExpectedInline(schema("upsample_nearest3d"), """qplugin::upsample_nearest3d(Tensor self, SymInt[3] output_size, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor""")

    def test_upsample_trilinear3d(self):
        self.assertExpectedInline(schema("upsample_trilinear3d"), """qplugin::upsample_trilinear3d(Tensor self, SymInt[3] output_size, bool align_corners, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor""")

    def test_layer_norm(self):
        self.assertExpectedInline(schema("layer_norm"), """qplugin::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps, float output_scale, int output_zero_point) -> Tensor""")

    def test_group_norm(self):
        self.assertExpectedInline(schema("group_norm"), """qplugin::group_norm(Tensor input, int num_groups, Tensor? weight, Tensor? bias, float eps, float output_scale, int output_zero_point) -> Tensor""")

    def test_instance_norm(self):
        self.assertExpectedInline(schema("instance_norm"), """qplugin::instance_norm(Tensor input, Tensor? weight, Tensor? bias, float eps, float output_scale, int output_zero_point) -> Tensor""")

    def test_quantized_batch_norm(self):
        self.assertExpectedInline(schema("quantized_batch_norm"), """qplugin::quantized_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, int output_zero_point) -> Tensor""")

    def test_batch_norm(self):
        self.assertExpectedInline(schema("batch_norm"), """qplugin::batch_norm(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, int output_zero_point) -> Tensor""")

    def test_batch_norm1d(self):
        self.assertExpectedInline(schema("batch_norm1d"), """qplugin::batch_norm1d(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, int output_zero_point) -> Tensor""")

    def test_batch_norm2d(self):
        self.assertExpectedInline(schema("batch_norm2d"), """qplugin::batch_norm2d(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, int output_zero_point) -> Tensor""")

    def test_batch_norm3d(self):
        self.assertExpectedInline(schema("batch_norm3d"), """qplugin::batch_norm3d(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, int output_zero_point) -> Tensor""")

    def test_batch_norm_relu(self):
        self.assertExpectedInline(schema("batch_norm_relu"), """qplugin::batch_norm_relu(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, int output_zero_point) -> Tensor""")

    def test_batch_norm1d_relu(self):
        self.assertExpectedInline(schema("batch_norm1d_relu"), """qplugin::batch_norm1d_relu(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, int output_zero_point) -> Tensor""")

    def test_batch_norm2d_relu(self):
        self.assertExpectedInline(schema("batch_norm2d_relu"), """qplugin::batch_norm2d_relu(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, int output_zero_point) -> Tensor""")

    def test_batch_norm3d_relu(self):
        self.assertExpectedInline(schema("batch_norm3d_relu"), """qplugin::batch_norm3d_relu(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, int output_zero_point) -> Tensor""")

    def test_add_out(self):
        self.assertExpectedInline(schema("add_out"), """qplugin::add_out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out""")

    def test_add_relu_out(self):
        self.assertExpectedInline(schema("add_relu_out"), """qplugin::add_relu_out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out""")

    def test_mul_out(self):
        self.assertExpectedInline(schema("mul_out"), """qplugin::mul_out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out""")

    def test_mul_relu_out(self):
        self.assertExpectedInline(schema("mul_relu_out"), """qplugin::mul_relu_out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out""")

    def test_cat(self):
        self.assertExpectedInline(schema("cat"), """qplugin::cat(Tensor[] qx, int dim, float? scale, int? zero_point) -> Tensor""")

    def test_cat_relu(self):
        self.assertExpectedInline(schema("cat_relu"), """qplugin::cat_relu(Tensor[] qx, int dim, float? scale, int? zero_point) -> Tensor""")

    def test_cat_out(self):
        self.assertExpectedInline(schema("cat_out"), """qplugin::cat_out(Tensor[] qx, int dim, Tensor(a!) out) -> Tensor(a!)""")

    def test_cat_relu_out(self):
        self.assertExpectedInline(schema("cat_relu_out"), """qplugin::cat_relu_out(Tensor[] qx, int dim, Tensor(a!) out) -> Tensor(a!)""")

    def test_add(self):
        self.assertExpectedInline(schema("add"), """\
qplugin::add.Scalar(Tensor qa, Scalar b) -> Tensor qc
qplugin::add.Scalar2(Scalar b, Tensor qa) -> Tensor qc
qplugin::add.Scalar_out(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out
qplugin::add(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc
qplugin::add.out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out""")

    def test_add_relu(self):
        self.assertExpectedInline(schema("add_relu"), """\
qplugin::add_relu.Scalar(Tensor qa, Scalar b) -> Tensor qc
qplugin::add_relu.Scalar2(Scalar b, Tensor qa) -> Tensor qc
qplugin::add_relu.Scalar_out(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out
qplugin::add_relu(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc
qplugin::add_relu.out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out""")

    def test_mul(self):
        self.assertExpectedInline(schema("mul"), """\
qplugin::mul.Scalar(Tensor qa, Scalar b) -> Tensor qc
qplugin::mul.Scalar2(Scalar b, Tensor qa) -> Tensor qc
qplugin::mul.Scalar_out(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out
qplugin::mul(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc
qplugin::mul.out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out""")

    def test_mul_relu(self):
        self.assertExpectedInline(schema("mul_relu"), """\
qplugin::mul_relu.Scalar(Tensor qa, Scalar b) -> Tensor qc
qplugin::mul_relu.Scalar2(Scalar b, Tensor qa) -> Tensor qc
qplugin::mul_relu.Scalar_out(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out
qplugin::mul_relu(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc
qplugin::mul_relu.out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out""")

    def test_add_scalar(self):
        self.assertExpectedInline(schema("add_scalar"), """\
qplugin::add_scalar.Tensor(Tensor qa, Tensor b) -> Tensor qc
qplugin::add_scalar(Tensor qa, Scalar b) -> Tensor qc""")

    def test_add_scalar_relu(self):
        self.assertExpectedInline(schema("add_scalar_relu"), """\
qplugin::add_scalar_relu.Tensor(Tensor qa, Tensor b) -> Tensor qc
qplugin::add_scalar_relu(Tensor qa, Scalar b) -> Tensor qc""")

    def test_add_scalar_out(self):
        self.assertExpectedInline(schema("add_scalar_out"), """\
qplugin::add_scalar_out.Tensor(Tensor qa, Tensor b, Tensor(a!) out) -> Tensor(a!) out
qplugin::add_scalar_out(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out""")

    def test_add_scalar_relu_out(self):
        self.assertExpectedInline(schema("add_scalar_relu_out"), """\
qplugin::add_scalar_relu_out.Tensor(Tensor qa, Tensor b, Tensor(a!) out) -> Tensor(a!) out
qplugin::add_scalar_relu_out(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out""")

    def test_mul_scalar(self):
        self.assertExpectedInline(schema("mul_scalar"), """\
qplugin::mul_scalar.Tensor(Tensor qa, Tensor b) -> Tensor qc
qplugin::mul_scalar(Tensor qa, Scalar b) -> Tensor qc""")

    def test_mul_scalar_relu(self):
        self.assertExpectedInline(schema("mul_scalar_relu"), """\
qplugin::mul_scalar_relu.Tensor(Tensor qa, Tensor b) -> Tensor qc
qplugin::mul_scalar_relu(Tensor qa, Scalar b) -> Tensor qc""")

    def test_mul_scalar_out(self):
        self.assertExpectedInline(schema("mul_scalar_out"), """\
qplugin::mul_scalar_out.Tensor(Tensor qa, Tensor b, Tensor(a!) out) -> Tensor(a!) out
qplugin::mul_scalar_out(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out""")

    def test_mul_scalar_relu_out(self):
        self.assertExpectedInline(schema("mul_scalar_relu_out"), """\
qplugin::mul_scalar_relu_out.Tensor(Tensor qa, Tensor b, Tensor(a!) out) -> Tensor(a!) out
qplugin::mul_scalar_relu_out(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out""")

    def test_linear_leaky_relu(self):
        self.assertExpectedInline(schema("linear_leaky_relu"), """qplugin::linear_leaky_relu(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParams W_prepack, float Y_scale_i, int Y_zero_point_i, float negative_slope) -> Tensor Y""")

    def test_linear_tanh(self):
        self.assertExpectedInline(schema("linear_tanh"), """qplugin::linear_tanh(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParams W_prepack, float Y_scale_i, int Y_zero_point_i) -> Tensor Y""")

    def test_prelu(self):
        self.assertExpectedInline(schema("prelu"), """qplugin::prelu(Tensor qx, Tensor weight, float output_scale, int output_zero_point) -> Tensor""")

    def test_conv2d_add(self):
        self.assertExpectedInline(schema("conv2d_add"), """qplugin::conv2d_add(Tensor qx, Tensor qaccum, __torch__.torch.classes.qplugin.Conv2dPackedParams packed_weight, float output_scale, int output_zero_point) -> Tensor""")

    def test_conv2d_add_relu(self):
        self.assertExpectedInline(schema("conv2d_add_relu"), """qplugin::conv2d_add_relu(Tensor qx, Tensor qaccum, __torch__.torch.classes.qplugin.Conv2dPackedParams packed_weight, float output_scale, int output_zero_point) -> Tensor""")

    def test_matmul(self):
        self.assertExpectedInline(schema("matmul"), """qplugin::matmul(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc""")

    def test_cpu_isa(self):
        self.assertExpectedInline(schema("_cpu_isa"), """qplugin::_cpu_isa() -> str""")

    def test_detected_cpu_isa(self):
        self.assertExpectedInline(schema("_detected_cpu_isa"), """qplugin::_detected_cpu_isa() -> str""")

    def test_set_cpu_isa(self):
        self.assertExpectedInline(schema("_set_cpu_isa"), """qplugin::_set_cpu_isa(str isa) -> str""")

    def test_build_torch_version(self):
        self.assertExpectedInline(schema("_build_torch_version"), """qplugin::_build_torch_version() -> str""")


def test_every_op_is_pinned():
    """Every qplugin op has a pinned schema above (and a mirror or is private): a new op must be
    added here."""
    # Packets with PT2-door overloads only (quantize_per_tensor, dequantize) are pinned in
    # tests/pt2/schemas/ (test_plain_schemas.py).
    registered = {s.name.split("::", 1)[1] for s in torch._C._jit_get_all_schemas()
                  if s.name.startswith("qplugin::") and not _is_plain(s.overload_name)
                  and not s.name.startswith("qplugin::_rt_")}  # test_router.py's test-only ops
    pinned = {name[len("test_"):] for name in dir(TestSchemas) if name.startswith("test_")}
    pinned = {"_" + n if "_" + n in PRIVATE else n for n in pinned} | TABLE_OPS
    assert registered == pinned, (
        f"not pinned: {sorted(registered - pinned)}; pinned but not registered: "
        f"{sorted(pinned - registered)}")
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
