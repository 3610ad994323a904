"""``python -m bench.fuzz``: the differential fuzzers, which live in the
package (pyautodiff/testing/fuzz.py) so that the tests use them too."""
import sys

from pyautodiff.testing.fuzz import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m bench.fuzz"))
