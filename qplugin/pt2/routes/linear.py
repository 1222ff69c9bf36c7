"""Route rows of the linear ops (docs/pt2.md section 3): legacy overload -> `.plain` overload;
the output qparams are the ops' explicit (Y_scale_i, Y_zero_point_i), uint8 codes."""
from .._route import given, to_plain

ROUTES = to_plain(("linear", "linear_relu", "linear_leaky_relu", "linear_tanh"),
                  given("Y_scale_i", "Y_zero_point_i"))
