"""Learning-rate schedules against the formulas TensorFlow documents for each, at several
steps, with staircase/cycle, and through serialize/deserialize."""

import math

import numpy as np
import pytest

import mixprec as tf
from mixprec.keras.optimizers import schedules

STEPS = [0, 1, 5, 10, 15, 20, 33, 100]


def values(sched):
    out = [sched(s) for s in STEPS]
    assert all(v.dtype == tf.float32 and v.shape == () for v in out)
    return np.array([float(v) for v in out])


def close(got, want):
    np.testing.assert_allclose(got, np.array(want, np.float32), rtol=1e-6)


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_decay(staircase):
    s = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5, staircase=staircase)
    p = [(math.floor(t / 10) if staircase else t / 10) for t in STEPS]
    close(values(s), [0.1 * 0.5 ** q for q in p])


@pytest.mark.parametrize("staircase", [False, True])
def test_inverse_time_decay(staircase):
    s = schedules.InverseTimeDecay(0.1, decay_steps=10, decay_rate=0.5, staircase=staircase)
    p = [(math.floor(t / 10) if staircase else t / 10) for t in STEPS]
    close(values(s), [0.1 / (1 + 0.5 * q) for q in p])


def test_piecewise_constant_decay_boundaries_are_inclusive():
    s = schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1])
    close(values(s), [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.1, 0.1])


@pytest.mark.parametrize("cycle", [False, True])
def test_polynomial_decay(cycle):
    s = schedules.PolynomialDecay(0.1, decay_steps=10, end_learning_rate=0.01, power=2.0,
                                  cycle=cycle)
    want = []
    for t in STEPS:
        ds = 10.0
        if cycle:
            ds = 10.0 * (1.0 if t == 0 else math.ceil(t / 10.0))
        else:
            t = min(t, 10)
        want.append((0.1 - 0.01) * (1 - t / ds) ** 2 + 0.01)
    close(values(s), want)


def test_cosine_decay():
    s = schedules.CosineDecay(0.1, decay_steps=20, alpha=0.1)
    want = [0.1 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(t, 20) / 20)) + 0.1) for t in STEPS]
    close(values(s), want)


def test_a_variable_step_is_read():
    s = schedules.ExponentialDecay(1.0, decay_steps=1, decay_rate=0.5)
    step = tf.Variable(3, dtype=tf.int64)
    assert float(s(step)) == 0.125


@pytest.mark.parametrize("sched", [
    schedules.ExponentialDecay(0.1, 10, 0.5, staircase=True, name="e"),
    schedules.InverseTimeDecay(0.1, 10, 0.5),
    schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1]),
    schedules.PolynomialDecay(0.1, 10, 0.01, power=2.0, cycle=True),
    schedules.CosineDecay(0.1, 20, alpha=0.1),
], ids=lambda s: type(s).__name__)
def test_serialize_round_trip(sched):
    again = schedules.deserialize(schedules.serialize(sched))
    assert type(again) is type(sched) and again.get_config() == sched.get_config()
    close(values(again), values(sched))


@pytest.mark.parametrize("cls", [schedules.ExponentialDecay, schedules.InverseTimeDecay])
def test_decay_steps_must_be_positive(cls):
    with pytest.raises(ValueError, match="decay_steps"):
        cls(0.1, decay_steps=0, decay_rate=0.5)


def test_bad_piecewise_lengths_and_unknown_names():
    with pytest.raises(ValueError, match="1 less"):
        schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5])
    with pytest.raises(ValueError, match="Unknown learning rate schedule"):
        schedules.deserialize({"class_name": "Nope", "config": {}})


def test_cosine_decay_restarts_matches_tf_keras():
    # float32 values printed by tf-keras 2.21 for the same schedules
    s = schedules.CosineDecayRestarts(0.1, 10, t_mul=2.0, m_mul=0.5, alpha=0.01)
    assert [float(s(i)) for i in (0, 3, 10, 15, 29, 30, 31, 70)] == [
        0.10000000149011612, 0.07959537208080292, 0.05050000175833702, 0.04325089603662491,
        0.0013047129614278674, 0.025750000029802322, 0.025711853057146072,
        0.013375001028180122]
    s = schedules.CosineDecayRestarts(0.1, 10, t_mul=1.0)
    assert [float(s(i)) for i in (0, 3, 10, 15, 29, 30)] == [
        0.10000000149011612, 0.07938926666975021, 0.10000000149011612, 0.04999999701976776,
        0.0024471671786159277, 0.10000000149011612]
    assert s.get_config() == {"initial_learning_rate": 0.1, "first_decay_steps": 10,
                              "t_mul": 1.0, "m_mul": 1.0, "alpha": 0.0, "name": None}
    again = schedules.deserialize(schedules.serialize(s))
    assert type(again) is schedules.CosineDecayRestarts


def test_cosine_decay_warmup_matches_tf_keras():
    s = schedules.CosineDecay(0.0, 100, warmup_target=0.1, warmup_steps=10, alpha=0.1)
    assert [float(s(i)) for i in (0, 5, 10, 50, 110, 200)] == [
        0.0, 0.05000000074505806, 0.10000000149011612, 0.06890576332807541,
        0.010000000707805157, 0.010000000707805157]
    assert s.get_config() == {"initial_learning_rate": 0.0, "decay_steps": 100, "alpha": 0.1,
                              "name": None, "warmup_target": 0.1, "warmup_steps": 10}
    s = schedules.CosineDecay(0.1, 100, alpha=0.1)
    assert [float(s(i)) for i in (0, 5, 10, 50, 110)] == [
        0.10000000149011612, 0.09944597631692886, 0.09779754281044006, 0.05499999597668648,
        0.010000000707805157]
