"""tf.experimental.dlpack: to_dlpack/from_dlpack as TensorFlow's, and the zero-copy rule for
imports (DLPack and read-only buffers shared; writable ndarrays, misaligned or strided
memory copied; the producer kept alive)."""

import gc
import mmap
import sys

import numpy as np
import pytest

import mixprec as tf
from mixprec.experimental import dlpack


def test_to_dlpack_and_from_dlpack_round_trip():
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]], dtype=tf.float16)
    cap = dlpack.to_dlpack(t)
    assert type(cap).__name__ == "PyCapsule"
    back = dlpack.from_dlpack(cap)
    assert back.dtype == tf.float16 and back.numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(BufferError, match="consumed at most once"):
        dlpack.from_dlpack(cap)
    assert tf.experimental.dlpack.to_dlpack is dlpack.to_dlpack
    # a capsule read by another library (NumPy reads CPU memory only)
    with tf.device("/CPU:0"):
        assert np.from_dlpack(tf.constant([5, 6])).tolist() == [5, 6]
    v = tf.Variable([1.0, 2.0])
    assert dlpack.from_dlpack(dlpack.to_dlpack(v)).numpy().tolist() == [1.0, 2.0]
    # a tensor on a GPU (the emulated one in CI) comes back on its device, not copied
    back = dlpack.from_dlpack(dlpack.to_dlpack(t))
    assert back.device == t.device


def test_from_dlpack_shares_memory_and_keeps_the_producer_alive(on_cpu):
    a = np.arange(6, dtype=np.float32)
    refs = sys.getrefcount(a)
    t = dlpack.from_dlpack(a)
    a[0] = 42.0  # shared memory, as TensorFlow's from_dlpack: later producer writes show
    assert t.numpy()[0] == 42.0
    assert sys.getrefcount(a) > refs  # the producer lives as long as the tensor
    del a
    gc.collect()
    assert t.numpy().tolist() == [42.0, 1, 2, 3, 4, 5]
    del t


def test_from_dlpack_copies_what_it_cannot_share(on_cpu):
    raw = np.zeros(4 * 5 + 1, np.uint8)
    misaligned = raw[1:].view(np.float32)
    misaligned[:] = 7.0
    t = dlpack.from_dlpack(misaligned)
    misaligned[0] = 1.0
    assert t.numpy().tolist() == [7.0] * 5  # copied
    strided = np.arange(10, dtype=np.float32)[::2]
    s = dlpack.from_dlpack(strided)
    assert s.numpy().tolist() == [0, 2, 4, 6, 8]


@pytest.fixture
def on_cpu():
    """Sharing is for tensors placed on the CPU (on a GPU, placing the data copies it)."""
    with tf.device("/CPU:0"):
        yield


def test_writable_arrays_are_copied_read_only_ones_shared(on_cpu):
    w = np.arange(4, dtype=np.float32)
    refs = sys.getrefcount(w)
    c = tf.constant(w)
    w[0] = 9.0
    assert c.numpy()[0] == 0.0 and sys.getrefcount(w) == refs  # a copy: tensors are immutable

    r = np.arange(4, dtype=np.float32)
    r.flags.writeable = False
    refs = sys.getrefcount(r)
    c = tf.convert_to_tensor(r)
    assert sys.getrefcount(r) == refs + 1  # shared: held by the tensor
    del c
    assert sys.getrefcount(r) == refs

    # a read-only view of a writable array is not frozen memory: copied
    base = np.arange(4, dtype=np.float32)
    view = base[:]
    view.flags.writeable = False
    c = tf.constant(view)
    base[0] = 5.0
    assert c.numpy()[0] == 0.0

    # bytes are immutable: shared
    fb = np.frombuffer(np.arange(4, dtype=np.float32).tobytes(), np.float32)
    refs = sys.getrefcount(fb)
    c = tf.constant(fb)
    assert sys.getrefcount(fb) == refs + 1 and c.numpy().tolist() == [0, 1, 2, 3]

    # a cast or a dtype change still works (the cast makes new memory)
    assert tf.constant(r, dtype=tf.float16).dtype == tf.float16
    # a Variable made from a shared tensor owns its memory: assigning never writes to r
    v = tf.Variable(tf.constant(r))
    v.assign_add([1.0, 1.0, 1.0, 1.0])
    assert r.tolist() == [0, 1, 2, 3] and v.numpy().tolist() == [1, 2, 3, 4]


def test_read_only_mmap_is_shared_and_survives_its_array(tmp_path, on_cpu):
    path = tmp_path / "x.bin"
    np.arange(8, dtype=np.float32).tofile(path)
    m = np.memmap(path, dtype=np.float32, mode="r")
    t = tf.constant(m)
    del m
    gc.collect()
    assert (tf.reduce_sum(t)).numpy() == 28.0
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    t = tf.constant(np.frombuffer(mm, np.float32))
    assert t.numpy().tolist() == list(range(8))
