import os
import sys

# The suite's matrices are tiny: BLAS threads only contend with each other
# (and with the other process on a 2-core machine), so one thread each.
# Set before NumPy loads its BLAS.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, os.path.dirname(__file__))
