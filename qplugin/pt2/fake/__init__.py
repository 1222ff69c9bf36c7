"""Fake (meta) kernels of the `.plain` overloads and fake classes of the packed-params objects,
one module per op family; importing this package registers all of them (every submodule is
imported)."""
import importlib
import pkgutil

for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    importlib.import_module(f"{__name__}.{_m.name}")
