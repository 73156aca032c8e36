"""The suite's tolerance helpers: the one table lives in the package
(src/mixprec/testing/tolerances.py) so users' tests and ours share it."""

from mixprec.testing.tolerances import (  # noqa: F401
    FLOAT_DTYPES, GPU_KINDS, GPU_TOLERANCE, KINDS, NP_DTYPE, TOLERANCE, assert_bits_equal,
    assert_close, assert_gpu_close, dtype_name, gpu_tolerance, round_to, tolerance)
