"""Replays of traced functions captured as CUDA graphs (csrc/graph_capture.c, the CUDA
backend's graph_capture_* slots): never on the CPU or the emulated GPU (no such slots);
on a real GPU a training step is captured after a clean replay and re-launched, with the
results of plain replays, and an eager change of a variable between calls is seen.
The GPU tests are marked `gpu` (skipped without one); NOTE: not yet run on a GPU."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core, keras
from tolerances import assert_close

real_gpu = pytest.mark.skipif(_core.backend_name(1) != "cuda", reason="needs a GPU of the CUDA backend")


def _counts():
    return _core.cuda_graph_counts()


def _make_step(device):
    with tf.device(device):
        w = tf.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
        opt = keras.optimizers.Adam(0.01)

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return loss

    return w, step


def test_the_cpu_never_captures():
    before = _counts()
    w, step = _make_step("/CPU:0")
    with tf.device("/CPU:0"):
        x = tf.constant(np.ones((2, 4), np.float32))
        for _ in range(5):
            step(x)
    assert _counts() == before
    assert _core._backend_slots(0)["graph_capture_begin"] is False


def test_the_emulated_gpu_has_no_cuda_graphs(any_gpu):
    if any_gpu != "emulated-gpu":
        pytest.skip("a real GPU")
    slots = _core._backend_slots(1)
    assert not any(slots[k] for k in ("graph_capture_begin", "graph_capture_end", "graph_launch",
                                      "graph_destroy"))
    before = _counts()
    w, step = _make_step("/GPU:0")
    with tf.device("/GPU:0"):
        for _ in range(5):
            step(tf.constant(np.ones((2, 4), np.float32)))
    assert _counts() == before


def _run(monkeypatch, graphs, steps=8):
    monkeypatch.setenv("MIXPREC_CUDA_GRAPHS", "1" if graphs else "0")
    w, step = _make_step("/GPU:0")
    rng = np.random.default_rng(0)
    losses = []
    with tf.device("/GPU:0"):
        for _ in range(steps):
            losses.append(float(step(tf.constant(rng.standard_normal((2, 4)).astype(np.float32)))))
    return w.numpy(), np.array(losses)


@pytest.mark.gpu
@real_gpu
def test_a_captured_training_step_equals_plain_replays(monkeypatch):
    plain_w, plain_l = _run(monkeypatch, graphs=False)
    before = _counts()
    w, losses = _run(monkeypatch, graphs=True)
    after = _counts()
    assert after["captures"] > before["captures"] and after["launches"] > before["launches"], after
    assert_close(w, plain_w, "float32", "exact")
    assert_close(losses, plain_l, "float32", "exact")


@pytest.mark.gpu
@real_gpu
def test_an_eager_assignment_between_launches_is_seen(monkeypatch):
    monkeypatch.setenv("MIXPREC_CUDA_GRAPHS", "1")
    with tf.device("/GPU:0"):
        v = tf.Variable([1.0, 2.0])

        @tf.function
        def f(x):
            return v * x

        x = tf.constant([3.0, 3.0])
        for _ in range(5):
            np.testing.assert_array_equal(f(x).numpy(), [3.0, 6.0])
        v.assign([10.0, 20.0])
        np.testing.assert_array_equal(f(x).numpy(), [30.0, 60.0])
        held = f(x)
        np.testing.assert_array_equal(f(tf.constant([1.0, 1.0])).numpy(), [10.0, 20.0])
        np.testing.assert_array_equal(held.numpy(), [30.0, 60.0])  # a launch never rewrites a result


@pytest.mark.gpu
@real_gpu
def test_functions_with_host_callbacks_are_not_captured(monkeypatch, capsys):
    monkeypatch.setenv("MIXPREC_CUDA_GRAPHS", "1")
    before = _counts()
    with tf.device("/GPU:0"):
        @tf.function
        def f(x):
            tf.print("x", x)
            return x * 2.0

        for _ in range(5):
            f(tf.constant(1.0))
    assert _counts()["captures"] == before["captures"]
    assert capsys.readouterr().out.count("x 1") == 5


@pytest.fixture
def emulated_graphs(any_gpu):
    """The emulated GPU with emulated CUDA-graph slots: its kernels run while "capturing",
    a first launch is a no-op and a re-launch fails, so the core's bookkeeping (static
    inputs, fresh output buffers, output copies, fingerprints, fallbacks) runs here."""
    if any_gpu != "emulated-gpu":
        pytest.skip("a real GPU")
    _core._emulate_graphs(True)
    try:
        yield
    finally:
        _core._emulate_graphs(False)


def test_capture_bookkeeping_keeps_replay_results(emulated_graphs, monkeypatch):
    plain_w, plain_l = _run(monkeypatch, graphs=False, steps=12)
    before = _counts()
    w, losses = _run(monkeypatch, graphs=True, steps=12)
    after = _counts()
    # captured (and run once) after clean replays; every re-launch fails over to a replay,
    # and after three failures the graph stops trying
    assert after["captures"] > before["captures"], after
    assert 1 <= after["failed"] - before["failed"] <= 3, (before, after)
    np.testing.assert_array_equal(w, plain_w)
    np.testing.assert_array_equal(losses, plain_l)


def test_capture_never_rewrites_a_result_the_caller_holds(emulated_graphs, monkeypatch):
    monkeypatch.setenv("MIXPREC_CUDA_GRAPHS", "1")
    with tf.device("/GPU:0"):
        v = tf.Variable([1.0, 2.0])

        @tf.function
        def f(x):
            return v * x

        held = [f(tf.constant([float(i), 1.0])) for i in range(8)]
        v.assign([10.0, 20.0])
        held.append(f(tf.constant([1.0, 1.0])))
    got = [h.numpy().tolist() for h in held]
    assert got[:8] == [[float(i), 2.0] for i in range(8)]
    assert got[8] == [10.0, 20.0]


def test_graphs_off_by_environment(emulated_graphs, monkeypatch):
    before = _counts()
    _run(monkeypatch, graphs=False, steps=6)
    assert _counts() == before
