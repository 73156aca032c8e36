"""tf.random stateless ops: TensorFlow 2.21's numbers bit for bit (the SHA-256 prefixes of
1001-element draws were printed by TensorFlow for the same calls), argument rules, seeds."""

import hashlib

import numpy as np
import pytest

import mixprec as tf

_CASES = {
    "uniform": lambda s, d: tf.random.stateless_uniform([1001], s, dtype=d),
    "uniform_ab": lambda s, d: tf.random.stateless_uniform([37], s, minval=-3.0, maxval=5.0,
                                                           dtype=d),
    "normal": lambda s, d: tf.random.stateless_normal([1001], s, dtype=d),
    "normal_ms": lambda s, d: tf.random.stateless_normal([33], s, mean=2.0, stddev=0.5, dtype=d),
    "trunc": lambda s, d: tf.random.stateless_truncated_normal([1001], s, dtype=d),
    "int": lambda s, d: tf.random.stateless_uniform([1001], s, minval=-7, maxval=1000, dtype=d),
    "full": lambda s, d: tf.random.stateless_uniform([1001], s, minval=None, maxval=None,
                                                     dtype=d),
}

# (kind, seed, dtype, sha256(values' bytes)[:16]) from TensorFlow 2.21 on a CPU
_TF = [
    ("uniform", [1, 2], "float32", "3139b6c2c55b64c4"),
    ("uniform_ab", [1, 2], "float32", "a5c3bd8a0142bdf5"),
    ("normal", [1, 2], "float32", "e344f429a1ec53c0"),
    ("normal_ms", [1, 2], "float32", "e3ae282e8139a459"),
    ("trunc", [1, 2], "float32", "7f4237fc544208f5"),
    ("uniform", [1, 2], "float16", "64b94433346bfb41"),
    ("uniform_ab", [1, 2], "float16", "4946d13e9560cc0b"),
    ("normal", [1, 2], "float16", "8df061e6c6f58335"),
    ("normal_ms", [1, 2], "float16", "4a54e4a72943458e"),
    ("trunc", [1, 2], "float16", "dc74b1b32a865399"),
    ("uniform", [1, 2], "bfloat16", "9e3479f4f58a7aeb"),
    ("uniform_ab", [1, 2], "bfloat16", "41214aef6a857657"),
    ("normal", [1, 2], "bfloat16", "5b915c48705caed9"),
    ("normal_ms", [1, 2], "bfloat16", "0e1cfebb06cf06ad"),
    ("trunc", [1, 2], "bfloat16", "91a20580529f8646"),
    ("uniform", [1, 2], "float64", "0635bf532935af32"),
    ("uniform_ab", [1, 2], "float64", "3bee08e311695d99"),
    ("normal", [1, 2], "float64", "f533702ab569a913"),
    ("normal_ms", [1, 2], "float64", "47d82620d98056e9"),
    ("trunc", [1, 2], "float64", "d7e814e75051c5ce"),
    ("int", [1, 2], "int32", "69b929b9040a538e"),
    ("full", [1, 2], "int32", "eccc2d1702afdac1"),
    ("int", [1, 2], "int64", "d68804825bfc539e"),
    ("full", [1, 2], "int64", "3bba43d421aaee2c"),
    ("uniform", [7, -3], "float32", "6b4393fae04b89c6"),
    ("uniform_ab", [7, -3], "float32", "a8bf6d3a246a10ed"),
    ("normal", [7, -3], "float32", "e4fef93c420effe9"),
    ("normal_ms", [7, -3], "float32", "a9628b204cf48339"),
    ("trunc", [7, -3], "float32", "64c27a18497cd6b4"),
    ("uniform", [7, -3], "float16", "aeda6b05b29401ce"),
    ("uniform_ab", [7, -3], "float16", "8db3140a84c67514"),
    ("normal", [7, -3], "float16", "aa53ac0937429698"),
    ("normal_ms", [7, -3], "float16", "a69faa3318349f24"),
    ("trunc", [7, -3], "float16", "4d8fdbfa815bdff3"),
    ("uniform", [7, -3], "bfloat16", "62e44ba5e050ae10"),
    ("uniform_ab", [7, -3], "bfloat16", "27a5fa33fc5af800"),
    ("normal", [7, -3], "bfloat16", "722506910f053a5b"),
    ("normal_ms", [7, -3], "bfloat16", "6d30196ae4861cbc"),
    ("trunc", [7, -3], "bfloat16", "0b08f3f5fe7f53d0"),
    ("uniform", [7, -3], "float64", "b6e2c08d2ac8ccbf"),
    ("uniform_ab", [7, -3], "float64", "7882acda07858360"),
    ("normal", [7, -3], "float64", "f97e1faa7e175eef"),
    ("normal_ms", [7, -3], "float64", "025d5c56e538bae1"),
    ("trunc", [7, -3], "float64", "6c0e8e52bb68368e"),
    ("int", [7, -3], "int32", "a58cdcbd4a5aa9d7"),
    ("full", [7, -3], "int32", "ffef1b94caa5b48b"),
    ("int", [7, -3], "int64", "fcdffbf4b1f99b9d"),
    ("full", [7, -3], "int64", "d0fe47efabad2f65"),
    ("uniform", [1099511627776, 5], "float32", "5bf97f4fef0433ec"),
    ("uniform_ab", [1099511627776, 5], "float32", "2ab35aafd6777043"),
    ("normal", [1099511627776, 5], "float32", "6b801f9f50bd6a88"),
    ("normal_ms", [1099511627776, 5], "float32", "c6cd8c20d1633266"),
    ("trunc", [1099511627776, 5], "float32", "1b55d0d286a0f46b"),
    ("uniform", [1099511627776, 5], "float16", "d4db1532e3d31e2f"),
    ("uniform_ab", [1099511627776, 5], "float16", "b15dcab743ef64fa"),
    ("normal", [1099511627776, 5], "float16", "0bb456bc7643c89d"),
    ("normal_ms", [1099511627776, 5], "float16", "d2f69628e1b2983e"),
    ("trunc", [1099511627776, 5], "float16", "08e611af79995982"),
    ("uniform", [1099511627776, 5], "bfloat16", "131b57903bf33321"),
    ("uniform_ab", [1099511627776, 5], "bfloat16", "1f2efd689f9b13d8"),
    ("normal", [1099511627776, 5], "bfloat16", "7cb5a9037a85e03e"),
    ("normal_ms", [1099511627776, 5], "bfloat16", "48bf275728d79a7a"),
    ("trunc", [1099511627776, 5], "bfloat16", "07b53926e8d176cc"),
    ("uniform", [1099511627776, 5], "float64", "1d829375c5e8f6e0"),
    ("uniform_ab", [1099511627776, 5], "float64", "65e64eff58c80710"),
    ("normal", [1099511627776, 5], "float64", "e797b560056fedbb"),
    ("normal_ms", [1099511627776, 5], "float64", "9093667eed33b825"),
    ("trunc", [1099511627776, 5], "float64", "595139b20b5fd799"),
    ("int", [1099511627776, 5], "int32", "713ea114c88db2d7"),
    ("full", [1099511627776, 5], "int32", "618043a88ad111f0"),
    ("int", [1099511627776, 5], "int64", "2f8a01fcddb187f3"),
    ("full", [1099511627776, 5], "int64", "5794fbcae9532d9a"),
]


@pytest.mark.parametrize("kind,seed,dtype,digest", _TF)
def test_stateless_bits_equal_tensorflow(kind, seed, dtype, digest):
    got = np.ascontiguousarray(_CASES[kind](seed, dtype).numpy())
    if tf.config.list_physical_devices("GPU") and kind in ("normal", "normal_ms", "trunc"):
        pytest.skip("the GPU's libm may differ from glibc in the last bits of normal draws")
    assert hashlib.sha256(got.tobytes()).hexdigest()[:16] == digest


def test_stateless_values_equal_tensorflow_literals():
    # printed by TensorFlow 2.21
    assert tf.random.stateless_uniform([6], seed=[1, 2]).numpy().tolist() == pytest.approx(
        [0.8440604, 0.19204533, 0.9962232, 0.1603874, 0.27199018, 0.649346], abs=1e-7)
    assert tf.random.stateless_uniform([4], seed=[1, 2], minval=-5, maxval=10,
                                       dtype=tf.int32).numpy().tolist() == [5, 9, 4, 4]
    assert tf.random.stateless_uniform([4], seed=[1, 2], minval=-5, maxval=10,
                                       dtype=tf.int64).numpy().tolist() == [4, -2, -3, -2]
    assert tf.random.fold_in([1, 2], 3).numpy().tolist() == [1105988140, 3]
    assert tf.random.split([1, 2], 3).numpy().tolist() == [
        [1105988140, 1738052849], [-335576002, 370444179], [10670227, -246211131]]
    s64 = tf.random.split(tf.constant([1, 2], tf.int64))
    assert s64.dtype == tf.int64 and s64.numpy().tolist() == [
        [7464880146280614444, 1591045637757961278],
        [-1057468755545501549, 2524363516007002203]]


def test_stateless_is_a_function_of_the_seed_also_in_functions():
    a = tf.random.stateless_normal([5], seed=[3, 4])
    assert np.array_equal(a.numpy(), tf.random.stateless_normal([5], seed=[3, 4]).numpy())
    assert not np.array_equal(a.numpy(), tf.random.stateless_normal([5], seed=[4, 3]).numpy())

    @tf.function
    def f():
        return tf.random.stateless_normal([5], seed=[3, 4])

    for _ in range(3):  # replays draw the same numbers (a stateless op keeps its stream)
        assert np.array_equal(f().numpy(), a.numpy())


def test_stateless_argument_errors():
    with pytest.raises(ValueError, match="must be both None or not None"):
        tf.random.stateless_uniform([2], seed=[1, 2], dtype=tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"seed must have shape \[2\], not \[3\]"):
        tf.random.stateless_uniform([4], seed=[1, 2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"not \[\]"):
        tf.random.stateless_uniform([4], seed=1)


def test_algorithm_enum():
    A = tf.random.Algorithm
    assert [a.value for a in A] == [1, 2, 3] and A.PHILOX.value == 1
    assert tf.random.stateless_uniform([3], [1, 2], alg="philox").shape == (3,)


def test_stateless_categorical_and_binomial():
    logits = tf.math.log([[0.5, 0.5], [1e-6, 1.0]])
    s = tf.random.stateless_categorical(logits, 200, seed=[7, 17])
    assert s.shape == (2, 200) and s.dtype == tf.int64
    assert np.array_equal(s.numpy(), tf.random.stateless_categorical(logits, 200, [7, 17]).numpy())
    assert set(s.numpy()[0].tolist()) == {0, 1} and s.numpy()[1].mean() > 0.98
    b = tf.random.stateless_binomial([2000, 2], seed=[1, 2], counts=[10.0, 20.0], probs=0.5)
    assert b.dtype == tf.int32 and b.shape == (2000, 2)
    v = b.numpy()
    assert v[:, 0].max() <= 10 and v[:, 1].max() <= 20 and v.min() >= 0
    assert abs(v[:, 0].mean() - 5) < 0.3 and abs(v[:, 1].mean() - 10) < 0.4


def test_stateless_categorical_equals_tensorflow():
    # printed by TensorFlow 2.21 for the same calls
    assert tf.random.stateless_categorical(tf.math.log([[0.5, 0.5]]), 5,
                                           seed=[7, 17]).numpy().tolist() == [[1, 0, 1, 0, 0]]
    assert tf.random.stateless_categorical([[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]], 7,
                                           seed=[1, 2]).numpy().tolist() == \
        [[2, 2, 1, 2, 2, 2, 2], [2, 2, 2, 2, 2, 2, 2]]
    r = tf.random.stateless_categorical([[1.0, float("-inf"), 3.0, 0.5]], 9, seed=[3, 4],
                                        dtype=tf.int32)
    assert r.dtype == tf.int32 and r.numpy().tolist() == [[3, 2, 2, 2, 3, 2, 2, 0, 2]]
    r = tf.random.stateless_categorical(tf.random.stateless_normal([3, 10], seed=[5, 6]), 50,
                                        seed=[9, 9]).numpy()
    assert r.sum() == 598 and r[:, :10].tolist() == [
        [2, 4, 2, 2, 3, 0, 4, 7, 4, 0], [3, 3, 3, 2, 3, 7, 3, 6, 3, 2],
        [8, 4, 6, 8, 4, 3, 5, 9, 5, 6]]
