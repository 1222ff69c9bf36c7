"""Route of quantized matmul to its PT2-door overload (docs/pt2.md section 3)."""
from .._route import Route, given

ROUTES = [
    Route("matmul", "matmul.plain", given("scale", "zero_point", dtype="input:qa")),
]
