"""Build-time only: compile the C core into ``pyautodiff._ad_core`` with cffi.

setup.py names ``csrc/build_ffi.py:ffibuilder`` in ``cffi_modules``.  This is
the one file that imports ``cffi.FFI``; at run time only ``pyautodiff._core``
touches the compiled module.  The declarations come from ``csrc/ad.h`` (the
tape and its ops), ``csrc/optim.h`` (optimizer steps) and ``csrc/lbfgs.h``
(the minimizer) themselves, minus preprocessor lines, so the op enum is
written exactly once.
"""
import os
import re

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SOURCES = ["tape.c", "opinfo.c", "blocks.c", "blockcache.c", "forward.c",
           "reverse.c", "tangent.c", "second.c", "optim.c", "lbfgs.c"]
HEADERS = ["ad.h", "optim.h", "lbfgs.h"]


def package_version():
    scope = {}
    with open(os.path.join(ROOT, "pyautodiff", "_version.py")) as f:
        exec(f.read(), scope)
    return scope["__version__"]


def cdef_text():
    """The headers without the lines cffi's parser does not take: #include,
    the include guard and #if blocks.  '#define NAME <integer>' stays."""
    lines = []
    for name in HEADERS:
        with open(os.path.join(HERE, name)) as f:
            lines += f.read().splitlines()
    keep = [ln for ln in lines
            if not ln.lstrip().startswith("#")
            or re.match(r"\s*#define\s+\w+\s+\d+\s*$", ln)]
    return "\n".join(keep)


def extra_compile_args():
    # The sweeps' elementwise loops vectorise with the dynamic cost model;
    # -fno-trapping-math lets the compiler evaluate a rule's product before
    # a select (nothing here reads the floating-point exception flags), and
    # changes no result.  No fused multiply-add: every operation rounds on
    # its own, as the formulas are written (the optimizers follow torch's
    # step by step).
    args = ["-std=c11", "-O2", "-ftree-vectorize", "-fvect-cost-model=dynamic",
            "-fno-trapping-math", "-ffp-contract=off", "-Wall", "-Wextra",
            "-Werror=switch"]
    # e.g. PYAUTODIFF_CFLAGS="-O1 -g -fsanitize=address,undefined"
    args += os.environ.get("PYAUTODIFF_CFLAGS", "").split()
    return args


# Python functions the C sweeps call for AD_EXTERN entries (pyautodiff/_core.py)
PYTHON_CALLBACKS = """
extern "Python" int pyautodiff_extern_forward(void *, int64_t);
extern "Python" int pyautodiff_extern_reverse(void *, int64_t);
extern "Python" int pyautodiff_extern_tangent(void *, int64_t);
extern "Python" int pyautodiff_extern_second(void *, int64_t);
"""

ffibuilder = FFI()
ffibuilder.cdef(cdef_text() + PYTHON_CALLBACKS)
ffibuilder.set_source(
    "pyautodiff._ad_core",
    '#include "ad.h"\n#include "optim.h"\n#include "lbfgs.h"\n'
    'const char *ad_version(void) { return "%s"; }\n' % package_version(),
    sources=[os.path.relpath(os.path.join(HERE, s), ROOT) for s in SOURCES],
    include_dirs=[os.path.relpath(HERE, ROOT)],
    # a changed header (rules.h, vmath.h ...) rebuilds the module too
    depends=sorted(os.path.relpath(os.path.join(HERE, h), ROOT)
                   for h in os.listdir(HERE) if h.endswith(".h")),
    extra_compile_args=extra_compile_args(),
    extra_link_args=os.environ.get("PYAUTODIFF_LDFLAGS", "").split(),
    libraries=["m", "pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
