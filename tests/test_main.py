# The main job (python -m qplugin) runs, finds every family's op registered, and reports agreement.
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_main_job_runs_and_agrees():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "qplugin"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK: all within 1 unit of PyTorch" in r.stdout
    for case in ("quantized_batch_norm", "linear", "conv2d", "max_pool2d", "layer_norm", "add"):
        assert case in r.stdout


def test_main_job_runs_without_pytorch_quantized_backend(monkeypatch, capsys):
    # The agreement report is optional: with PyTorch's backend gone the job still runs qplugin.
    sys.path.insert(0, ROOT)
    import qplugin.__main__ as main_job
    monkeypatch.setattr(main_job, "_torch_quantized_available", lambda: False)
    assert main_job.main() == 0
    out = capsys.readouterr().out
    assert "not available" in out and "quantized_batch_norm" in out
