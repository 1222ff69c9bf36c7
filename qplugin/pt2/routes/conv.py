"""Route rows of the conv ops (docs/pt2.md section 3): the `.new` overloads (and the 1-d and
transposed default overloads, and conv2d_add[_relu], whose qaccum gets its own qparams) ->
`.plain`; the deprecated default conv2d/conv3d overloads get none. Output qparams: the explicit
(output_scale, output_zero_point), uint8 codes."""
from .._route import given, to_plain

ROUTES = to_plain(
    ("conv1d", "conv1d_relu", "conv2d.new", "conv2d_relu.new", "conv3d.new", "conv3d_relu.new",
     "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv2d_add",
     "conv2d_add_relu"),
    given("output_scale", "output_zero_point"))
