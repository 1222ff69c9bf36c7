# The main job: `python -m qplugin` (the whole-model demo: train, calibrate, convert, compare,
# save), `python -m qplugin --model module:factory`, `python -m qplugin check` (op agreement
# report) and `python -m qplugin bench` (tools/bench.py).
# Changes with: qplugin/__main__.py, qplugin/demo/.
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

import qplugin
import qplugin.__main__ as main_job
from qplugin.demo import check, run
from qplugin.demo import data as demo_data

from _factory import tiny_factory_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _job(args, cwd=ROOT, timeout=600):
    return subprocess.run([sys.executable, "-m", "qplugin", *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=timeout)


_ROW = re.compile(r"^\| (fp32|torch\.ao int8 \(x86\)|qplugin int8) \| (\S+) \| "
                  r"(\S+) \| (\S+) \| (\S+) \| (\S+) \|$", re.M)


def _table(out):
    return {m.group(1): m.groups()[1:] for m in _ROW.finditer(out)}


def test_demo_runs_end_to_end(tmp_path):
    # The default job with one epoch (the full default is the README's command; its bars are
    # measured by the lead on an idle machine): every stage runs, the table has three rows,
    # the TorchScript file is written and reloads with identical outputs.
    save = str(tmp_path / "demo.pt")
    r = _job(["--epochs", "1", "--save", save])
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "train epoch 1/1: loss" in out and "calibrate: batch 4/4" in out
    rows = _table(out)
    assert set(rows) == {"fp32", "torch.ao int8 (x86)", "qplugin int8"}, out
    for label, (acc, b1, b32, ips, size) in rows.items():
        assert 10.0 <= float(acc) <= 100.0, (label, acc)  # trained: better than chance (10%)
        assert float(b1) > 0 and float(b32) > float(b1) * 0.5, (label, b1, b32)
        assert int(size.replace(",", "")) > 10_000
    # int8 weights: a quarter of fp32's bytes, give or take the per-channel qparams.
    assert int(rows["qplugin int8"][4].replace(",", "")) < 0.5 * int(
        rows["fp32"][4].replace(",", ""))
    assert "reloaded, its output is identical to the eager model's" in out
    assert re.search(r"^(OK|MISSED): qplugin int8 accuracy within 1 point of fp32", out, re.M)
    assert re.search(r"^(OK|MISSED): batch 32: qplugin/fp32 = ", out, re.M)
    assert "tools/cpp_loader" in out and "torch.jit.load" in out
    m = torch.jit.load(save)
    x, _ = demo_data.make_dataset(4, seed=9)
    assert m(x).shape == (4, 10)
    graph = str(m.inlined_graph)
    assert "qplugin::conv2d" in graph and "quantized::" not in graph


_FACTORY = tiny_factory_source() + '''

def wrong():
    return 3
'''


def test_user_model_factory(tmp_path):
    (tmp_path / "mymodels.py").write_text(_FACTORY)
    save = str(tmp_path / "mine.pt")
    r = _job(["--model", "mymodels:make_with_eval", "--save", save], cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = _table(r.stdout)
    assert set(rows) == {"fp32", "torch.ao int8 (x86)", "qplugin int8"}
    assert "train epoch" not in r.stdout  # the user's model is used as given
    assert "calibrate: batch 2/2" in r.stdout
    x = torch.randn(2, 3, 16, 16)
    assert torch.jit.load(save)(x).shape == (2, 4)
    # Without an eval loader there is no accuracy.
    r = _job(["--model", "mymodels:make", "--save", ""], cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert all(v[0] == "n/a" for v in _table(r.stdout).values())
    assert "saved TorchScript" not in r.stdout


@pytest.mark.parametrize("spec, message", [
    ("mymodels", "expected module:factory"),
    ("nosuchmodule:make", "cannot import make from nosuchmodule"),
    ("mymodels:wrong", "expected the factory to return (model, calibration_loader)"),
])
def test_user_model_factory_errors(tmp_path, spec, message):
    (tmp_path / "mymodels.py").write_text(_FACTORY)
    r = _job(["--model", spec, "--save", ""], cwd=str(tmp_path))
    assert r.returncode != 0 and message in r.stdout + r.stderr, r.stdout + r.stderr


def test_demo_without_pytorch_quantized_backend(tmp_path, monkeypatch, capsys):
    # The torch.ao row is a baseline only: with PyTorch's backend gone the job still runs.
    (tmp_path / "mymodels.py").write_text(_FACTORY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))

    def gone(prepared, sample):
        return None, "RuntimeError: no quantized engine"

    monkeypatch.setattr(run, "_torch_ao_convert", gone)
    threads = torch.get_num_threads()
    assert main_job.main(["--model", "mymodels:make_with_eval", "--save", "",
                          "--threads", str(threads + 1)]) == 0
    assert torch.get_num_threads() == threads  # --threads is for the timing only
    out = capsys.readouterr().out
    assert "torch.ao int8: not available here (RuntimeError: no quantized engine)" in out
    assert _table(out)["torch.ao int8 (x86)"] == ("n/a",) * 5
    assert _table(out)["qplugin int8"][1] != "n/a"


def test_help_documents_options_and_factory():
    r = _job(["--help"])
    assert r.returncode == 0
    for opt in ("--threads", "--save", "--model", "--epochs", "module:factory", "bench",
                "check", "calibration_loader", "eval_loader"):
        assert opt in r.stdout, opt


def test_bad_options():
    assert _job(["--threads", "0"]).returncode == 2
    r = _job(["check", "extra"])
    assert r.returncode == 2 and "expected no arguments" in r.stderr


def test_bench_subcommand_runs_tools_bench():
    r = _job(["bench", "--help"])
    assert r.returncode == 0, r.stderr
    assert "--family" in r.stdout and "--threads" in r.stdout


def test_bench_subcommand_without_checkout(monkeypatch, capsys):
    monkeypatch.setattr(main_job.os.path, "isfile", lambda p: False)
    assert main_job.main(["bench"]) == 2
    assert "expected tools/bench.py of a qplugin source checkout" in capsys.readouterr().err


def test_check_runs_and_agrees():
    r = _job(["check"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK: all within 1 unit of PyTorch" in r.stdout
    for case in ("quantized_batch_norm", "linear", "conv2d", "max_pool2d", "layer_norm", "add"):
        assert case in r.stdout


def test_check_runs_without_pytorch_quantized_backend(monkeypatch, capsys):
    # The agreement report is optional: with PyTorch's backend gone the job still runs qplugin.
    monkeypatch.setattr(check, "_torch_quantized_available", lambda: False)
    assert main_job.main(["check"]) == 0
    out = capsys.readouterr().out
    assert "not available" in out and "quantized_batch_norm" in out


def test_dataset_is_deterministic_and_balanced():
    a, la = demo_data.make_dataset(40, seed=5)
    b, lb = demo_data.make_dataset(40, seed=5)
    c, _ = demo_data.make_dataset(40, seed=6)
    assert torch.equal(a, b) and torch.equal(la, lb) and not torch.equal(a, c)
    assert a.shape == (40, 3, 64, 64) and a.is_contiguous(memory_format=torch.channels_last)
    assert torch.bincount(la, minlength=10).tolist() == [4] * 10
    assert abs(float(a.mean())) < 0.5 and 0.5 < float(a.std()) < 1.5


def test_module_times_covers_leaves():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    rows = run.module_times(model, torch.randn(1, 3, 8, 8), reps=3)
    assert {r[0] for r in rows[:-1]} == {"0", "1"} and rows[-1][0].startswith("(whole model")
    assert all(t > 0 for _, _, t in rows)


def test_interleaved_latency_times_each_fn_in_rounds():
    calls = []
    got = run.interleaved_latency({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                                  min_time=0.0, warmup=2)
    assert set(got) == {"a", "b"} and all(v >= 0 for v in got.values())
    assert calls[:4] == ["a", "a", "b", "b"]  # warm-up
    assert calls[4:] == ["a", "b"] * 5  # then >= 5 interleaved rounds
