"""Routes of the layer/group/instance-norm ops (csrc/ops/normalization.cpp): the output qparams
are the op's output_scale / output_zero_point, its codes the input's dtype."""
from .._route import Route, given

ROUTES = [
    Route(op, f"{op}.plain", given("output_scale", "output_zero_point", dtype="input:input"))
    for op in ("layer_norm", "group_norm", "instance_norm")
]
