"""tf.strided_slice, tf.slice and ``x[...]`` with traced bounds.

TensorFlow's slice spec packed into begin/end/strides tensors for the STRIDED_SLICE_T and
SLICE_T ops (csrc/ops_slice_t.c), which read them at every run, so a traced ``x[i:j]``
replays for other ``i``, ``j``. Argument checks and packing only: the spec is interpreted
(clamped, checked) in C, and no element is touched here.
"""

import builtins
import numbers

from mixprec import _core, _ops
from mixprec._dtypes import int32, int64

__all__ = ["slice", "strided_slice"]

_BAD_INDEX = ("Only integers, slices (`:`), ellipsis (`...`), mixprec.newaxis (`None`) and scalar "
              "int32/int64 tensors are valid indices, got %r")


def _is_tensor(v):
    return isinstance(v, _core.Tensor)


def _check_index(v, key):
    if v is None or isinstance(v, bool):
        raise TypeError(_BAD_INDEX % (key,))
    if isinstance(v, _core.Variable):
        v = v.read_value()  # (a read recorded in the trace: each replay reads it again)
    if _is_tensor(v):
        if v.shape.rank != 0 or v.dtype not in (int32, int64):
            raise TypeError(_BAD_INDEX % (v,))
        return v
    if isinstance(v, numbers.Integral) or hasattr(v, "__index__"):
        try:
            return int(v.__index__())
        except Exception:
            raise TypeError(_BAD_INDEX % (v,)) from None
    raise TypeError(_BAD_INDEX % (v,))


def _pack(values, dt):
    """One 1-D index tensor of dtype dt from Python ints and scalar tensors."""
    if not any(_is_tensor(v) for v in values):
        return _core.constant(values, dt)
    parts = [(_core.cast(v, dt) if v.dtype != dt else v) if _is_tensor(v) else _core.constant(v, dt)
             for v in values]
    return _core.stack(parts)


def getitem_t(x, key):
    """``x[key]`` where the key holds traced scalar tensors (called by Tensor.__getitem__)."""
    items = key if isinstance(key, tuple) else (key,)
    begin, end, strides = [], [], []
    masks = [0, 0, 0, 0, 0]  # begin, end, ellipsis, new_axis, shrink_axis
    for i, s in enumerate(items):
        bit = 1 << i
        if isinstance(s, builtins.slice):
            if s.start is None:
                begin.append(0)
                masks[0] |= bit
            else:
                begin.append(_check_index(s.start, key))
            if s.stop is None:
                end.append(0)
                masks[1] |= bit
            else:
                end.append(_check_index(s.stop, key))
            strides.append(1 if s.step is None else _check_index(s.step, key))
        elif s is Ellipsis:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks[2] |= bit
        elif s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks[3] |= bit
        else:
            begin.append(_check_index(s, key))
            end.append(0)  # a shrunk axis reads its begin only
            strides.append(1)
            masks[4] |= bit
    if masks[2] & (masks[2] - 1):
        raise IndexError("an index can only have a single ellipsis ('...')")
    # one index dtype for the three (TensorFlow's helper: int64 when a bound is)
    dt = int64 if any(_is_tensor(v) and v.dtype == int64 for v in begin + end + strides) else int32
    return _core.strided_slice_t(x, _pack(begin, dt), _pack(end, dt), _pack(strides, dt), *masks)


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    """tf.strided_slice: TensorFlow's StridedSlice (masks, clamping, errors)."""
    del var, name
    x = _core.convert_to_tensor(input_)
    b = _core.convert_to_tensor(begin)
    if strides is None:  # TensorFlow: ones_like(begin)
        strides = _ops.ones_like(b)
    return _core.strided_slice_t(x, b, end, strides, int(begin_mask), int(end_mask), int(ellipsis_mask),
                                 int(new_axis_mask), int(shrink_axis_mask))


def slice(input_, begin, size, name=None):  # noqa: A001 - TensorFlow's public name
    """tf.slice: ``size[i] == -1`` takes the rest of dimension i."""
    del name
    return _core.slice_t(_core.convert_to_tensor(input_), begin, size)
