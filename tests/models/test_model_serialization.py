"""Serialization of whole qplugin-converted models: TorchScript (script and trace) with
torch.jit.save/load in this process and in a fresh one, state_dict round trips into a freshly
converted model, torch.save/torch.load of the whole module (which fails for torch.ao's own
converted models: PyTorch issue 69426), deepcopy.
"""
import copy
import io
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import qplugin.quantization as qq
from _block_torch_ao import requires_torch_ao

from _models import ResNetish, TransformerBlock, prepared, qplugin_convert

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    # trace records the module's output qparams as constants: intended for a converted model
    pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning"),
]

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = [ResNetish, TransformerBlock]


@pytest.fixture(scope="module", params=MODELS, ids=lambda c: c.__name__)
def model(request):
    cls = request.param
    m = qplugin_convert(prepared(cls))
    x = cls.example_input(seed=11)
    with torch.no_grad():
        y = m(x)
    return cls, m, x, y


def test_jit_script_and_trace_save_load(model, tmp_path):
    cls, m, x, y = model
    with torch.no_grad():
        for kind, sm in (("script", torch.jit.script(m)), ("trace", torch.jit.trace(m, (x,)))):
            path = tmp_path / f"{kind}.pt"
            torch.jit.save(sm, str(path))
            loaded = torch.jit.load(str(path))
            assert torch.equal(loaded(x), y), kind
            # other inputs too (a trace that had frozen something input-dependent would differ)
            x2 = cls.example_input(seed=12)
            assert torch.equal(loaded(x2), m(x2)), kind


def _run_fresh(script, *paths):
    env = dict(os.environ)
    # qplugin from this checkout; tests/models for the pickled model classes (_models).
    env["PYTHONPATH"] = os.pathsep.join([_ROOT, os.path.dirname(os.path.abspath(__file__)),
                                         env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *map(str, paths)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_fresh_process_loads_torchscript_and_pickled_module(tmp_path):
    """A new interpreter that imports qplugin (nothing else of this process) runs the
    TorchScript files and the torch.save'd modules and gets identical outputs (both models in
    one process: the interpreter start is the slow part)."""
    jobs, expected = [], []
    for cls in MODELS:
        m = qplugin_convert(prepared(cls))
        x = cls.example_input(seed=11)
        with torch.no_grad():
            expected.append(m(x))
        n = cls.__name__
        ts, pickled, inp = (tmp_path / f"{n}.{e}" for e in ("ts", "pkl", "x"))
        torch.jit.save(torch.jit.script(m), str(ts))
        torch.save(m, pickled)
        torch.save(x, inp)
        jobs += [ts, pickled, inp]
    out = tmp_path / "out.pt"
    _run_fresh("""
        import sys, torch, qplugin
        args, results = sys.argv[1:-1], []
        for ts, pickled, inp in zip(args[0::3], args[1::3], args[2::3]):
            x = torch.load(inp)
            with torch.no_grad():
                results.append((torch.jit.load(ts)(x),
                                torch.load(pickled, weights_only=False)(x)))
        torch.save(results, sys.argv[-1])
    """, *jobs, out)
    results = torch.load(out)
    assert len(results) == len(MODELS)
    for (a, b), y in zip(results, expected):
        assert torch.equal(a, y) and torch.equal(b, y)


def test_torch_save_load_whole_module(model):
    cls, m, x, y = model
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    with torch.no_grad():
        assert torch.equal(loaded(x), y)
    # and the loaded module scripts (its packed params are real qplugin objects)
    graph = str(torch.jit.script(loaded).inlined_graph)
    assert "qplugin::" in graph and "quantized::" not in graph


def test_deepcopy(model):
    cls, m, x, y = model
    with torch.no_grad():
        assert torch.equal(copy.deepcopy(m)(x), y)


def test_state_dict_round_trip_into_fresh_model(model, tmp_path):
    cls, m, x, y = model
    path = tmp_path / "sd.pt"
    torch.save(m.state_dict(), path)
    fresh = qplugin_convert(prepared(cls, calib_seed=300, calib_batches=1))
    with torch.no_grad():
        assert not torch.equal(fresh(x), y)
    fresh.load_state_dict(torch.load(path, weights_only=True))
    with torch.no_grad():
        assert torch.equal(fresh(x), y)


@requires_torch_ao
def test_migrated_model_serializes(tmp_path):
    """from_torch_ao's result is a normal qplugin model: torch.save and TorchScript work (the
    torch.ao model it came from cannot be torch.save'd / loaded: PyTorch issue 69426)."""
    from _models import torch_ao_convert
    ao = torch_ao_convert(prepared(ResNetish))
    mig = qq.from_torch_ao(ao)
    x = ResNetish.example_input(seed=4)
    with torch.no_grad():
        y = mig(x)
    buf = io.BytesIO()
    torch.save(mig, buf)
    buf.seek(0)
    with torch.no_grad():
        assert torch.equal(torch.load(buf, weights_only=False)(x), y)
        path = tmp_path / "mig.ts"
        torch.jit.save(torch.jit.script(mig), str(path))
        assert torch.equal(torch.jit.load(str(path))(x), y)
