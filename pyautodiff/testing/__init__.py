"""Independent oracles for pyautodiff's derivatives, and the fuzzers that
use them."""
