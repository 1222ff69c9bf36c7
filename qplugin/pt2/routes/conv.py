"""Route rows of the conv ops (docs/pt2.md section 3): the `.new` overloads (and the 1-d and
transposed default overloads) -> `.plain`; the deprecated default conv2d/conv3d overloads get
none. Output qparams: the explicit (output_scale, output_zero_point), uint8 codes.
conv2d_add / conv2d_add_relu: rows for their `.plain` overloads (qx and qaccum each followed by
their qparams, per the convention); the router skips a row whose `.plain` is not registered, so
they take effect with the C++ overload (tests/pt2/test_pt2_module_sweep.py then runs ConvAdd2d /
ConvAddReLU2d instead of skipping them)."""
from .._route import Route, given

_OUT = given("output_scale", "output_zero_point")

ROUTES = [
    Route("conv1d", "conv1d.plain", _OUT),
    Route("conv1d_relu", "conv1d_relu.plain", _OUT),
    Route("conv2d.new", "conv2d.plain", _OUT),
    Route("conv2d_relu.new", "conv2d_relu.plain", _OUT),
    Route("conv3d.new", "conv3d.plain", _OUT),
    Route("conv3d_relu.new", "conv3d_relu.plain", _OUT),
    Route("conv_transpose1d", "conv_transpose1d.plain", _OUT),
    Route("conv_transpose2d", "conv_transpose2d.plain", _OUT),
    Route("conv_transpose3d", "conv_transpose3d.plain", _OUT),
    Route("conv2d_add", "conv2d_add.plain", _OUT),
    Route("conv2d_add_relu", "conv2d_add_relu.plain", _OUT),
]
