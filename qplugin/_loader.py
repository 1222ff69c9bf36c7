"""Loads the qplugin operator library (qplugin/_C*.so) into torch.ops.qplugin.

The library has no PyInit: it is never imported, only loaded with torch.ops.load_library, so the
same file can be loaded by a C++ program (tools/loader).
"""
import glob
import json
import os

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
_REBUILD = ("rebuild qplugin against the running torch: "
            "pip install --no-build-isolation --force-reinstall --no-deps . "
            "(or python setup.py build_ext --inplace in a checkout)")


def _built_for():
    try:
        with open(os.path.join(_HERE, "_build_info.json")) as f:
            return json.load(f).get("torch_version", "unknown")
    except OSError:
        return "unknown"


def library_path():
    """Path of the compiled operator library."""
    libs = sorted(glob.glob(os.path.join(_HERE, "_C*.so")))
    if not libs:
        raise ImportError(
            f"qplugin: the operator library (qplugin/_C*.so) is not built; torch {torch.__version__}"
            f" is running. Build it: {_REBUILD}")
    return libs[0]


def load():
    path = library_path()
    try:
        torch.ops.load_library(path)
    except OSError as e:
        raise ImportError(
            f"qplugin: could not load {path}: {e}. It was built for torch {_built_for()}, the "
            f"running torch is {torch.__version__}; {_REBUILD}") from e
    _assert_has_ops()
    return path


def _assert_has_ops():
    try:
        torch.ops.qplugin._cpu_isa.default
    except (AttributeError, RuntimeError) as e:
        raise ImportError(
            f"qplugin: the operator library loaded but registered no qplugin ops. It was built for"
            f" torch {_built_for()}, the running torch is {torch.__version__}; {_REBUILD}") from e
