# Pins every torch.ops.qplugin schema (a change shows up in review) and checks that each public op
# mirrors PyTorch's schema: same argument names, types, defaults and returns as
# torch.ops.quantized.X / aten::quantized_batch_norm, modulo the namespace.
# Changes with: csrc/ops/*.cpp (the schemas). Refill: EXPECTTEST_ACCEPT=1 python -m pytest <this>.
import expecttest
import pytest
import torch


def schema(name):
    return str(getattr(torch.ops.qplugin, name).default._schema)


# op -> the PyTorch op it mirrors.
MIRRORS = {
    "quantized_batch_norm": torch.ops.aten.quantized_batch_norm,
    "batch_norm": torch.ops.quantized.batch_norm,
    "batch_norm1d": torch.ops.quantized.batch_norm1d,
    "batch_norm2d": torch.ops.quantized.batch_norm2d,
    "batch_norm3d": torch.ops.quantized.batch_norm3d,
    "batch_norm_relu": torch.ops.quantized.batch_norm_relu,
    "batch_norm1d_relu": torch.ops.quantized.batch_norm1d_relu,
    "batch_norm2d_relu": torch.ops.quantized.batch_norm2d_relu,
    "batch_norm3d_relu": torch.ops.quantized.batch_norm3d_relu,
    "relu6": torch.ops.quantized.relu6,
    "hardswish": torch.ops.quantized.hardswish,
    "elu": torch.ops.quantized.elu,
    "layer_norm": torch.ops.quantized.layer_norm,
    "group_norm": torch.ops.quantized.group_norm,
    "instance_norm": torch.ops.quantized.instance_norm,
    # elementwise (issue 6)
    "add_out": torch.ops.quantized.add_out,
    "add_relu_out": torch.ops.quantized.add_relu_out,
    "mul_out": torch.ops.quantized.mul_out,
    "mul_relu_out": torch.ops.quantized.mul_relu_out,
    "cat": torch.ops.quantized.cat,
    "cat_relu": torch.ops.quantized.cat_relu,
    "cat_out": torch.ops.quantized.cat_out,
    "cat_relu_out": torch.ops.quantized.cat_relu_out,
    "leaky_relu": torch.ops.quantized.leaky_relu,
    "sigmoid": torch.ops.quantized.sigmoid,
    "celu": torch.ops.quantized.celu,
    "threshold": torch.ops.quantized.threshold,
    "clamp": torch.ops.quantized.clamp,
    "softmax": torch.ops.quantized.softmax,
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
# Extensions: no PyTorch counterpart in torch.ops.quantized (docs/deviations_elementwise.md).
EXTENSIONS = ("hardsigmoid", "tanh", "gelu", "silu", "mish", "softplus")
# Library-level ops with no PyTorch counterpart (leading underscore: private).
PRIVATE = ("_cpu_isa", "_detected_cpu_isa", "_set_cpu_isa", "_build_torch_version")


class TestSchemas(expecttest.TestCase):
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

    def test_relu6(self):
        self.assertExpectedInline(schema("relu6"), """qplugin::relu6(Tensor qx, bool inplace=False) -> Tensor""")

    def test_hardswish(self):
        self.assertExpectedInline(schema("hardswish"), """qplugin::hardswish(Tensor input, float output_scale, int output_zero_point) -> Tensor""")

    def test_elu(self):
        self.assertExpectedInline(schema("elu"), """qplugin::elu(Tensor self, float output_scale, int output_zero_point, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor""")

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

    def test_leaky_relu(self):
        self.assertExpectedInline(schema("leaky_relu"), """qplugin::leaky_relu(Tensor qx, Scalar negative_slope, bool inplace, float output_scale, int output_zero_point) -> Tensor""")

    def test_sigmoid(self):
        self.assertExpectedInline(schema("sigmoid"), """qplugin::sigmoid(Tensor qx, float output_scale, int output_zero_point) -> Tensor""")

    def test_celu(self):
        self.assertExpectedInline(schema("celu"), """qplugin::celu(Tensor self, float output_scale, int output_zero_point, Scalar alpha=1) -> Tensor""")

    def test_threshold(self):
        self.assertExpectedInline(schema("threshold"), """qplugin::threshold(Tensor qx, Scalar threshold, Scalar value) -> Tensor qy""")

    def test_clamp(self):
        self.assertExpectedInline(schema("clamp"), """qplugin::clamp(Tensor qx, Scalar? min=None, Scalar? max=None) -> Tensor qy""")

    def test_softmax(self):
        self.assertExpectedInline(schema("softmax"), """qplugin::softmax(Tensor qx, int dim, float output_scale, int output_zero_point) -> Tensor""")

    def test_add(self):
        self.assertExpectedInline(schema("add"), """qplugin::add(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc""")

    def test_add_relu(self):
        self.assertExpectedInline(schema("add_relu"), """qplugin::add_relu(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc""")

    def test_mul(self):
        self.assertExpectedInline(schema("mul"), """qplugin::mul(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc""")

    def test_mul_relu(self):
        self.assertExpectedInline(schema("mul_relu"), """qplugin::mul_relu(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc""")

    def test_add_scalar(self):
        self.assertExpectedInline(schema("add_scalar"), """qplugin::add_scalar(Tensor qa, Scalar b) -> Tensor qc""")

    def test_add_scalar_relu(self):
        self.assertExpectedInline(schema("add_scalar_relu"), """qplugin::add_scalar_relu(Tensor qa, Scalar b) -> Tensor qc""")

    def test_add_scalar_out(self):
        self.assertExpectedInline(schema("add_scalar_out"), """qplugin::add_scalar_out(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out""")

    def test_add_scalar_relu_out(self):
        self.assertExpectedInline(schema("add_scalar_relu_out"), """qplugin::add_scalar_relu_out(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out""")

    def test_mul_scalar(self):
        self.assertExpectedInline(schema("mul_scalar"), """qplugin::mul_scalar(Tensor qa, Scalar b) -> Tensor qc""")

    def test_mul_scalar_relu(self):
        self.assertExpectedInline(schema("mul_scalar_relu"), """qplugin::mul_scalar_relu(Tensor qa, Scalar b) -> Tensor qc""")

    def test_mul_scalar_out(self):
        self.assertExpectedInline(schema("mul_scalar_out"), """qplugin::mul_scalar_out(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out""")

    def test_mul_scalar_relu_out(self):
        self.assertExpectedInline(schema("mul_scalar_relu_out"), """qplugin::mul_scalar_relu_out(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out""")

    def test_hardsigmoid(self):
        self.assertExpectedInline(schema("hardsigmoid"), """qplugin::hardsigmoid(Tensor qx, float? output_scale=None, int? output_zero_point=None) -> Tensor""")

    def test_tanh(self):
        self.assertExpectedInline(schema("tanh"), """qplugin::tanh(Tensor qx, float? output_scale=None, int? output_zero_point=None) -> Tensor""")

    def test_gelu(self):
        self.assertExpectedInline(schema("gelu"), """qplugin::gelu(Tensor qx, float? output_scale=None, int? output_zero_point=None, str approximate="none") -> Tensor""")

    def test_silu(self):
        self.assertExpectedInline(schema("silu"), """qplugin::silu(Tensor qx, float output_scale, int output_zero_point) -> Tensor""")

    def test_mish(self):
        self.assertExpectedInline(schema("mish"), """qplugin::mish(Tensor qx, float output_scale, int output_zero_point) -> Tensor""")

    def test_softplus(self):
        self.assertExpectedInline(schema("softplus"), """qplugin::softplus(Tensor qx, float output_scale, int output_zero_point, Scalar beta=1, Scalar threshold=20) -> Tensor""")

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
    registered = {s.name.split("::", 1)[1] for s in torch._C._jit_get_all_schemas()
                  if s.name.startswith("qplugin::")}
    pinned = {name[len("test_"):] for name in dir(TestSchemas) if name.startswith("test_")}
    pinned = {"_" + n if "_" + n in PRIVATE else n for n in pinned}
    assert registered == pinned, (
        f"not pinned: {sorted(registered - pinned)}; pinned but not registered: "
        f"{sorted(pinned - registered)}")
    assert registered == set(MIRRORS) | set(PRIVATE) | set(OVERLOADED_MIRRORS) | set(EXTENSIONS)


def _arg(a):
    return (a.name, str(a.type), a.has_default_value(), a.default_value, a.kwarg_only, a.is_out,
            a.is_write, a.alias_info is None)


@pytest.mark.parametrize("name", list(MIRRORS))
def test_mirrors_pytorch_schema(name):
    ours = getattr(torch.ops.qplugin, name).default._schema
    theirs = MIRRORS[name].default._schema
    assert ours.name.split("::", 1)[1] == theirs.name.split("::", 1)[1]
    assert ours.overload_name == theirs.overload_name
    assert [_arg(a) for a in ours.arguments] == [_arg(a) for a in theirs.arguments]
    assert [_arg(a) for a in ours.returns] == [_arg(a) for a in theirs.returns]
    assert ours.is_mutable == theirs.is_mutable
    # The whole string, modulo the namespace.
    assert str(ours).split("::", 1)[1] == str(theirs).split("::", 1)[1]


@pytest.mark.parametrize("name", list(MIRRORS) + list(PRIVATE))
def test_registered_only_as_default_overload(name):
    assert getattr(torch.ops.qplugin, name).overloads() == ["default"]


@pytest.mark.parametrize("name", list(OVERLOADED_MIRRORS))
def test_overloaded_mirrors_pytorch_schemas(name):
    ours = getattr(torch.ops.qplugin, name)
    theirs = OVERLOADED_MIRRORS[name]
    assert ours.overloads() == theirs.overloads()
    for o in ours.overloads():
        assert (str(getattr(ours, o)._schema).split("::", 1)[1]
                == str(getattr(theirs, o)._schema).split("::", 1)[1])


@pytest.mark.parametrize("name", list(EXTENSIONS))
def test_extensions_have_one_overload(name):
    assert getattr(torch.ops.qplugin, name).overloads() == ["default"]
