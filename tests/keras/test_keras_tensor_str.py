"""str() and type_spec of a KerasTensor as tf-keras 2.21 prints them (measured there): the
repr stays the short ``<KerasTensor: shape=... dtype=... (created by layer '...')>``, str()
is the long ``KerasTensor(type_spec=TensorSpec(...), name=..., description=...)`` form.
(tf-keras names layer outputs after graph ops, 'dense/Relu:0'; mixprec uses the layer name.)"""

from mixprec import keras
from mixprec.keras import layers


def test_input_str_repr_and_type_spec():
    x = keras.Input(shape=(784,), name="digits")
    assert str(x) == ("KerasTensor(type_spec=TensorSpec(shape=(None, 784), dtype=tf.float32, "
                      "name='digits'), name='digits', description=\"created by layer 'digits'\")")
    assert repr(x) == "<KerasTensor: shape=(None, 784) dtype=float32 (created by layer 'digits')>"
    assert repr(x.type_spec) == "TensorSpec(shape=(None, 784), dtype=tf.float32, name='digits')"


def test_layer_output_type_spec_is_unnamed():
    y = layers.Dense(4, name="dd")(keras.Input(shape=(3,)))
    assert repr(y.type_spec) == "TensorSpec(shape=(None, 4), dtype=tf.float32, name=None)"
    assert str(y).startswith("KerasTensor(type_spec=TensorSpec(shape=(None, 4), "
                             "dtype=tf.float32, name=None), name=")
    assert str(y).endswith(", description=\"created by layer 'dd'\")")
    assert repr(y) == "<KerasTensor: shape=(None, 4) dtype=float32 (created by layer 'dd')>"
