"""``tf.experimental.dlpack``: ``to_dlpack`` and ``from_dlpack``, TensorFlow's names for the
zero-copy exchange with other array libraries. Argument shapes only: the capsules are made
and consumed in C (csrc/python/dlpack.c)."""

from mixprec import _core

__all__ = ["to_dlpack", "from_dlpack"]


def to_dlpack(tf_tensor):
    """A PyCapsule named ``dltensor`` sharing ``tf_tensor``'s memory (read-only: a consumer
    must not write to it). It can be consumed once, by ``from_dlpack`` of any library."""
    t = _core.convert_to_tensor(tf_tensor) if not isinstance(tf_tensor, _core.Tensor) else tf_tensor
    return t.__dlpack__()


class _Capsule:
    """A bare capsule seen as a producer: ``__dlpack__`` hands it over."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, **_):
        return self._capsule


def from_dlpack(dlcapsule):
    """A Tensor on the memory of a DLPack capsule (``to_dlpack``, ``torch.utils.dlpack``) or of
    any object implementing ``__dlpack__`` (NumPy arrays, PyTorch and JAX tensors).

    Contiguous, element-aligned CPU memory of a supported dtype is shared, not copied; the
    producer is kept alive until the tensor is freed. Other layouts are copied. Like
    TensorFlow, the tensor shows later writes the producer makes to shared memory."""
    if type(dlcapsule).__name__ == "PyCapsule":
        dlcapsule = _Capsule(dlcapsule)
    return _core.from_dlpack(dlcapsule)
