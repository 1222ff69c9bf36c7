# Builds qplugin._C: one shared library of operators, loaded with torch.ops.load_library.
# One ninja build per tier: the per-ISA kernel files (*_avx2.cpp, *_avx512vnni.cpp) are
# torch-free and get their own explicit flags (never -march=native) from a small ninja file in
# build_temp, run with -j MAX_JOBS before torch's ninja build of the rest; both rebuild only what
# changed (depfiles), and the link reruns when any object, source or header is newer than the
# library. dispatch.cpp picks one ISA at load. The library has no PyInit and links no
# libtorch_python, so C++ programs can load it.
#
# Env: MAX_JOBS (parallel compile jobs; default: ninja's), QPLUGIN_DEBUG=1 (-O1 -g, assertions
# on, objects in their own build_temp), QPLUGIN_SANITIZE=address,undefined (tools/sanitize.sh).
import glob
import json
import os
import shlex
import subprocess

import torch
from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join(ROOT, "csrc")

# The source folders (not a recursive glob: a .cpp anywhere else is an error below, so a new
# folder is added here on purpose). Layer order, bottom up: common, kernels, driver, packed, ops.
SOURCE_DIRS = [
    "csrc",
    "csrc/kernels",
    "csrc/kernels/binary",
    "csrc/kernels/conv",
    "csrc/kernels/dynamic",
    "csrc/kernels/elementwise",
    "csrc/kernels/embedding",
    "csrc/kernels/gemm",
    "csrc/kernels/normalization",
    "csrc/kernels/pool",
    "csrc/kernels/softmax",
    "csrc/driver",
    "csrc/packed",
    "csrc/ops",
    "csrc/ops/cpu",
    "csrc/ops/quantized_cpu",
]

# Flags of each ISA tier.  The token in the file name selects them (STYLE.md section 5).
ISA_FLAGS = {
    "avx2": ["-mavx2", "-mfma", "-mf16c", "-mbmi2"],
    "avx512vnni": ["-mavx2", "-mfma", "-mf16c", "-mbmi2", "-mavx512f", "-mavx512bw",
                   "-mavx512vl", "-mavx512dq", "-mavx512vnni"],
    # AMX-INT8: an option of the avx512vnni tier (kernels/gemm/qgemm_amx.h), its own files.
    "amx": ["-mavx2", "-mfma", "-mf16c", "-mbmi2", "-mavx512f", "-mavx512bw", "-mavx512vl",
            "-mavx512dq", "-mavx512vnni", "-mavx512vbmi", "-mamx-tile", "-mamx-int8"],
}
COMMON = ["-std=c++17", "-fPIC", "-fno-math-errno", "-ffp-contract=off",
          "-fvisibility=hidden", "-Wall", "-Wno-unused-function", "-Wno-maybe-uninitialized"]
MAIN_FLAGS = ["-fopenmp", "-fno-math-errno", "-ffp-contract=off", "-Wall",
              "-Wno-unused-function"]
LINK_FLAGS = ["-fopenmp"]
# -g0: Python's default CFLAGS carry -g; debug info for torch-heavy TUs doubles build time.
OPT, POST = ["-O3", "-g0"], []

# QPLUGIN_DEBUG=1: -O1 -g and assertions on (Python's CFLAGS carry -DNDEBUG; -UNDEBUG undoes it
# for assert and TORCH_INTERNAL_ASSERT_DEBUG_ONLY). Objects go to their own build_temp.
DEBUG = os.environ.get("QPLUGIN_DEBUG", "0") not in ("", "0")
if DEBUG:
    OPT, POST = ["-O1", "-g"], ["-UNDEBUG"]

# QPLUGIN_SANITIZE=address,undefined (tools/sanitize.sh): the same sources with the sanitizers
# in every TU, per-ISA ones included, and at link time; objects go to their own build_temp so a
# sanitized build never reuses (or clobbers) the normal build's objects. The .so is still written
# in place, so sanitize.sh builds in a copy of the tree. -O1 keeps ASan's reports exact enough
# and the build short; -g1 gives line numbers in stack traces. vptr is off: libtorch's classes
# come from an uninstrumented library with hidden-visibility typeinfo, which reports falsely.
SANITIZE = [s for s in os.environ.get("QPLUGIN_SANITIZE", "").replace(" ", "").split(",") if s]
if SANITIZE:
    # -fno-wrapv: Python's CFLAGS carry -fwrapv, which would hide signed overflow from UBSan.
    OPT = []
    POST = ["-fsanitize=" + ",".join(SANITIZE), "-fno-omit-frame-pointer", "-g1", "-O1",
            "-fno-wrapv"] + POST
    if "undefined" in SANITIZE:
        # A UBSan report aborts the test process instead of printing and going on. GCC leaves
        # float -> int conversion overflow (the requantize casts) out of "undefined": added.
        POST += ["-fsanitize=float-cast-overflow", "-fno-sanitize=vptr",
                 "-fno-sanitize-recover=undefined,float-cast-overflow"]
    LINK_FLAGS = LINK_FLAGS + ["-fsanitize=" + ",".join(SANITIZE)]
COMMON = OPT + COMMON + POST
MAIN_FLAGS = OPT + MAIN_FLAGS + POST


def _isa_of(path):
    base = os.path.basename(path)[:-4]
    for isa in ISA_FLAGS:
        if base.endswith("_" + isa):
            return isa
    return None


# The torch version the library is built against, for the loader's mismatch message. Written
# before setup() so build_py packages it in wheels too.
with open(os.path.join(ROOT, "qplugin", "_build_info.json"), "w") as f:
    json.dump({"torch_version": torch.__version__}, f)

all_sources = sorted(s for d in SOURCE_DIRS for s in glob.glob(os.path.join(d, "*.cpp")))
_stray = sorted(set(os.path.relpath(s, ROOT) for s in
                    glob.glob(os.path.join(CSRC, "**", "*.cpp"), recursive=True))
                - set(all_sources))
if _stray:
    raise SystemExit(f"setup.py: {', '.join(_stray)} in no source folder; add the folder to "
                     "SOURCE_DIRS")
isa_sources = [s for s in all_sources if _isa_of(s)]
main_sources = [s for s in all_sources if not _isa_of(s)]
headers = sorted(glob.glob(os.path.join("csrc", "**", "*.h"), recursive=True))


def _ninja_escape(path):
    return path.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


class QPluginBuildExt(BuildExtension):
    """Compiles the torch-free per-ISA kernel files with their own flags (one ninja file, run with
    -j MAX_JOBS), then the rest with torch's ninja build, then links both."""

    def finalize_options(self):
        super().finalize_options()
        if DEBUG:
            # A sibling, not a child: tests/test_cpp_loader.py reads build/temp.*/**.o.
            head, tail = os.path.split(self.build_temp)
            self.build_temp = os.path.join(head, "debug-" + tail)
        if SANITIZE:
            self.build_temp = os.path.join(self.build_temp, "sanitize-" + "-".join(SANITIZE))

    def _build_isa_objects(self):
        """Writes build_temp/isa.ninja and runs it; returns the object paths."""
        temp = os.path.abspath(self.build_temp)
        os.makedirs(temp, exist_ok=True)
        cc = self.compiler.compiler_so  # Python's compiler and CFLAGS, as distutils uses them
        lines = [
            "ninja_required_version = 1.3",
            "cc = " + shlex.quote(cc[0]),
            "cflags = " + " ".join(shlex.quote(f) for f in cc[1:] + ["-I" + CSRC]),
        ]
        for isa, flags in ISA_FLAGS.items():
            lines.append(f"flags_{isa} = " + " ".join(shlex.quote(f) for f in COMMON + flags))
        lines += [
            "rule cxx",
            "  command = $cc -MMD -MF $out.d $cflags -c $in -o $out $isaflags",
            "  depfile = $out.d",
            "  deps = gcc",
            "  description = CXX $in",
            "",
        ]
        objs = []
        for src in isa_sources:
            isa = _isa_of(src)
            # isa_<tier>/<source path>.o: tests/test_cpp_loader.py maps objects back to sources.
            obj = os.path.join(temp, "isa_" + isa, os.path.splitext(src)[0] + ".o")
            lines.append(f"build {_ninja_escape(obj)}: cxx "
                         f"{_ninja_escape(os.path.join(ROOT, src))}")
            lines.append(f"  isaflags = $flags_{isa}")
            objs.append(obj)
        manifest = os.path.join(temp, "isa.ninja")
        text = "\n".join(lines) + "\n"
        old = open(manifest).read() if os.path.exists(manifest) else None
        if text != old:
            with open(manifest, "w") as f:
                f.write(text)
        cmd = ["ninja", "-f", manifest]
        jobs = os.environ.get("MAX_JOBS")
        if jobs and jobs.isdigit():
            cmd += ["-j", jobs]
        subprocess.run(cmd, cwd=temp, check=True)
        return objs

    def build_extensions(self):
        isa_objs = self._build_isa_objects() if isa_sources else []
        for ext in self.extensions:
            ext.extra_objects = list(ext.extra_objects or []) + isa_objs
            # Relink when an ISA object, an ISA source or a header is newer than the library
            # (setuptools looks only at ext.sources + ext.depends; torch's ninja at the rest).
            ext.depends = list(ext.depends or []) + isa_objs + isa_sources + headers
        super().build_extensions()


ext = CppExtension(
    "qplugin._C",
    main_sources,
    include_dirs=[CSRC],
    extra_compile_args=MAIN_FLAGS,
    extra_link_args=LINK_FLAGS,
    # torch's BuildExtension compiles with -DPy_LIMITED_API=0x030A0000 (3.10); the wheel tag
    # below (bdist_wheel py_limited_api) says the same: cp310-abi3.
    py_limited_api=True,
)

setup(
    name="qplugin",
    version="0.1.0",
    description="int8 inference for PyTorch as a self-contained custom-op plugin",
    packages=find_packages(include=["qplugin", "qplugin.*"]),
    package_data={"qplugin": ["_build_info.json"]},
    ext_modules=[ext],
    cmdclass={"build_ext": QPluginBuildExt.with_options(use_ninja=True)},
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
    python_requires=">=3.10",
    install_requires=["torch>=2.13,<2.15"],  # tested: 2.13.0 (CPU) and 2.14.1 (tools/test.sh --torch)
)
