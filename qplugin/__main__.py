"""python -m qplugin: the main job.

    python -m qplugin [--threads N] [--save PATH] [--model module:factory] [--epochs E]
    python -m qplugin bench [tools/bench.py options]
    python -m qplugin check

With no subcommand: the whole-model demo (qplugin/demo/run.py). `bench` runs the op benchmark
(tools/bench.py of a source checkout). `check` is the op-level agreement report against PyTorch's
own quantized ops (qplugin/demo/check.py).
"""
import argparse
import os
import runpy
import sys
import warnings

_HELP_MODEL = """\
--model module:factory runs the job on your own float model instead of the demo. `factory` is a
callable in an importable module (the current directory is on sys.path) that takes no arguments
and returns (model, calibration_loader) or (model, calibration_loader, eval_loader):

  model               a float torch.nn.Module ready for eager-mode quantization: QuantStub at the
                      input, DeQuantStub at the output, FloatFunctional for tensor arithmetic,
                      Conv-BN(-ReLU) already fused (qplugin.quantization.fuse_modules). If it
                      has no `qconfig` attribute, qplugin.quantization's
                      get_default_qconfig("x86") is used.
  calibration_loader  an iterable of input batches, or of (input, target) pairs; fed to the
                      observers, and its first batch is the latency input (batch 1 = its first
                      row; batch 32 = rows repeated to 32).
  eval_loader         optional (input, target) pairs: the accuracy column. Without it there is
                      no accuracy.

Example (mymodels.py):

  def make():
      model = build_and_load_my_float_model().eval()
      calib = [torch.randn(8, 3, 224, 224) for _ in range(4)]
      return model, calib

  python -m qplugin --model mymodels:make --save mymodel_int8.pt
"""


def _bench(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(os.path.dirname(here), "tools", "bench.py")
    if not os.path.isfile(path):
        sys.stderr.write(
            "qplugin bench: expected tools/bench.py of a qplugin source checkout next to the "
            f"package ({path}), got none: the benchmark is not part of an installed wheel. Clone "
            "the repository and install it editable (pip install --no-build-isolation -e .).\n")
        return 2
    sys.argv = [path] + list(argv)
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m qplugin",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "qplugin's main job. Without a subcommand: builds a small ResNet-style CNN, trains "
            "it briefly on a\nprocedurally generated 10-class image set, calibrates, converts it "
            "with qplugin (and with torch.ao\nfor comparison), prints accuracy / latency (batch "
            "1 and 32) / size, and saves the qplugin model as\nTorchScript.\n\n"
            "subcommands:\n"
            "  bench [ARGS]   the op benchmark, tools/bench.py ARGS (source checkout only; "
            "bench --help)\n"
            "  check          agreement of qplugin's ops with torch.ops.quantized on the same "
            "inputs"),
        epilog=_HELP_MODEL)
    p.add_argument("--threads", type=int, default=1,
                   help="intra-op threads for the latency columns (default 1; training uses all)")
    p.add_argument("--save", default="qplugin_demo.pt", metavar="PATH",
                   help="where to write the TorchScript model (default ./qplugin_demo.pt; "
                        "'' to skip)")
    p.add_argument("--model", metavar="module:factory",
                   help="your own float model and calibration data instead of the demo "
                        "(see below)")
    p.add_argument("--epochs", type=int, default=2, help="training epochs of the demo (default 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the demo's data and training")
    p.add_argument("--profile", action="store_true",
                   help="also print the per-module time breakdown (batch 1 and 32; printed anyway for a batch size whose latency bar is missed)")
    p.add_argument("--no-pt2", action="store_true",
                   help="skip the PyTorch 2 rows (torch.export, torch.compile, AOTInductor .pt2 "
                        "saved beside the TorchScript file)")
    return p


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    if argv and argv[0] == "bench":
        return _bench(argv[1:])
    if argv and argv[0] == "check":
        if len(argv) > 1:
            sys.stderr.write(f"qplugin check: expected no arguments, got {argv[1:]}\n")
            return 2
        from qplugin.demo import check
        return check.main()
    args = _parser().parse_args(argv)
    if args.threads < 1:
        _parser().error(f"--threads: expected a positive count, got {args.threads}")
    if args.epochs < 1:
        _parser().error(f"--epochs: expected a positive count, got {args.epochs}")
    from qplugin.demo import run
    return run.run(threads=args.threads, save=args.save, model_spec=args.model,
                   epochs=args.epochs, seed=args.seed, profile=args.profile,
                   pt2=not args.no_pt2)


if __name__ == "__main__":
    sys.exit(main())
