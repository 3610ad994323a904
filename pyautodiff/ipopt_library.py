"""IPOPT's C interface, loaded at run time from a shared library that a pip
package ships.

IPOPT is C++; its C interface (IpStdCInterface.h, stable since 3.14) is a
handful of functions: make a problem from sizes, bounds and five callbacks,
set options, solve.  It is bound here with cffi in ABI mode, because no
header is installed to compile against: the library comes inside another
package's wheel.  The callbacks are Python functions that cffi turns into
C function pointers; each evaluation in them is one C replay of a recording.

Which library: ``PYAUTODIFF_IPOPT_LIBRARY`` (a path) if it is set, and
only it; otherwise the newest IPOPT among those installed:

- cyipopt-wheels (the ``ipopt`` extra), manylinux wheels with IPOPT and
  MUMPS inside;
- CasADi's wheel, which ships its own IPOPT build with MUMPS and METIS;
- an IPOPT of the system's (``ctypes.util.find_library('ipopt')``).
"""
import ctypes.util
import importlib.util
import os
import re
import threading
from pathlib import Path

from cffi import FFI

ENV = "PYAUTODIFF_IPOPT_LIBRARY"
INSTALL = ("minimize(method='ipopt') needs an IPOPT library: pip install "
           "pyautodiff[ipopt] (the cyipopt-wheels package, which ships one), "
           f"or set {ENV} to the path of a libipopt 3.14 or newer")

# IpStdCInterface.h of IPOPT 3.14: ipindex is int, ipnumber double, bool C99's
CDEF = """
typedef void *IpoptProblem;
typedef bool (*Eval_F_CB)(int n, double *x, bool new_x, double *obj_value,
                          void *user_data);
typedef bool (*Eval_Grad_F_CB)(int n, double *x, bool new_x, double *grad_f,
                               void *user_data);
typedef bool (*Eval_G_CB)(int n, double *x, bool new_x, int m, double *g,
                          void *user_data);
typedef bool (*Eval_Jac_G_CB)(int n, double *x, bool new_x, int m,
                              int nele_jac, int *iRow, int *jCol,
                              double *values, void *user_data);
typedef bool (*Eval_H_CB)(int n, double *x, bool new_x, double obj_factor,
                          int m, double *lambda, bool new_lambda,
                          int nele_hess, int *iRow, int *jCol,
                          double *values, void *user_data);
typedef bool (*Intermediate_CB)(int alg_mod, int iter_count, double obj_value,
                                double inf_pr, double inf_du, double mu,
                                double d_norm, double regularization_size,
                                double alpha_du, double alpha_pr,
                                int ls_trials, void *user_data);
IpoptProblem CreateIpoptProblem(int n, double *x_L, double *x_U, int m,
                                double *g_L, double *g_U, int nele_jac,
                                int nele_hess, int index_style,
                                Eval_F_CB eval_f, Eval_G_CB eval_g,
                                Eval_Grad_F_CB eval_grad_f,
                                Eval_Jac_G_CB eval_jac_g, Eval_H_CB eval_h);
void FreeIpoptProblem(IpoptProblem ipopt_problem);
bool AddIpoptStrOption(IpoptProblem ipopt_problem, char *keyword, char *val);
bool AddIpoptNumOption(IpoptProblem ipopt_problem, char *keyword, double val);
bool AddIpoptIntOption(IpoptProblem ipopt_problem, char *keyword, int val);
bool SetIntermediateCallback(IpoptProblem ipopt_problem,
                             Intermediate_CB intermediate_cb);
int IpoptSolve(IpoptProblem ipopt_problem, double *x, double *g,
               double *obj_val, double *mult_g, double *mult_x_L,
               double *mult_x_U, void *user_data);
bool GetIpoptCurrentIterate(IpoptProblem ipopt_problem, bool scaled, int n,
                            double *x, double *z_L, double *z_U, int m,
                            double *g, double *lambda);
"""
# added in 3.14.?: looked up on its own, so that older 3.14s still load
VERSION_CDEF = "void GetIpoptVersion(int *major, int *minor, int *release);"

ffi = FFI()
ffi.cdef(CDEF)
ffi.cdef(VERSION_CDEF)


class Library:
    """One loaded libipopt: its path, version and C functions."""

    def __init__(self, path, lib, version, source):
        self.path, self.lib, self.version, self.source = path, lib, version, source

    def __repr__(self):
        v = ".".join(map(str, self.version)) if self.version else "unknown version"
        return f"IPOPT {v} ({self.source}: {self.path})"


def _version_of_name(path):
    """(3, 14, 11) from libipopt-3c40042c.so.3.14.11 (its real name)."""
    m = re.search(r"\.so\.(\d+)\.(\d+)\.(\d+)$", os.path.realpath(path))
    return tuple(int(v) for v in m.groups()) if m else None


def _package_dir(name):
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _cyipopt_wheels():
    """cyipopt-wheels' bundled libipopt.  Its libraries carry no search
    path of their own (cyipopt's extension module does), so cyipopt is
    imported first: that loads them, and the dlopen below finds them."""
    pkg = _package_dir("cyipopt")
    if pkg is None:
        return None
    found = sorted((pkg.parent / "cyipopt_wheels.libs").glob("libipopt-*.so*"))
    if not found:
        return None

    def prepare():
        import cyipopt  # noqa: F401
    return str(found[-1]), "cyipopt-wheels", prepare


def _casadi():
    pkg = _package_dir("casadi")
    if pkg is None:
        return None
    found = sorted(pkg.glob("libipopt.so.*"), key=lambda p: len(p.name))
    return (str(found[-1]), "casadi", None) if found else None


def _system():
    name = ctypes.util.find_library("ipopt")
    return (name, "system", None) if name else None


def candidates():
    """[(path, source, prepare)]: the libraries to try, the newest first."""
    found = [c for c in (_cyipopt_wheels(), _casadi(), _system()) if c]
    env = os.environ.get(ENV)
    if env:
        # one of the packages' own: loaded as that package needs
        same = [prepare for path, _, prepare in found if _same_file(path, env)]
        return [(env, ENV, same[0] if same else None)]
    return sorted(found, key=lambda c: _version_of_name(c[0]) or (0,),
                  reverse=True)


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _load(path, source, prepare):
    if prepare is not None:
        prepare()
    lib = ffi.dlopen(path)
    try:
        lib.CreateIpoptProblem      # the C interface is there
    except AttributeError:
        raise OSError(f"{path} has no IPOPT C interface (CreateIpoptProblem)") from None
    try:
        get = lib.GetIpoptVersion
    except AttributeError:
        version = _version_of_name(path)
    else:
        v = ffi.new("int[3]")
        get(v, v + 1, v + 2)
        version = tuple(v)
    if version is not None and version < (3, 14, 0):
        raise OSError(f"{path} is IPOPT {'.'.join(map(str, version))}; the "
                      "C interface bound here is 3.14's")
    return Library(path, lib, version, source)


_lock = threading.Lock()
_loaded = []


def load():
    """The IPOPT library minimize(method='ipopt') uses, loaded once."""
    with _lock:
        if _loaded:
            return _loaded[0]
        tried = []
        for path, source, prepare in candidates():
            try:
                _loaded.append(_load(path, source, prepare))
                return _loaded[0]
            except (OSError, ImportError) as exc:
                tried.append(f"{source} ({path}): {exc}")
        detail = "; tried " + "; ".join(tried) if tried else ""
        raise ImportError(INSTALL + detail)
