"""The C core is compiled by cffi from csrc/ (see csrc/build_ffi.py)."""
from setuptools import setup

setup(
    cffi_modules=["csrc/build_ffi.py:ffibuilder"],
)
