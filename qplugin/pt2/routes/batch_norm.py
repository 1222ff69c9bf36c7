"""Route rows of the batch-norm ops (docs/pt2.md section 3): every op takes its output qparams
(`output_scale`, `output_zero_point`, required, as PyTorch's); the output codes have the input's
dtype."""
from .._route import Route, given

__all__ = ["ROUTES"]

ROUTES = [Route(legacy="quantized_batch_norm", plain="quantized_batch_norm.plain",
                out=given("output_scale", "output_zero_point", dtype="input:input"))]
ROUTES += [Route(legacy=f"batch_norm{rank}{relu}", plain=f"batch_norm{rank}{relu}.plain",
                 out=given("output_scale", "output_zero_point", dtype="input:qx"))
           for rank in ("", "1d", "2d", "3d") for relu in ("", "_relu")]
