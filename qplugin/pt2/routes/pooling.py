"""Routes of the pooling ops (csrc/ops/pooling.cpp): every output keeps its input's qparams."""
from .._route import same_as_input, to_plain

ROUTES = to_plain(("max_pool1d", "max_pool2d"), same_as_input("qx")) + to_plain(
    ("max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
     "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool2d"), same_as_input("self"))
