"""fit/evaluate/predict on Python generators and keras.utils.Sequence, with tf-keras 2.21's
rules (recorded on TensorFlow 2.21 + tf-keras 2.21): a generator is never restarted (a
finite one runs out in the second epoch, which still ends with the reset metrics' 0.0), a
Sequence is read in full each epoch with on_epoch_end after each, y beside either is an
error, float64 batches become float32."""

import numpy as np
import pytest

from mixprec import keras


def _model():
    m = keras.Sequential([keras.layers.Dense(1, kernel_initializer="zeros")])
    m.compile("sgd", "mse", metrics=["mae"])
    return m


def _gen(n, batch=4):
    for i in range(n):
        yield np.full((batch, 3), i + 1.0), np.ones((batch, 1))  # float64, as users write


class Batches(keras.utils.Sequence):
    def __init__(self, n=3):
        self.n, self.ends, self.seen = n, 0, []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.seen.append(i)
        return [np.full((2, 3), float(i)), np.ones((2, 1))]  # a list: (x, y) as tf-keras

    def on_epoch_end(self):
        self.ends += 1


def test_a_finite_generator_runs_out_in_the_second_epoch(caplog):
    h = _model().fit(_gen(5), epochs=2, verbose=0)
    assert len(h.history["loss"]) == 2 and h.history["loss"][1] == 0.0  # as tf-keras 2.21
    assert "ran out of data" in caplog.text and "10 batches" in caplog.text


def test_an_endless_generator_with_steps_continues_across_epochs():
    seen = []

    def gen():
        i = 0
        while True:
            seen.append(i)
            yield np.full((2, 3), float(i), "float32"), np.ones((2, 1), "float32")
            i += 1

    m = _model()
    h = m.fit(gen(), steps_per_epoch=3, epochs=2, verbose=0,
              validation_data=_gen(10), validation_steps=2)
    assert len(h.history["val_loss"]) == 2
    assert int(m.optimizer.iterations.numpy()) == 6
    assert seen[:6] == list(range(6))  # one iterator, never restarted


def test_a_sequence_is_read_in_full_each_epoch_and_told_when_it_ends():
    seq = Batches()
    m = _model()
    h = m.fit(seq, epochs=3, verbose=0, shuffle=False)
    assert len(h.history["loss"]) == 3 and seq.ends == 3
    assert seq.seen == [0, 1, 2] * 3
    seq2 = Batches(8)
    m.fit(seq2, epochs=1, verbose=0)  # fit shuffles a Sequence's batch order by default
    assert sorted(seq2.seen) == list(range(8))
    assert isinstance(m.evaluate(Batches(), verbose=0), list)
    assert m.predict(Batches(), verbose=0).shape == (6, 1)


def test_generator_batches_become_floatx():
    m = _model()
    m.fit(_gen(2), epochs=1, verbose=0)
    assert m.predict(_gen(1), verbose=0).dtype == np.float32


def test_y_beside_a_generator_or_sequence_is_an_error():
    with pytest.raises(ValueError, match="`y` argument is not supported when using python "
                                         "generator as input."):
        _model().fit(_gen(2), np.ones(3))
    with pytest.raises(ValueError, match="`sample_weight` argument is not supported when using "
                                         "`keras.utils.Sequence` as input."):
        _model().fit(Batches(), sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="Data is expected to be in format"):
        def bad():
            yield (np.ones((2, 3)),) * 4
        _model().fit(bad(), epochs=1, verbose=0)
