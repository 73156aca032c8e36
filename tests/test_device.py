"""Device plumbing: TensorFlow's placement (GPU:0 by default when there is one, the CPU in
``with mixprec.device('/CPU:0')``), explicit copies between devices, training state that
lives and is updated on the device, zero host synchronisations per training step, and
unsupported backend slots reported as NotImplementedError.

These run everywhere: against the real GPU when the CUDA backend is registered, otherwise
against the emulated GPU (the CPU kernels registered as GPU:0, the ``any_gpu`` fixture), which
checks the core and the Python layer but none of the CUDA kernels (tests/test_cuda*.py do)."""

import gc

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core, _gpu_info, keras
from mixprec.keras import layers, mixed_precision
from tolerances import assert_close

GPU = "device:GPU:0"
CPU = "device:CPU:0"


@pytest.fixture(autouse=True)
def _global_policy():
    from mixprec.keras.mixed_precision import policy as _policy

    saved = _policy._global_policy
    yield
    _policy._global_policy = saved


# --------------------------------------------------------------------------- placement


def test_tensors_live_on_the_gpu_by_default(any_gpu):
    assert len(tf.config.list_physical_devices("GPU")) >= 1
    x = tf.constant([[1.5, -2.0], [3.0, 4.25]])
    assert x.device.endswith(GPU)
    np.testing.assert_array_equal(x.numpy(), [[1.5, -2.0], [3.0, 4.25]])  # .numpy() copies back
    y = tf.matmul(x, x) + 1.0
    assert y.device.endswith(GPU)
    np.testing.assert_array_equal(y.numpy(), x.numpy() @ x.numpy() + 1.0)
    with tf.device("/CPU:0"):
        c = tf.constant([1.0, 2.0])
        assert c.device.endswith(CPU)
        assert tf.zeros([3]).device.endswith(CPU)
    assert tf.zeros([3]).device.endswith(GPU)
    v = tf.Variable([1.0, 2.0])
    assert v.device.endswith(GPU)


def test_identity_under_a_device_scope_is_an_explicit_copy(any_gpu):
    with tf.device("/CPU:0"):
        c = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    with tf.device("/GPU:0"):
        g = tf.identity(c)
    assert g.device.endswith(GPU) and c.device.endswith(CPU)
    np.testing.assert_array_equal(g.numpy(), c.numpy())
    with tf.device("/CPU:0"):
        back = tf.identity(g * 2.0)
    assert back.device.endswith(CPU)
    np.testing.assert_array_equal(back.numpy(), 2 * c.numpy())


def test_tensors_of_two_devices_do_not_mix_implicitly(any_gpu):
    with tf.device("/CPU:0"):
        c = tf.constant([1.0, 2.0])
    g = tf.constant([3.0, 4.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="is on GPU:0 but input #0 is on CPU:0.*identity"):
        c + g


def test_python_values_follow_the_tensor_they_meet(any_gpu):
    with tf.device("/CPU:0"):
        c = tf.constant([1.0, 2.0])
    # outside the scope the default device is the GPU, but the 2.0 goes where c is
    r = 2.0 - c * 2
    assert r.device.endswith(CPU)
    np.testing.assert_array_equal(r.numpy(), [0.0, -2.0])


def test_a_missing_gpu_index_is_an_error(any_gpu):
    with pytest.raises(tf.errors.InvalidArgumentError, match="GPU:7 is not available"):
        with tf.device("/GPU:7"):
            pass


# --------------------------------------------------------------------------- training state


def _model(units=32, seed=3):
    tf.random.set_seed(seed)
    inputs = keras.Input(shape=(20,))
    h = layers.Dense(units, activation="relu")(inputs)
    h = layers.Dense(units, activation="relu")(h)
    h = layers.Dense(5)(h)
    out = layers.Activation("softmax", dtype="float32")(h)
    return keras.Model(inputs, out)


def _data(n=64):
    rng = np.random.default_rng(7)
    return rng.random((n, 20), dtype=np.float32) * 4, rng.integers(0, 5, n)


def _custom_step(model, opt, loss_object, x, y, blow_up=1.0):
    with tf.GradientTape() as tape:
        loss = loss_object(y, model(x)) * blow_up
        scaled = opt.get_scaled_loss(loss)
    grads = opt.get_unscaled_gradients(tape.gradient(scaled, model.trainable_variables))
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def _fit_syncs(batch_size, **fit_kw):
    """Host synchronisations of a 2-epoch fit (after a warm-up fit)."""
    mixed_precision.set_global_policy("mixed_float16")
    x, y = _data(64)
    model = _model()
    model.compile(optimizer="rmsprop", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x, y, batch_size=batch_size, epochs=1, verbose=0, **fit_kw)
    before = _gpu_info.host_sync_count()
    history = model.fit(x, y, batch_size=batch_size, epochs=2, verbose=0, **fit_kw)
    syncs = _gpu_info.host_sync_count() - before
    assert len(history.steps["loss_scale"]) == 2 * 64 // batch_size  # read after counting
    return syncs


def test_fit_reads_metrics_back_per_epoch_not_per_step(any_gpu):
    # 8 steps an epoch or 4: the same number of waits, all at the epochs' ends
    assert _fit_syncs(8) == _fit_syncs(16)
    # validation steps do not wait either
    val = tuple(_data(32))
    assert _fit_syncs(8, validation_data=val) == _fit_syncs(16, validation_data=val)


def test_a_callback_that_reads_batch_logs_gets_floats(any_gpu):
    seen = []
    cb = keras.callbacks.LambdaCallback(on_batch_end=lambda b, logs: seen.append(logs))
    x, y = _data(32)
    model = _model()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=8, verbose=0, callbacks=[cb])
    assert len(seen) == 4 and all(isinstance(v, float) for logs in seen for v in logs.values())


@pytest.mark.parametrize("inner", ["RMSprop", "Adam", "SGD"])
def test_a_mixed_float16_step_never_waits_for_the_device(any_gpu, inner):
    mixed_precision.set_global_policy("mixed_float16")
    model = _model()
    opt = mixed_precision.LossScaleOptimizer(getattr(keras.optimizers, inner)())
    loss_object = keras.losses.SparseCategoricalCrossentropy()
    x, y = (tf.constant(a) for a in _data())
    assert x.device.endswith(GPU)

    def minimize():
        opt.minimize(lambda: loss_object(y, model(x)), model.trainable_variables)

    for _ in range(2):  # first steps create slots, plans and caches
        _custom_step(model, opt, loss_object, x, y)
        minimize()
    before = _gpu_info.host_sync_count()
    for _ in range(4):
        _custom_step(model, opt, loss_object, x, y)
        minimize()
    assert _gpu_info.host_sync_count() - before == 0
    assert opt.iterations.device.endswith(GPU)
    assert opt.loss_scale.device.endswith(GPU)
    before = _gpu_info.host_sync_count()
    assert float(opt.loss_scale) == 32768.0  # reading the scale is what waits
    assert _gpu_info.host_sync_count() - before == 1
    assert int(opt.iterations.numpy()) == 12


def _loss_scale_run(device):
    """A run with overflowing steps: (scale, good steps) after each step, and the weights."""
    with tf.device(device):
        mixed_precision.set_global_policy("mixed_float16")
        model = _model(units=16)
        opt = mixed_precision.LossScaleOptimizer(keras.optimizers.Adam(0.01), initial_scale=2.0 ** 18,
                                                 dynamic_growth_steps=2)
        loss_object = keras.losses.SparseCategoricalCrossentropy()
        x, y = (tf.constant(a) for a in _data())
        states = []
        for i in range(10):
            _custom_step(model, opt, loss_object, x, y, blow_up=1e4 if i in (3, 4) else 1.0)
            states.append((float(opt.loss_scale), int(opt.dynamic_counter.numpy())))
        return states, [w for w in model.get_weights()], int(opt.iterations.numpy())


def test_the_loss_scale_state_machine_on_the_device_equals_the_cpus(any_gpu):
    cpu_states, cpu_weights, cpu_iters = _loss_scale_run("/CPU:0")
    gpu_states, gpu_weights, gpu_iters = _loss_scale_run("/GPU:0")
    assert gpu_states == cpu_states  # scale and count exactly: float32 arithmetic on both
    assert any(b[0] < a[0] for a, b in zip(cpu_states, cpu_states[1:]))  # a skipped step happened
    assert any(b[0] > a[0] for a, b in zip(cpu_states, cpu_states[1:]))  # and a growth
    assert gpu_iters == cpu_iters == 10
    for g, c in zip(gpu_weights, cpu_weights):
        # GPU GEMMs accumulate in another order: the weights agree to the float16 model's noise
        assert_close(g, c, "float16", "matmul")


def test_state_created_on_the_cpu_moves_to_the_variables_device(any_gpu):
    mixed_precision.set_global_policy("float32")
    model = _model(units=8)
    with tf.device("/CPU:0"):
        opt = mixed_precision.LossScaleOptimizer(keras.optimizers.RMSprop())
    assert opt.iterations.device.endswith(CPU) and opt.loss_scale.device.endswith(CPU)
    x, y = (tf.constant(a) for a in _data(16))
    _custom_step(model, opt, keras.losses.SparseCategoricalCrossentropy(), x, y)
    assert opt.iterations.device.endswith(GPU) and opt.loss_scale.device.endswith(GPU)
    assert int(opt.iterations.numpy()) == 1


def test_optimizer_apply_returns_the_devices_decision(any_gpu):
    v = tf.Variable([1.0, 2.0])
    ls = _core.LossScale(True, 8.0, 2, 2.0, 1.0)
    it = tf.Variable(0, dtype=tf.int64)
    hp = (0.1, 0.0, False, 0.9, 1e-7, False, 0.9, 0.999, False, False)
    applied = _core.optimizer_apply(_core.OPTIM_SGD, hp, [v], [tf.constant([np.inf, 1.0])], [], it, ls, True, 1.0)
    assert isinstance(applied, tf.Tensor) and applied.device.endswith(GPU)
    assert not bool(applied)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])  # skipped
    assert ls.value() == 4.0 and ls.good_steps() == 0 and int(it.numpy()) == 1
    applied = _core.optimizer_apply(_core.OPTIM_SGD, hp, [v], [tf.constant([8.0, 16.0])], [], it, ls, True, 1.0, True)
    assert bool(applied)
    np.testing.assert_allclose(v.numpy(), [1.0 - 0.1 * 2.0, 2.0 - 0.1 * 4.0], rtol=1e-6)  # unscaled by 4
    assert ls.value() == 4.0 and ls.good_steps() == 1 and int(it.numpy()) == 2
    # no finite check: nothing was decided on the device
    assert _core.optimizer_apply(_core.OPTIM_SGD, hp, [v], [tf.constant([0.0, 0.0])], [], it, None, False, 1.0) is True


# --------------------------------------------------------------------------- unsupported slots


@pytest.fixture
def partial_gpu():
    """An emulated GPU without some slots (only where no real GPU is registered)."""
    if _core.backend_name(1) == "cuda":
        pytest.skip("a real GPU is registered; slot removal needs the emulated one")
    was_on = _core.device_count(1) > 0
    _core._emulate_gpu(False)

    def make(without):
        _core._emulate_gpu(True, without)

    yield make
    gc.collect()
    _core._emulate_gpu(was_on)


def test_a_missing_backend_slot_is_not_implemented_error(partial_gpu):
    partial_gpu("gemm,softmax_xent,optim_update")
    x = tf.constant(np.ones((2, 2), np.float32))
    assert x.device.endswith(GPU)
    with pytest.raises(NotImplementedError, match="emulated-gpu backend does not implement gemm"):
        tf.matmul(x, x)
    with pytest.raises(NotImplementedError, match="does not implement softmax_xent"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([0, 1]), logits=x)
    v = tf.Variable([1.0])
    with pytest.raises(NotImplementedError, match=r"does not implement optim_update \(GPU:0\)"):
        keras.optimizers.SGD().apply_gradients([(tf.constant([1.0]), v)])
    np.testing.assert_array_equal((x + x).numpy(), 2 * np.ones((2, 2)))  # the rest still works


def test_a_missing_copy_slot_fails_dlpack_and_variables_cleanly(partial_gpu):
    """Every slot is called through MP_BACKEND_CALL (mixprec.h): a backend without copy_d2d
    or cast is a NotImplementedError naming the slot and the device, never a crash."""
    partial_gpu("copy_d2d,cast")
    x = tf.constant(np.arange(4, dtype=np.float32))
    assert x.device.endswith(GPU)
    with pytest.raises(NotImplementedError, match=r"emulated-gpu backend does not implement copy_d2d \(GPU:0\)"):
        x.__dlpack__(copy=True)
    with pytest.raises(NotImplementedError, match="does not implement copy_d2d"):
        tf.Variable(x).assign(x)
    with pytest.raises(NotImplementedError, match=r"does not implement cast \(GPU:0\)"):
        tf.cast(x, tf.float16)
    np.testing.assert_array_equal((x * 2.0).numpy(), [0.0, 2.0, 4.0, 6.0])  # the rest still works


def test_missing_device_services_are_not_implemented_error(partial_gpu):
    partial_gpu("memory_stats,synchronize,host_syncs")
    with pytest.raises(NotImplementedError, match="does not implement memory_stats"):
        tf.config.experimental.get_memory_info("GPU:0")
    with pytest.raises(NotImplementedError, match="does not implement synchronize"):
        _gpu_info.synchronize()
    with pytest.raises(NotImplementedError, match=r"does not implement host_syncs \(GPU:0\)"):
        _gpu_info.host_sync_count()
    assert tf.config.experimental.get_memory_info("CPU:0")["current"] >= 0


def test_device_services_go_through_the_table(any_gpu):
    """memory_stats and synchronize are slots (backend.def): the same Python call for CPU
    and GPU, no branching on the device type."""
    _gpu_info.synchronize()
    _core.synchronize(0, 0)
    before = tf.config.experimental.get_memory_info("GPU:0")["current"]
    x = tf.zeros([1024])  # 4 KiB on GPU:0
    assert tf.config.experimental.get_memory_info("GPU:0")["current"] - before == 4096
    del x
    with pytest.raises(ValueError, match="No GPU 1"):
        tf.config.experimental.get_memory_info("GPU:1")
    with pytest.raises(tf.errors.InvalidArgumentError, match="GPU:7 is not available"):
        _core.synchronize(1, 7)


def test_the_cpu_table_fills_every_slot_of_backend_def():
    slots = _core._backend_slots(0)
    # CUDA graphs
    gpu_only = {"graph_capture_begin", "graph_capture_end", "graph_launch", "graph_destroy"}
    assert gpu_only <= set(slots) and not any(slots[k] for k in gpu_only)
    assert all(v for k, v in slots.items() if k not in gpu_only), [k for k, v in slots.items() if not v]
    assert {"copy_d2d", "memory_stats", "synchronize", "host_syncs", "conv"} <= set(slots)
    assert _core._backend_slots(5) is None


def test_a_gpu_without_allocation_cannot_make_tensors(partial_gpu):
    partial_gpu("alloc")
    with pytest.raises(NotImplementedError, match="cannot allocate"):
        tf.constant([1.0])
    with tf.device("/CPU:0"):
        assert tf.constant([1.0]).device.endswith(CPU)


def test_an_unknown_slot_name_is_refused(partial_gpu):
    with pytest.raises(ValueError, match="no backend slot named 'gemmm'"):
        partial_gpu("gemmm")
