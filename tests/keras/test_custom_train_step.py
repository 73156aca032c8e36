"""A custom train_step as tf-keras 2.x' guide writes it ("Customizing what happens in
fit"): keras.utils.unpack_x_y_sample_weight, self.compiled_loss(...),
self.compiled_metrics.update_state(...); plus the keras.backend helpers such steps use.
Expected values recorded from TensorFlow 2.21 + tf-keras 2.21."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.testing.tolerances import TOLERANCE

u = keras.utils
B = keras.backend


class _Stepped(keras.Model):
    def train_step(self, data):
        x, y, sw = u.unpack_x_y_sample_weight(data)
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred, sample_weight=sw,
                                      regularization_losses=self.losses)
        self.optimizer.minimize(loss, self.trainable_variables, tape=tape)
        self.compiled_metrics.update_state(y, y_pred, sw)
        return {m.name: m.result() for m in self.metrics}


def _model(**dense):
    i = keras.Input((2,))
    m = _Stepped(i, keras.layers.Dense(1, kernel_initializer="ones", **dense)(i))
    m.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
    return m


def test_custom_train_step_with_the_compiled_containers():
    m = _model()
    assert type(m.compiled_loss).__name__ == "LossesContainer"
    assert type(m.compiled_metrics).__name__ == "MetricsContainer"
    assert m.compiled_loss.metrics == [] and m.compiled_metrics.metrics == []
    assert m.metrics == []
    h = m.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0, shuffle=False)
    assert sorted(h.history) == ["loss", "mae"]
    np.testing.assert_allclose(h.history["loss"], [1.0])  # (2 - 1)^2 before the step
    assert [x.name for x in m.compiled_loss.metrics] == ["loss"]
    assert [x.name for x in m.compiled_metrics.metrics] == ["mae"]
    assert sorted(m.evaluate(np.ones((4, 2)), np.ones((4, 1)), verbose=0,
                             return_dict=True)) == ["loss", "mae"]
    reg = _model(kernel_regularizer="l2")
    h = reg.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0, shuffle=False)
    rtol, atol = TOLERANCE[("float32", "reduction")]
    np.testing.assert_allclose(h.history["loss"], [1.02], rtol=rtol, atol=atol)  # + 0.01 * 2


def test_pack_and_unpack():
    assert [u.unpack_x_y_sample_weight(d) for d in [1, (1,), (1, 2), (1, 2, 3), [1, 2]]] == [
        (1, None, None), (1, None, None), (1, 2, None), (1, 2, 3), (1, 2, None)]
    with pytest.raises(ValueError, match=r"^Data is expected to be in format `x`, `\(x,\)`, "
                                         r"`\(x, y\)`, or `\(x, y, sample_weight\)`, found: "):
        u.unpack_x_y_sample_weight((1, 2, 3, 4))
    assert [u.pack_x_y_sample_weight(1), u.pack_x_y_sample_weight((1, 2)),
            u.pack_x_y_sample_weight(1, 2), u.pack_x_y_sample_weight(1, 2, 3),
            u.pack_x_y_sample_weight([1, 2])] == [1, ((1, 2),), (1, 2), (1, 2, 3), [1, 2]]


def test_backend_helpers():
    v = tf.Variable([[1.0, 2.0]])
    assert B.int_shape(v) == (1, 2) and B.int_shape(keras.Input((3, 4))) == (None, 3, 4)
    assert B.get_value(v).tolist() == [[1.0, 2.0]] and B.get_value(tf.constant(2.0)) == 2.0
    B.set_value(v, [[3.0, 4.0]])
    assert v.numpy().tolist() == [[3.0, 4.0]]
    assert B.cast_to_floatx(1) == np.float32(1) and B.cast_to_floatx([1, 2]).dtype == np.float32
    count = B.count_params(v)
    assert count == 2 and type(count) is np.int64
