"""Routes of the pooling ops (csrc/ops/pooling.cpp): every output keeps its input's qparams."""
from .._route import Route, same_as_input

ROUTES = [
    Route("max_pool1d", "max_pool1d.plain", same_as_input("qx")),
    Route("max_pool2d", "max_pool2d.plain", same_as_input("qx")),
] + [
    Route(op, f"{op}.plain", same_as_input("self"))
    for op in ("max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
               "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool2d")
]
