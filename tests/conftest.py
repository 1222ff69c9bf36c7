# pytest setup for qplugin: import the in-place build, pin the oracle's engine, the `isa` fixture,
# seeding and seed reporting. Changes with: tests/_sweeps.py (seeds, draws), tests/_reference.py.
import os
import random
import sys

_TESTS = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_TESTS)
# The repo root first, so `import qplugin` finds the in-place build (qplugin/_C.abi3.so) rather
# than an installed copy; tests/ next, so tests in subfolders can import _reference and _sweeps.
# The family folders holding shared helpers (_models.py, _emb_common.py, _pool_testutil.py, ...)
# after them, so a test imports a helper of another folder by its name; no test file edits
# sys.path.
sys.path.insert(0, _ROOT)
if _TESTS not in sys.path:
    sys.path.insert(1, _TESTS)
for _entry in sorted(os.listdir(_TESTS)):
    _folder = os.path.join(_TESTS, _entry)
    if (os.path.isdir(_folder) and _folder not in sys.path
            and any(n.startswith("_") and n.endswith(".py") for n in os.listdir(_folder))):
        sys.path.append(_folder)

import pytest  # noqa: E402
import torch  # noqa: E402

import _block_torch_ao  # noqa: E402

# Legacy-blocked mode (QPLUGIN_BLOCK_TORCH_AO=1): torch.ao's quantization stack and
# torch.ops.quantized are made unimportable before qplugin is imported (tests/_block_torch_ao.py).
if _block_torch_ao.BLOCKED:
    _block_torch_ao.install()

import qplugin  # noqa: E402,F401
import _sweeps  # noqa: E402

# The oracle: PyTorch's own quantized ops on the x86 engine (DESIGN.md, "Numerics contract").
if not _block_torch_ao.BLOCKED:
    torch.backends.quantized.engine = "x86"

ISAS = ("scalar", "avx2", "avx512vnni")
# The ISA in use when the session starts: the detected one, lowered by QPLUGIN_CPU_ISA if set.
# QPLUGIN_CPU_ISA is a ceiling for the whole process (_set_cpu_isa cannot go above it), so a
# scalar-only CI job (QPLUGIN_CPU_ISA=scalar) skips every other `isa` case.
SESSION_ISA = torch.ops.qplugin._cpu_isa()


def pytest_configure(config):
    # Every quantized tensor the tests build triggers PyTorch's deprecation notice (issue
    # 184982): it is the reason qplugin exists, not news.
    config.addinivalue_line(
        "filterwarnings",
        "ignore:torch.quantize_per_tensor, torch.quantize_per_channel and other quantized "
        "tensor creation functions:UserWarning")


def seed_all(seed):
    """Seeds Python's and torch's global generators; returns the seed."""
    random.seed(seed)
    torch.manual_seed(seed)
    return seed


@pytest.fixture(params=ISAS)
def isa(request):
    """Runs the test with each kernel ISA; skips when the CPU (or QPLUGIN_CPU_ISA) lacks it."""
    want = request.param
    try:
        got = torch.ops.qplugin._set_cpu_isa(want)
        if got != want:
            pytest.skip(f"ISA {want} unavailable (CPU or QPLUGIN_CPU_ISA): _set_cpu_isa('{want}') "
                        f"gave '{got}'")
        yield got
    finally:
        torch.ops.qplugin._set_cpu_isa("auto")


@pytest.fixture(autouse=True)
def _isa_guard():
    """No test leaks an ISA choice into the next one."""
    yield
    if torch.ops.qplugin._cpu_isa() != SESSION_ISA:
        torch.ops.qplugin._set_cpu_isa("auto")


@pytest.fixture
def draw(seed):
    """A seeded `_sweeps.Draw` for tests parametrized over `seed` (see _sweeps.seeds())."""
    seed_all(seed)
    return _sweeps.Draw(seed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    callspec = getattr(item, "callspec", None)
    if report.failed and callspec is not None and "seed" in callspec.params:
        seed = callspec.params["seed"]
        sweep = os.environ.get("QPLUGIN_SWEEP", "short")
        report.sections.append((
            "qplugin sweep seed",
            f"seed={seed} (QPLUGIN_SWEEP={sweep}); rerun: "
            f"QPLUGIN_SWEEP={sweep} python -m pytest '{item.nodeid}'"))
