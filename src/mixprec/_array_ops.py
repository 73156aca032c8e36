"""TensorFlow's indexing and rearranging ops: ``tf.gather`` (and ``tf.nn.embedding_lookup``).

Thin faces over the C ops (csrc/ops_gather.c): argument spellings, TensorFlow's checks of
the Python arguments. The gradient of a gather is a dense tensor of the params' shape
(TensorFlow's is an IndexedSlices with the same values). No element is touched in Python.
"""

import operator

from mixprec import _core

__all__ = ["gather"]


def embedding_lookup(params, ids, max_norm=None, name=None):
    """Rows of ``params`` at ``ids`` (tf.nn.embedding_lookup): a gather on axis 0."""
    del name
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("mixprec: embedding_lookup over %d sharded params; pass one "
                                      "tensor" % len(params))
        params = params[0]
    if max_norm is not None:
        raise NotImplementedError("mixprec: embedding_lookup with max_norm is not supported")
    return _core.gather(params, ids, 0)


def _axis_int(axis, what):
    if isinstance(axis, _core.Tensor):
        axis = axis.numpy()
    try:
        return operator.index(axis)
    except TypeError:
        raise TypeError("%s must be an integer, got %r" % (what, axis)) from None


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of ``params`` along ``axis`` at ``indices`` (GatherV2). An index outside
    ``[0, params.shape[axis])`` raises InvalidArgumentError (TensorFlow's CPU behaviour)."""
    del validate_indices, name
    batch_dims = _axis_int(batch_dims, "batch_dims")
    axis = batch_dims if axis is None else _axis_int(axis, "axis")
    if batch_dims != 0:
        raise NotImplementedError("mixprec: tf.gather supports batch_dims=0 only, got batch_dims=%d"
                                  % batch_dims)
    return _core.gather(params, indices, axis)
