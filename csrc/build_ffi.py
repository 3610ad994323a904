"""Build-time only: compile the C core into ``pyautodiff._ad_core`` with cffi.

setup.py names ``csrc/build_ffi.py:ffibuilder`` in ``cffi_modules``.  This is
the one file that imports ``cffi.FFI``; at run time only ``pyautodiff._core``
touches the compiled module.  The declarations come from ``csrc/ad.h`` (the
tape), ``csrc/opcodes.h`` (its op enum, which it includes), ``csrc/optim.h``
(optimizer steps) and ``csrc/lbfgs.h`` (the minimizer) themselves, minus
preprocessor lines.  The op enum is written out from the op table in
``csrc/rules.h`` by ``csrc/gen_opcodes.py``, as cffi expands no macros.
"""
import os
import re
from concurrent.futures import ThreadPoolExecutor

import setuptools  # noqa: F401  (first, so distutils below is setuptools' own)
from cffi import FFI
from distutils.ccompiler import CCompiler

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SOURCES = ["tape.c", "opinfo.c", "blocks.c", "blockcache.c", "forward.c",
           "reverse.c", "tangent.c", "second.c", "optim.c", "lbfgs.c",
           "replay.c", "many.c", "lanes.c", "sparsity.c", "matmul.c"]
HEADERS = ["opcodes.h", "ad.h", "optim.h", "lbfgs.h", "sparsity.h"]
# The sweeps expand every rule of rules.h, each twice where AD_SIMD_CLONES
# applies: they take most of the build, so they start first (slowest first)
SLOWEST = ["second.c", "tangent.c", "reverse.c", "forward.c"]


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


def compile_in_parallel():
    """Compile the sources one per core, slowest first, then link them as
    before: distutils compiles an extension's sources one after another.
    Each source is compiled by distutils' own compile() with the same
    arguments, so the objects and their link order do not change."""
    one_by_one = CCompiler.compile
    if getattr(one_by_one, "in_parallel", False):
        return

    def compile(self, sources, *args, **kwargs):
        def slow_first(source):
            name = os.path.basename(source)
            return SLOWEST.index(name) if name in SLOWEST else len(SLOWEST)
        order = sorted(sources, key=slow_first)
        cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                 else os.cpu_count() or 1)
        with ThreadPoolExecutor(max(min(len(sources), cores), 1)) as pool:
            done = dict(zip(order, pool.map(
                lambda source: one_by_one(self, [source], *args, **kwargs), order)))
        return [done[source][0] for source in sources]
    compile.in_parallel = True
    CCompiler.compile = compile


# Python functions the C sweeps call for AD_EXTERN entries (pyautodiff/_core.py)
PYTHON_CALLBACKS = """
extern "Python" int pyautodiff_extern_forward(void *, int64_t);
extern "Python" int pyautodiff_extern_reverse(void *, int64_t);
extern "Python" int pyautodiff_extern_tangent(void *, int64_t);
extern "Python" int pyautodiff_extern_second(void *, int64_t);
"""

# cffi brackets every call it generates with Py_BEGIN_ALLOW_THREADS and
# Py_END_ALLOW_THREADS.  Redefined after Python.h, as here, they keep the
# GIL for the wrappers named in KEEP_GIL: calls whose work is bounded by a
# small size (but for the occasional growth of the tape's arrays, as any
# append), where releasing the GIL and taking it back (two atomic
# handovers, a mutex and a condition variable) cost more than the call's
# own work -- NumPy, too, keeps the GIL for loops of few elements.  Such a
# call must never call back into Python.  __func__ names the wrapper; GCC
# folds the comparison away.  Every other call releases the GIL, so long
# sweeps still let other threads run.  (tests/test_build.py checks the
# generated code this rests on.)
KEEP_GIL = ["ad_array_row"]
KEEP_GIL_PREAMBLE = """
#undef Py_BEGIN_ALLOW_THREADS
#undef Py_END_ALLOW_THREADS
#define AD_KEEPS_GIL(wrapper) (%s)
#define Py_BEGIN_ALLOW_THREADS \\
    { PyThreadState *_save = AD_KEEPS_GIL(__func__) ? 0 : PyEval_SaveThread();
#define Py_END_ALLOW_THREADS if (_save) PyEval_RestoreThread(_save); }
""" % " || ".join('__builtin_strcmp(wrapper, "_cffi_f_%s") == 0' % name
                  for name in KEEP_GIL)

compile_in_parallel()  # here, as setup.py's cffi_modules imports this file
ffibuilder = FFI()
ffibuilder.cdef(cdef_text() + PYTHON_CALLBACKS)
ffibuilder.set_source(
    "pyautodiff._ad_core",
    '#include "ad.h"\n#include "optim.h"\n#include "lbfgs.h"\n'
    '#include "sparsity.h"\n'
    'const char *ad_version(void) { return "%s"; }\n' % package_version()
    + KEEP_GIL_PREAMBLE,
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
