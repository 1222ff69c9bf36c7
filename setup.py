# Builds qplugin._C: one shared library of operators, loaded with torch.ops.load_library.
# ISA kernels (csrc/kernels/**/*_avx2.cpp, *_avx512vnni.cpp) are compiled here with explicit
# per-file flags (never -march=native) and linked into the same library; dispatch.cpp picks one
# at load. The library has no PyInit and links no libtorch_python, so C++ programs can load it.
import glob
import json
import os

import torch
from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = os.path.dirname(os.path.abspath(__file__))

# Flags of each ISA tier.  The token in the file name selects them (STYLE.md section 5).
ISA_FLAGS = {
    "avx2": ["-mavx2", "-mfma", "-mf16c", "-mbmi2"],
    "avx512vnni": ["-mavx2", "-mfma", "-mf16c", "-mbmi2", "-mavx512f", "-mavx512bw",
                   "-mavx512vl", "-mavx512dq", "-mavx512vnni"],
}
COMMON = ["-O3", "-g0", "-std=c++17", "-fPIC", "-fno-math-errno", "-ffp-contract=off",
          "-fvisibility=hidden", "-Wall", "-Wno-unused-function", "-Wno-maybe-uninitialized"]
MAIN_FLAGS = ["-O3", "-g0", "-fopenmp", "-fno-math-errno", "-ffp-contract=off", "-Wall",
              "-Wno-unused-function"]
LINK_FLAGS = ["-fopenmp"]

# QPLUGIN_SANITIZE=address,undefined (tools/sanitize.sh): the same sources with the sanitizers
# in every TU, per-ISA ones included, and at link time; objects go to their own build_temp so a
# sanitized build never reuses (or clobbers) the normal build's objects. The .so is still written
# in place, so sanitize.sh builds in a copy of the tree. -O1 keeps ASan's reports exact enough
# and the build short; -g1 gives line numbers in stack traces. vptr is off: libtorch's classes
# come from an uninstrumented library with hidden-visibility typeinfo, which reports falsely.
SANITIZE = [s for s in os.environ.get("QPLUGIN_SANITIZE", "").replace(" ", "").split(",") if s]
if SANITIZE:
    # -fno-wrapv: Python's CFLAGS carry -fwrapv, which would hide signed overflow from UBSan.
    _san = ["-fsanitize=" + ",".join(SANITIZE), "-fno-omit-frame-pointer", "-g1", "-O1",
            "-fno-wrapv"]
    if "undefined" in SANITIZE:
        # A UBSan report aborts the test process instead of printing and going on. GCC leaves
        # float -> int conversion overflow (the requantize casts) out of "undefined": added.
        _san += ["-fsanitize=float-cast-overflow", "-fno-sanitize=vptr",
                 "-fno-sanitize-recover=undefined,float-cast-overflow"]
    COMMON = [f for f in COMMON if f not in ("-O3", "-g0")] + _san
    MAIN_FLAGS = [f for f in MAIN_FLAGS if f not in ("-O3", "-g0")] + _san
    LINK_FLAGS = LINK_FLAGS + ["-fsanitize=" + ",".join(SANITIZE)]


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

all_sources = sorted(glob.glob(os.path.join("csrc", "**", "*.cpp"), recursive=True))
isa_sources = [s for s in all_sources if _isa_of(s)]
main_sources = [s for s in all_sources if not _isa_of(s)]


class QPluginBuildExt(BuildExtension):
    """Compiles the torch-free per-ISA kernel files with their own flags, then the rest."""

    def finalize_options(self):
        super().finalize_options()
        if SANITIZE:
            self.build_temp = os.path.join(self.build_temp, "sanitize-" + "-".join(SANITIZE))

    def build_extensions(self):
        for ext in self.extensions:
            objs = []
            for isa in ISA_FLAGS:
                srcs = [s for s in isa_sources if _isa_of(s) == isa]
                if not srcs:
                    continue
                objs += self.compiler.compile(
                    srcs, output_dir=os.path.join(self.build_temp, "isa_" + isa),
                    include_dirs=[os.path.join(ROOT, "csrc")],
                    extra_postargs=COMMON + ISA_FLAGS[isa])
            ext.extra_objects = list(ext.extra_objects or []) + objs
        super().build_extensions()


ext = CppExtension(
    "qplugin._C",
    main_sources,
    include_dirs=[os.path.join(ROOT, "csrc")],
    # -g0: Python's default CFLAGS carry -g; debug info for torch-heavy TUs doubles build time.
    extra_compile_args=MAIN_FLAGS,
    extra_link_args=LINK_FLAGS,
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
    python_requires=">=3.10",
    install_requires=["torch>=2.13,<2.15"],  # tested: 2.13.0 (CPU) and 2.14.1 (tools/test.sh --torch)
)
