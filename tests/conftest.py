import os
import signal
import sys

# The suite's matrices are tiny: BLAS threads only contend with each other
# (and with the other process on a 2-core machine), so one thread each.
# Set before NumPy loads its BLAS.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, os.path.dirname(__file__))

# The Ctrl-C tests (here and in the processes they start) need a SIGINT to
# raise KeyboardInterrupt, as it does under an interactive shell.  A process
# that starts with SIGINT ignored -- a background job of a non-interactive
# shell, and every process it starts -- gets no such handler from Python:
# restored here, the processes the tests start have the default disposition
# again, and Python's handler with it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
