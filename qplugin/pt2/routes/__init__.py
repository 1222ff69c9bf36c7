"""Route rows of the PT2 door, one module per op family (each defines `ROUTES`, a list of
`qplugin.pt2._route.Route`); `all_routes()` collects every module in this package."""
import importlib
import pkgutil

__all__ = ["all_routes"]


def all_routes():
    rows = []
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        rows.extend(importlib.import_module(f"{__name__}.{m.name}").ROUTES)
    return rows
