"""Route rows of the linear ops (docs/pt2.md section 3): legacy overload -> `.plain` overload;
the output qparams are the ops' explicit (Y_scale_i, Y_zero_point_i), uint8 codes."""
from .._route import Route, given

_OUT = given("Y_scale_i", "Y_zero_point_i")

ROUTES = [
    Route("linear", "linear.plain", _OUT),
    Route("linear_relu", "linear_relu.plain", _OUT),
    Route("linear_leaky_relu", "linear_leaky_relu.plain", _OUT),
    Route("linear_tanh", "linear_tanh.plain", _OUT),
]
