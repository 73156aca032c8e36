"""check_numerics, assert_all_finite, assert_allclose_dtype."""

import contextlib

import numpy as np

from mixprec import _core, _nest, debugging
from mixprec.testing import tolerances


@contextlib.contextmanager
def check_numerics():
    """Within the block, the first op that produces an inf or NaN raises
    ``mixprec.errors.InvalidArgumentError`` naming the op (TensorFlow's name, e.g.
    "Pow"), the Keras layer it ran in, its dtype and shape. Restores the previous setting."""
    was = debugging.is_check_numerics_enabled()
    debugging.enable_check_numerics()
    try:
        yield
    finally:
        if not was:
            debugging.disable_check_numerics()


def _describe(t, i):
    name = getattr(t, "name", None)
    label = "[%d]" % i + (" %r" % name if isinstance(name, str) else "")
    return label


def assert_all_finite(tensors, msg=""):
    """Fails (AssertionError) when any tensor or variable in the (nested) structure holds an
    inf or NaN, listing each offender with its counts."""
    bad = []
    flat = _nest.flatten(tensors)
    for i, t in enumerate(flat):
        if t is None:
            continue
        value = t._peek() if isinstance(t, _core.Variable) else _core.convert_to_tensor(t)
        if not value.dtype.is_floating or _core.all_finite([value]):
            continue
        nan = int(_core.reduce_sum(_core.cast(_core.is_nan(value), "int64")))
        inf = int(_core.reduce_sum(_core.cast(_core.is_inf(value), "int64")))
        bad.append("%s (%s, shape %s): %d NaN, %d inf of %d" % (
            _describe(t, i), value.dtype.name, tuple(value.shape), nan, inf, value._numel))
    if bad:
        raise AssertionError("%s%d of %d tensors hold inf/NaN:\n  %s" % (
            (msg + ": ") if msg else "", len(bad), len(flat), "\n  ".join(bad)))


def assert_allclose_dtype(actual, desired, dtype=None, kind="elementwise", err_msg=""):
    """``actual`` close to ``desired`` within the tolerance of ``dtype`` (default: the dtype
    of ``actual``) for ``kind`` ('elementwise', 'transcendental', 'reduction', 'matmul',
    'softmax', 'exact') from mixprec.testing.tolerances.TOLERANCE."""
    if dtype is None:
        dtype = getattr(actual, "dtype", None) or np.asarray(actual).dtype
    if isinstance(actual, _core.Variable):
        actual = actual.numpy()
    if isinstance(desired, _core.Variable):
        desired = desired.numpy()
    tolerances.assert_close(actual, desired, dtype, kind, err_msg=err_msg)
