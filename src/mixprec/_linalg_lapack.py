"""``tf.linalg`` names backed by the core's LAPACK ops (MatrixInverse, MatrixDeterminant;
csrc/ops_linalg.c): TensorFlow's signatures and its dtype rules only. The numbers, the
shape checks and the gradients are the core's; nothing here touches an element."""

from mixprec import _core, _ops
from mixprec._dtypes import float16, float32

__all__ = ["inv", "det"]


def _t(x):
    if isinstance(x, _core.Variable):
        return x.read_value()
    return x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x)


def inv(input, adjoint=False, name=None):  # noqa: A002
    """The inverse of each innermost square matrix (its adjoint's with ``adjoint=True``);
    a singular matrix is InvalidArgumentError "Input is not invertible.". float16 (which
    TensorFlow accepts) is computed in float32 and rounded once."""
    del name
    x = _t(input)
    if x.dtype == float16:
        return _ops.cast(_core.matrix_inverse(_ops.cast(x, float32), bool(adjoint)), float16)
    return _core.matrix_inverse(x, bool(adjoint))


def det(input, name=None):  # noqa: A002
    """The determinant of each innermost square matrix (float32/float64; TensorFlow has no
    float16 kernel: NotFoundError as TensorFlow's)."""
    del name
    x = _t(input)
    if x.dtype == float16:
        from mixprec import errors

        raise errors.NotFoundError(None, None, "Could not find device for node: {{node MatrixDeterminant}} = "
                                   "MatrixDeterminant[T=DT_HALF]")
    return _core.matrix_determinant(x)
