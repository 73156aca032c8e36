"""The C collectives engine for replica threads (csrc/collective_threads.c): sums in rank
order, 16-bit rounded once from float32, buckets of many tensors, broadcast, and a lost or
failed replica turning into UnavailableError within the timeout, never a hang."""

import threading
import time

import ml_dtypes
import numpy as np
import pytest

import mixprec as tf
from mixprec import _core


def _on_threads(n, fn):
    out, errs = [None] * n, [None] * n

    def body(r):
        try:
            out[r] = fn(r)
        except Exception as e:  # noqa: BLE001
            errs[r] = e

    ts = [threading.Thread(target=body, args=(r,)) for r in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    return out, errs


@pytest.mark.parametrize("n", [2, 3])
def test_all_reduce_sum_mean_bucket_float32(rng, n):
    shapes = [(3,), (100, 7), (), (1000,)]
    data = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(n)]
    comm = _core.comm_threads(n, 10.0)
    for op in (0, 1):
        out, errs = _on_threads(n, lambda r: _core.comm_all_reduce(
            comm, r, [tf.constant(a) for a in data[r]], op))
        assert errs == [None] * n
        for i in range(len(shapes)):
            want = data[0][i].copy()
            for k in range(1, n):
                want = want + data[k][i]  # rank order, float32
            if op == 1:
                want = want / np.float32(n)
            for r in range(n):
                np.testing.assert_array_equal(out[r][i].numpy(), want)


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16])
def test_16bit_summed_in_float32_rounded_once(rng, dt):
    a = rng.standard_normal(4096).astype(dt)
    b = rng.standard_normal(4096).astype(dt)
    c = rng.standard_normal(4096).astype(dt)
    comm = _core.comm_threads(3, 10.0)
    data = [a, b, c]
    out, errs = _on_threads(3, lambda r: _core.comm_all_reduce(comm, r, [tf.constant(data[r])], 0))
    want = (a.astype(np.float32) + b.astype(np.float32) + c.astype(np.float32)).astype(dt)
    for r in range(3):
        assert out[r][0].numpy().view(np.uint16).tolist() == want.view(np.uint16).tolist()


def test_broadcast_and_mixed_dtypes(rng):
    comm = _core.comm_threads(2, 10.0)
    data = [[rng.standard_normal(5).astype(np.float32), rng.standard_normal(3)] for _ in range(2)]
    out, errs = _on_threads(2, lambda r: _core.comm_broadcast(
        comm, r, [tf.constant(x) for x in data[r]], 1))
    for r in range(2):
        np.testing.assert_array_equal(out[r][0].numpy(), data[1][0])
        np.testing.assert_array_equal(out[r][1].numpy(), data[1][1])


def test_a_replica_that_never_arrives_is_an_error_within_the_timeout():
    comm = _core.comm_threads(2, 0.3)
    t0 = time.time()
    with pytest.raises(tf.errors.UnavailableError, match="replica\\(s\\) 1 never joined"):
        _core.comm_all_reduce(comm, 0, [tf.constant([1.0])], 0)
    assert time.time() - t0 < 5
    with pytest.raises(tf.errors.UnavailableError):  # aborted from then on
        _core.comm_barrier(comm, 0)


def test_abort_releases_waiting_replicas():
    comm = _core.comm_threads(2, 30.0)

    def fn(r):
        if r == 1:
            time.sleep(0.2)
            _core.comm_abort(comm, 1, "ValueError: boom")
            return None
        return _core.comm_all_reduce(comm, 0, [tf.constant([1.0])], 0)

    t0 = time.time()
    out, errs = _on_threads(2, fn)
    assert time.time() - t0 < 10
    assert isinstance(errs[0], tf.errors.UnavailableError) and "boom" in str(errs[0])


def test_bad_arguments_raise():
    comm = _core.comm_threads(1, 1.0)
    with pytest.raises(tf.errors.InvalidDTypeError):
        _core.comm_all_reduce(comm, 0, [tf.constant([1, 2])], 0)
    with pytest.raises(TypeError):
        _core.comm_all_reduce(comm, 0, [np.ones(2)], 0)
    with pytest.raises(ValueError):
        _core.comm_all_reduce(comm, 5, [tf.constant([1.0])], 0)
    with pytest.raises(ValueError):
        _core.comm_threads(0, 1.0)
    with pytest.raises(TypeError):
        _core.comm_all_reduce("not a comm", 0, [], 0)
    # one replica: the identity
    np.testing.assert_array_equal(
        _core.comm_all_reduce(comm, 0, [tf.constant([1.5])], 0)[0].numpy(), [1.5])


def test_a_missing_engine_slot_is_not_implemented_error():
    """Every engine slot is called through MP_COLL_CALL / mp_comm_abort (csrc/collective.h):
    an engine without a slot is a NotImplementedError naming the engine and the slot, never
    a call through NULL; the slots it has still work."""
    comm = _core.comm_threads(1, 1.0)
    _core._comm_drop_slots(comm, "barrier,broadcast,abort")
    with pytest.raises(NotImplementedError, match="the threads collectives engine does not "
                                                  "implement barrier"):
        _core.comm_barrier(comm, 0)
    with pytest.raises(NotImplementedError, match="does not implement broadcast"):
        _core.comm_broadcast(comm, 0, [tf.constant([1.0])], 0)
    with pytest.raises(NotImplementedError, match="does not implement abort"):
        _core.comm_abort(comm, 0, "boom")
    np.testing.assert_array_equal(
        _core.comm_all_reduce(comm, 0, [tf.constant([1.5])], 0)[0].numpy(), [1.5])
    _core._comm_drop_slots(comm, "all_reduce")  # a second copy replaces the first
    with pytest.raises(NotImplementedError, match="does not implement all_reduce"):
        _core.comm_all_reduce(comm, 0, [tf.constant([1.5])], 0)
    with pytest.raises(NotImplementedError, match="does not implement barrier"):
        _core.comm_barrier(comm, 0)  # not dropped again, but the table it copied lacked it
    with pytest.raises(ValueError, match="no collectives slot named 'destroy'"):
        _core._comm_drop_slots(comm, "destroy")
    del comm  # freed with its own table


def test_many_small_mixed_dtype_outputs_share_one_allocation_per_dtype(rng):
    """The outputs of a call are views of one allocation per dtype (64-byte aligned): the
    values are the rank-order sums bit for bit, every output keeps its own shape and dtype,
    and an output outliving the others still holds its values."""
    dts = [np.float32, np.float64, np.float16, np.float32]
    shapes = [(), (3,), (0,), (5, 2), (7,), (1, 1, 3)] * 50
    data = [[rng.standard_normal(s).astype(dts[i % 4]) for i, s in enumerate(shapes)]
            for _ in range(2)]
    comm = _core.comm_threads(2, 10.0)
    out, errs = _on_threads(2, lambda r: _core.comm_all_reduce(
        comm, r, [tf.constant(a) for a in data[r]], 0))
    assert errs == [None, None]
    for i, s in enumerate(shapes):
        a, b = data[0][i], data[1][i]
        want = (a.astype(np.float32) + b.astype(np.float32)).astype(a.dtype) \
            if a.dtype == np.float16 else a + b
        for r in range(2):
            got = out[r][i].numpy()
            assert got.dtype == a.dtype and got.shape == s
            np.testing.assert_array_equal(got, want)
    keep = out[0][7]
    want = data[0][7] + data[1][7]
    del out
    np.testing.assert_array_equal(keep.numpy(), want)
    assert (keep + 1.0).numpy().tolist() == (want + 1.0).tolist()


def test_fused_outputs_keep_each_tensors_device():
    """Host and emulated-GPU tensors of one dtype in one call: each output on its input's
    device (the fused allocation is the first one's device; the others get their own)."""
    import gc

    real = _core.backend_name(1)
    if real is not None and real != "emulated-gpu":
        pytest.skip("the emulated GPU stands in for host memory on a GPU device here")
    before = _core.device_count(1) if real else 0
    _core._emulate_gpu(1)
    try:
        comm = _core.comm_threads(2, 10.0)

        def body(r):
            with tf.device("/cpu:0"):
                a = tf.constant([1.0 + r, 2.0])
            with tf.device("/gpu:0"):
                b = tf.constant([3.0 + r])
            with tf.device("/cpu:0"):
                c = tf.constant([5.0 + r, 6.0, 7.0])
            return _core.comm_all_reduce(comm, r, [a, b, c], 0)
        out, errs = _on_threads(2, body)
        assert errs == [None, None]
        for r in range(2):
            assert [t.device.endswith(d) for t, d in zip(out[r], ("CPU:0", "GPU:0", "CPU:0"))] \
                == [True, True, True]
            assert [t.numpy().tolist() for t in out[r]] == [[3.0, 4.0], [7.0], [11.0, 12.0, 14.0]]
        del out
    finally:
        gc.collect()
        _core._emulate_gpu(before)
