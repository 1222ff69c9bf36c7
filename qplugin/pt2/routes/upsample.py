"""Routes of the resampling ops (csrc/ops/upsample.cpp): every output keeps its input's
qparams."""
from .._route import Route, same_as_input

ROUTES = [
    Route(op, f"{op}.plain", same_as_input("self"))
    for op in ("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
               "_upsample_nearest_exact1d", "_upsample_nearest_exact2d",
               "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d",
               "upsample_trilinear3d")
]
