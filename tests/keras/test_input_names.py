"""Default names of Keras inputs: tf-keras numbers inputs from 1 ('input_1', 'input_2'),
layers from 0 ('dense', 'dense_1')."""

from mixprec import keras


def test_inputs_are_numbered_from_one_and_layers_from_zero():
    keras.backend.clear_session()
    a, b = keras.Input(shape=(3,)), keras.Input(shape=(3,))
    assert (a.name, b.name) == ("input_1", "input_2")
    model = keras.Model(a, keras.layers.Dense(2)(a))
    assert [layer.name for layer in model.layers] == ["input_1", "dense"]
    keras.backend.clear_session()
    assert keras.Input(shape=(1,)).name == "input_1"
