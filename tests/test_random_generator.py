"""tf.random.Generator, the global generator and the stateful samplers (TensorFlow 2.21's
state rules; the numbers are mixprec's)."""

import numpy as np
import pytest

import mixprec as tf


def test_generator_state_follows_tensorflow():
    g = tf.random.Generator.from_seed(1)
    assert g.state.numpy().tolist() == [1, 0, 0] and g.algorithm == 1
    g.normal([3])
    assert g.state.numpy().tolist() == [769, 0, 0]  # TF 2.21: 256 per element
    g.uniform([5])
    assert g.state.numpy().tolist() == [2049, 0, 0]
    g.truncated_normal([7])
    assert g.state.numpy().tolist() == [3841, 0, 0]
    assert tf.random.create_rng_state(1, "philox").numpy().tolist() == [1, 0, 0]
    assert tf.random.create_rng_state(2 ** 70 + 3, 1).numpy().tolist() == [3, 64, 0]
    assert tf.random.create_rng_state([1, 2], 1).numpy().tolist() == [0, 1, 2]


def test_generator_is_reproducible_and_advances():
    a, b = tf.random.Generator.from_seed(42), tf.random.Generator.from_seed(42)
    x1, y1 = a.normal([100]), b.normal([100])
    assert np.array_equal(x1.numpy(), y1.numpy())
    x2 = a.normal([100])
    assert not np.array_equal(x1.numpy(), x2.numpy())
    assert abs(float(tf.reduce_mean(a.normal([20000])))) < 0.05
    u = a.uniform([1000], minval=2.0, maxval=3.0)
    assert u.numpy().min() >= 2.0 and u.numpy().max() < 3.0
    t = a.truncated_normal([1000], stddev=2.0)
    assert np.abs(t.numpy()).max() <= 4.0
    i = a.uniform([1000], minval=0, maxval=10, dtype=tf.int32)
    assert i.dtype == tf.int32 and set(i.numpy().tolist()) == set(range(10))
    assert a.uniform_full_int([4], tf.int64).dtype == tf.int64
    with pytest.raises(ValueError,
                       match="minval and maxval must be both `None` or both non-`None`"):
        a.uniform([2], dtype=tf.int32)
    c = tf.random.Generator(copy_from=a)
    assert np.array_equal(c.normal([4]).numpy(), a.normal([4]).numpy())
    a.reset_from_seed(42)
    assert np.array_equal(a.normal([100]).numpy(), x1.numpy())


def test_generator_split_seeds_and_global():
    g = tf.random.Generator.from_seed(3)
    parts = g.split(2)
    assert len(parts) == 2 and all(p.state.numpy()[:2].tolist() == [0, 0] for p in parts)
    assert not np.array_equal(parts[0].normal([4]).numpy(), parts[1].normal([4]).numpy())
    seeds = g.make_seeds(3)
    assert seeds.shape == (2, 3) and seeds.dtype == tf.int64
    tf.random.set_global_generator(tf.random.Generator.from_seed(5))
    assert tf.random.get_global_generator().state.numpy().tolist() == [5, 0, 0]
    nd = tf.random.Generator.from_non_deterministic_state()
    assert nd.normal([2]).shape == (2,)
    b = g.binomial([500], counts=10.0, probs=0.5)
    assert b.dtype == tf.int32 and 0 <= b.numpy().min() and b.numpy().max() <= 10


def test_generator_in_function_draws_new_values_each_call():
    g = tf.random.Generator.from_seed(9)

    @tf.function
    def f():
        return g.normal([3])

    with pytest.warns(UserWarning, match="graph break"):
        a = f()
    b = f()
    assert not np.array_equal(a.numpy(), b.numpy())
    assert g.state.numpy()[0] == 9 + 2 * 3 * 256


def test_categorical_shuffle_gamma_poisson():
    tf.random.set_seed(1)
    c = tf.random.categorical(tf.math.log([[0.1, 0.9]]), 2000)
    assert c.shape == (1, 2000) and c.dtype == tf.int64
    assert 0.85 < c.numpy().mean() < 0.95
    assert tf.random.categorical([[0.0, 0.0]], 3, dtype=tf.int32).dtype == tf.int32
    x = tf.reshape(tf.range(40), [20, 2])
    s = tf.random.shuffle(x, seed=3)
    assert s.shape == (20, 2)
    assert sorted(s.numpy()[:, 0].tolist()) == list(range(0, 40, 2))
    assert (s.numpy()[:, 1] == s.numpy()[:, 0] + 1).all()
    assert not np.array_equal(s.numpy(), x.numpy())
    g = tf.random.gamma([4000], [0.5, 3.0], beta=[1.0, 2.0])
    assert g.shape == (4000, 2) and g.dtype == tf.float32 and g.numpy().min() > 0
    mean = g.numpy().mean(0)
    assert abs(mean[0] - 0.5) < 0.05 and abs(mean[1] - 1.5) < 0.08
    p = tf.random.poisson([4000], [1.0, 30.0], dtype=tf.int32)
    assert p.shape == (4000, 2) and p.dtype == tf.int32
    pm = p.numpy().mean(0)
    assert abs(pm[0] - 1.0) < 0.08 and abs(pm[1] - 30.0) < 0.5


def test_generator_checkpoints_its_state_under_tensorflows_key(tmp_path):
    g = tf.random.Generator.from_seed(4)
    g.normal([2])
    path = tf.train.Checkpoint(g=g).save(str(tmp_path / "ckpt"))
    names = [n for n, _ in tf.train.list_variables(path)]
    assert "g/_state_var/.ATTRIBUTES/VARIABLE_VALUE" in names  # TensorFlow's key
    after = g.normal([3]).numpy()
    g2 = tf.random.Generator.from_seed(99)
    tf.train.Checkpoint(g=g2).restore(path)
    assert g2.state.numpy().tolist() == [516, 0, 0]
    assert np.array_equal(g2.normal([3]).numpy(), after)


def test_generator_draws_are_tensorflows_numbers():
    # printed by TensorFlow 2.21 for the same calls (its documentation's example first)
    g = tf.random.Generator.from_seed(1234)
    np.testing.assert_array_equal(g.normal(shape=(2, 3)).numpy(), np.array(
        [[0.9356608986854553, 1.0854305028915405, -0.937883734703064],
         [-0.5061547160148621, 1.3169702291488647, 0.7137578725814819]], np.float32))
    g = tf.random.Generator.from_seed(1)
    np.testing.assert_array_equal(g.uniform([8]).numpy(), np.array(
        [0.7874951362609863, 0.3906511068344116, 0.29263055324554443, 0.9921692609786987,
         0.9581042528152466, 0.5562331676483154, 0.16466295719146729, 0.13445711135864258],
        np.float32))
    g = tf.random.Generator.from_state([5, 7, 9], 1)
    np.testing.assert_array_equal(g.uniform([4]).numpy(), np.array(
        [0.16008341312408447, 0.4439568519592285, 0.5784305334091187, 0.6909451484680176],
        np.float32))
    assert g.uniform_full_int([4], tf.int32).numpy().tolist() == \
        [658199784, -349322113, 814029678, -786057766]
    assert g.state.numpy().tolist() == [2053, 7, 9]
    g = tf.random.Generator.from_seed(3)
    assert g.uniform([3], minval=0, maxval=10, dtype=tf.int32).numpy().tolist() == [5, 6, 3]
    assert g.uniform([2], minval=-5, maxval=2 ** 40, dtype=tf.int64).numpy().tolist() == \
        [1086666457349, 125998070260]
    assert g.uniform_full_int([2], tf.int64).numpy().tolist() == \
        [4813388563319872208, 512430925607662203]


# sha256(values)[:12] of nine successive draws and the final state, printed by TensorFlow 2.21
# (the second and third states make the 128-bit counter carry)
_GEN_TF = [
    ([1, 0, 0],
     ['f6cea054578f', 'fed45c3888a0', '0751c2cf54f5', '271b1370e8b1', '60959393b0b7',
      '7027d8911941', '1ec5e58bb4f2', 'b124fc307433', '190819a935ec'],
     [99585, 0, 0]),
    ([-1, 5, 9],
     ['aebb9a565038', '57ebd0ffa99e', '8ef3fa1cd5e4', '83546fec0c03', '860060cde9dc',
      'f9a8571625a3', '91361f0af053', '52eb10cbe302', 'a889baca3ca6'],
     [99583, 6, 9]),
    ([-3, -1, 123456789],
     ['ee020a047867', '6f6185fce546', '24485ef3b9c5', '8e423ca567f3', 'ebe966d926e8',
      '7b11534cc128', '52467e6e0390', '2ff1f72459b6', '2acf980e0f55'],
     [99581, 0, 123456789]),
    ([2**40, 3, -7],
     ['72a346b04aae', '832d5d8573aa', 'c6eaf34f7553', 'c1b3609acd30', 'b5a92cf5f0f9',
      '78abc98efd88', '5f759f6ae993', '86f8a0d567b1', 'f0190d1f8576'],
     [1099511727360, 3, -7]),
]


@pytest.mark.parametrize("state,digests,final", _GEN_TF)
def test_generator_streams_equal_tensorflow(state, digests, final):
    import hashlib
    g = tf.random.Generator.from_state(state, 1)
    draws = [lambda: g.normal([101]), lambda: g.uniform([77], dtype=tf.float64),
             lambda: g.truncated_normal([55]), lambda: g.uniform([33], dtype=tf.float16),
             lambda: g.normal([21], dtype=tf.float64),
             lambda: g.uniform([40], minval=-3, maxval=1000, dtype=tf.int32),
             lambda: g.uniform([40], minval=-3, maxval=10 ** 12, dtype=tf.int64),
             lambda: g.uniform_full_int([9], tf.int64),
             lambda: g.truncated_normal([13], dtype=tf.bfloat16)]
    got = [hashlib.sha256(np.ascontiguousarray(f().numpy()).tobytes()).hexdigest()[:12]
           for f in draws]
    assert g.state.numpy().tolist() == final
    if tf.config.list_physical_devices("GPU"):
        pytest.skip("the GPU's libm may differ from glibc in the last bits of normal draws")
    assert got == digests
    assert g.state.numpy().tolist() == final
