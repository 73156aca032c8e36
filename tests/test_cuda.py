"""The CUDA backend's own behaviour on a real GPU (skipped elsewhere, the emulated GPU
included): out-of-memory as MemoryError with the process intact, zero host synchronisations
per training step counted by the backend (batches fed from NumPy included), TF32 on by
default and off on request, casts bit-exact against the CPU on every float16 value, the
memory pool, and the guide's model reaching the CPU's accuracy. The op-by-op comparison with
the CPU is tests/test_cuda_parity.py; device plumbing is tests/test_device.py."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core, _gpu_info, keras
from mixprec.config import experimental as config_experimental
from mixprec.keras import layers, mixed_precision
from tolerances import assert_bits_equal, assert_gpu_close

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(_core.backend_name(1) != "cuda", reason="needs the CUDA backend on a real GPU")]


@pytest.fixture(autouse=True)
def _policy():
    from mixprec.keras.mixed_precision import policy as _policy

    saved = _policy._global_policy
    yield
    _policy._global_policy = saved


def test_the_gpu_is_listed_and_described():
    gpus = tf.config.list_physical_devices("GPU")
    assert len(gpus) == len(_gpu_info.devices()) >= 1
    details = tf.config.experimental.get_device_details(gpus[0])
    assert details["compute_capability"] >= (8, 0)
    assert tf.constant(1.0).device.endswith("device:GPU:0")


def test_out_of_memory_is_memory_error_and_the_process_goes_on():
    with pytest.raises(MemoryError) as info:
        tf.zeros([2**40], "float32")  # 4 TiB
    msg = str(info.value)
    assert isinstance(info.value, tf.errors.ResourceExhaustedError)
    assert "out of GPU memory" in msg and "could not allocate 4398046511104 bytes" in msg
    assert "free on the device" in msg
    x = tf.ones([1000, 1000])
    assert float(tf.reduce_sum(tf.matmul(x, x))) == 1e9


def test_the_pool_keeps_what_it_has():
    before = _gpu_info._cuda.memory_info(0)
    x = tf.zeros([64, 1024, 1024])  # 256 MiB
    during = _gpu_info._cuda.memory_info(0)
    assert during["pool_used"] >= before["pool_used"] + 256 * 2**20
    del x
    _gpu_info.synchronize()
    after = _gpu_info._cuda.memory_info(0)
    assert after["pool_used"] < during["pool_used"]
    assert after["pool_reserved"] >= during["pool_used"]  # kept for the next allocation


def _guide_model(units, seed=0):
    tf.random.set_seed(seed)
    inputs = keras.Input(shape=(784,))
    x = layers.Dense(units, activation="relu")(inputs)
    x = layers.Dense(units, activation="relu")(x)
    x = layers.Dense(10)(x)
    return keras.Model(inputs, layers.Activation("softmax", dtype="float32")(x))


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16", "float32"])
def test_a_training_step_from_numpy_batches_never_waits(policy):
    """The guide's custom step, the batch converted from NumPy every step: the host-to-device
    copy goes through the pinned staging ring and waits for nothing."""
    mixed_precision.set_global_policy(policy)
    model = _guide_model(256)
    opt = keras.optimizers.RMSprop()
    if policy == "mixed_float16":
        opt = mixed_precision.LossScaleOptimizer(opt)
    loss_object = keras.losses.SparseCategoricalCrossentropy()
    rng = np.random.default_rng(0)
    xs, ys = rng.random((8, 512, 784), dtype=np.float32), rng.integers(0, 10, (8, 512))
    scaling = policy == "mixed_float16"

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_object(y, model(x))
            scaled = opt.get_scaled_loss(loss) if scaling else loss
        grads = tape.gradient(scaled, model.trainable_variables)
        if scaling:
            grads = opt.get_unscaled_gradients(grads)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    step(xs[0], ys[0])
    step(xs[1], ys[1])
    before = _gpu_info.host_sync_count()
    for i in range(2, 8):
        loss = step(xs[i], ys[i])
    assert _gpu_info.host_sync_count() - before == 0
    assert np.isfinite(float(loss))


def test_tf32_is_on_by_default_and_can_be_turned_off():
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-1, 1, (512, 1024)), rng.uniform(-1, 1, (1024, 256))
    exact = a @ b
    ta, tb = tf.constant(a.astype(np.float32)), tf.constant(b.astype(np.float32))
    assert config_experimental.tensor_float_32_execution_enabled()
    err_tf32 = np.abs(tf.matmul(ta, tb).numpy() - exact).max()
    try:
        config_experimental.enable_tensor_float_32_execution(False)
        err_strict = np.abs(tf.matmul(ta, tb).numpy() - exact).max()
    finally:
        config_experimental.enable_tensor_float_32_execution(True)
    assert err_strict < 1e-4 < err_tf32 < 0.1  # TF32 keeps 10 mantissa bits of each input
    # 16-bit products are unaffected by the switch
    h = tf.cast(ta, "float16"), tf.cast(tb, "float16")
    r1 = tf.matmul(*h).numpy()
    config_experimental.enable_tensor_float_32_execution(False)
    try:
        r2 = tf.matmul(*h).numpy()
    finally:
        config_experimental.enable_tensor_float_32_execution(True)
    assert_bits_equal(r1, r2)


def test_every_float16_value_casts_as_on_the_cpu():
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    h = bits.view(np.float16)
    with tf.device("/CPU:0"):
        cpu32 = tf.cast(tf.constant(h), "float32").numpy()
    gpu32 = tf.cast(tf.constant(h), "float32").numpy()
    assert_bits_equal(gpu32, cpu32)  # NaN payloads included
    back = tf.cast(tf.constant(cpu32), "float16").numpy()
    with tf.device("/CPU:0"):
        cpu_back = tf.cast(tf.constant(cpu32), "float16").numpy()
    assert_bits_equal(back, cpu_back)
    rng = np.random.default_rng(2)
    f = rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    for dt in ("float16", "bfloat16"):
        with tf.device("/CPU:0"):
            c = tf.cast(tf.constant(f), dt).numpy()
        assert_bits_equal(tf.cast(tf.constant(f), dt).numpy(), c, "(random float32 bits -> %s)" % dt)


def test_the_guide_model_trains_to_the_cpus_accuracy():
    """The guide's model (smaller: 512 units) on the embedded Fashion-MNIST subset, 3 epochs
    of mixed_float16 with the loss scale: GPU and CPU test accuracy within 2 points."""
    from mixprec.keras.datasets import fashion_mnist

    (x_train, y_train), (x_test, y_test) = fashion_mnist.load_embedded()
    x_train = x_train.reshape(-1, 784).astype("float32") / 255
    x_test = x_test.reshape(-1, 784).astype("float32") / 255
    mixed_precision.set_global_policy("mixed_float16")
    accs = {}
    for device in ("/CPU:0", "/GPU:0"):
        with tf.device(device):
            model = _guide_model(512, seed=3)
            model.compile(loss="sparse_categorical_crossentropy", optimizer=keras.optimizers.RMSprop(),
                          metrics=["accuracy"])
            model.fit(x_train, y_train, batch_size=256, epochs=3, verbose=0)
            accs[device] = model.evaluate(x_test, y_test, verbose=0)[1]
    assert accs["/GPU:0"] > 0.7
    assert abs(accs["/GPU:0"] - accs["/CPU:0"]) < 0.02, accs


def test_a_large_reduction_and_softmax_match_the_cpu():
    """Shapes of the guide's step: the split reductions and a (8192, 10) softmax."""
    rng = np.random.default_rng(4)
    g = rng.standard_normal((8192, 4096)).astype(np.float16)
    with tf.device("/CPU:0"):
        cpu = tf.reduce_sum(tf.constant(g), 0).numpy(), tf.reduce_sum(tf.constant(g)).numpy()
    gpu = tf.reduce_sum(tf.constant(g), 0).numpy(), tf.reduce_sum(tf.constant(g)).numpy()
    assert_gpu_close(gpu[0], cpu[0], "float16", "reduction")
    assert_gpu_close(gpu[1], cpu[1], "float16", "reduction")
    logits = rng.standard_normal((8192, 10)).astype(np.float32) * 5
    with tf.device("/CPU:0"):
        c = tf.nn.softmax(tf.constant(logits)).numpy()
    assert_gpu_close(tf.nn.softmax(tf.constant(logits)).numpy(), c, "float32", "softmax")
