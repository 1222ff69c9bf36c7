"""Routes of the resampling ops (csrc/ops/upsample.cpp): every output keeps its input's
qparams."""
from .._route import same_as_input, to_plain

ROUTES = to_plain(("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
                   "_upsample_nearest_exact1d", "_upsample_nearest_exact2d",
                   "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d",
                   "upsample_trilinear3d"), same_as_input("self"))
