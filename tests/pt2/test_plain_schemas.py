# Pins the schema of every PT2-door overload (`.plain`, `.<ov>_plain`; docs/pt2.md section 3):
# tests/pt2/schemas/<family>.txt hold one schema per line. Both directions are checked, so a
# new plain overload that is not pinned fails as well as a pinned one that changed or vanished.
# Changes with: csrc/ops/*.cpp (the schemas), tests/pt2/schemas/*.txt.
import os
import pathlib

import pytest
import torch

import qplugin  # noqa: F401  (registers the ops)

SCHEMAS = pathlib.Path(__file__).parent / "schemas"


def _is_plain(overload):
    return overload == "plain" or overload.endswith("_plain")


def registered():
    """qualified name ("qplugin::op.overload") -> schema string, for every plain overload."""
    # From the dispatcher's registry: dir(torch.ops.qplugin) lists only the ops already looked
    # up in this process, so it is empty at import time (a refill then dropped every line).
    out = {}
    for schema in torch._C._jit_get_all_schemas():
        # "qplugin::_rt_*": test-only ops test_router.py defines from Python.
        if (schema.name.startswith("qplugin::") and not schema.name.startswith("qplugin::_rt_")
                and _is_plain(schema.overload_name)):
            out[f"{schema.name}.{schema.overload_name}"] = str(schema)
    return out


def _key(line):
    return line.split("(", 1)[0]


def pinned():
    """family -> list of schema lines."""
    return {f.stem: [ln for ln in f.read_text().splitlines() if ln.strip()]
            for f in sorted(SCHEMAS.glob("*.txt"))}


def _refill(family):
    f = SCHEMAS / f"{family}.txt"
    reg = registered()
    lines = [reg[_key(ln)] for ln in (f.read_text().splitlines() if f.exists() else [])
             if ln.strip() and _key(ln) in reg]
    f.write_text("".join(ln + "\n" for ln in sorted(set(lines))))


if os.environ.get("QPLUGIN_PIN_PLAIN"):
    _refill(os.environ["QPLUGIN_PIN_PLAIN"])


def test_every_plain_overload_is_pinned():
    have = {_key(ln) for lines in pinned().values() for ln in lines}
    missing = sorted(set(registered()) - have)
    assert not missing, f"plain overloads not pinned in tests/pt2/schemas/*.txt: {missing}"


@pytest.mark.parametrize("family", sorted(pinned()) or ["(none)"])
def test_pinned_schemas(family):
    reg = registered()
    for line in pinned().get(family, []):
        assert _key(line) in reg, f"{family}.txt pins {_key(line)}, which is not registered"
        assert reg[_key(line)] == line


def test_no_overload_pinned_twice():
    keys = [_key(ln) for lines in pinned().values() for ln in lines]
    assert len(keys) == len(set(keys))
