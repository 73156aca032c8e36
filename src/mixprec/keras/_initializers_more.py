"""keras.initializers.Orthogonal (the signed Q of a QR decomposition of a normal draw;
LAPACK in csrc/linalg_qr.c) and keras.initializers.Identity (gain times a rectangular
identity, tf.eye), with tf-keras 2.21's arguments, configs and errors. Draws, the QR and the
scaling run in the core; this module only arranges shapes."""

from mixprec import _core
from mixprec.keras import initializers as _init

__all__ = ["Orthogonal", "Identity"]


class Orthogonal(_init._Random):
    """A matrix (or a reshaped stack) with orthonormal rows or columns, times ``gain``."""

    def __init__(self, gain=1.0, seed=None):
        self.gain = gain
        self.seed = seed

    def __call__(self, shape, dtype=None, **kwargs):
        shape, dtype = _init._args(shape, dtype, kwargs, "float")
        shape = [int(d) for d in shape]
        if len(shape) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional. "
                             "Received: shape=%s of rank %d." % (tuple(shape), len(shape)))
        rows = 1
        for d in shape[:-1]:
            rows *= d
        cols = shape[-1]
        flat = (max(rows, cols), min(rows, cols))
        draw = self._draw(_init._NORMAL, flat, 0.0, 1.0, dtype)
        q = _core.convert_to_tensor(_core.qr_q(draw.numpy()))
        if rows < cols:
            q = _core.transpose(q, [1, 0])
        q = _core.cast(q, dtype) * _core.cast(_core.constant(float(self.gain)), dtype)
        return _core.reshape(q, shape)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(_init.Initializer):
    """``gain`` times the (rows, cols) identity matrix."""

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None, **kwargs):
        shape, dtype = _init._args(shape, dtype, kwargs, "float")
        shape = [int(d) for d in shape]
        if len(shape) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices. "
                             "Received: shape=%s of rank %d." % (tuple(shape), len(shape)))
        from mixprec import one_hot, range as _range

        eye = one_hot(_range(shape[0]), shape[1], dtype=dtype)
        return eye * _core.cast(_core.constant(float(self.gain)), dtype)

    def get_config(self):
        return {"gain": self.gain}
