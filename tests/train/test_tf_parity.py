"""tf.train against TensorFlow 2.21: each expected value is what TensorFlow 2.21 returned
or raised for the same lines (recorded with /tmp/tfenv; TensorFlow is never imported)."""

import numpy as np
import pytest

import mixprec as tf


def test_load_variable(tmp_path):
    p = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).save(str(tmp_path / "ckpt"))
    got = tf.train.load_variable(p, "v/.ATTRIBUTES/VARIABLE_VALUE")
    assert got.dtype == np.float32 and got.tolist() == [1.0, 2.0]
    assert tf.train.load_variable(str(tmp_path), "save_counter/.ATTRIBUTES/VARIABLE_VALUE") == 1
    with pytest.raises(tf.errors.NotFoundError, match="Key nope not found in checkpoint"):
        tf.train.load_variable(p, "nope")


def test_restore_into_a_variable_of_another_dtype_is_invalid_argument(tmp_path):
    p = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).save(str(tmp_path / "ckpt"))
    v = tf.Variable([1, 2])
    # TensorFlow: InvalidArgumentError "tensor_name = v/.ATTRIBUTES/VARIABLE_VALUE; expected
    # dtype int32 does not equal original dtype float"
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"tensor_name = v/.ATTRIBUTES/VARIABLE_VALUE; expected dtype int32 "
                             r"does not equal original dtype float"):
        tf.train.Checkpoint(v=v).restore(p)
    assert v.numpy().tolist() == [1, 2]
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.train.Checkpoint(v=v).restore(p)
    assert str(e.value).startswith("tensor_name = v/.ATTRIBUTES/VARIABLE_VALUE; expected")


def test_checkpoint_names_the_bad_keyword():
    with pytest.raises(ValueError, match="`Checkpoint` was expecting v to be a trackable"):
        tf.train.Checkpoint(v=1.0)


def test_restore_of_a_directory_is_data_loss(tmp_path):
    tf.train.Checkpoint(v=tf.Variable(1.0)).save(str(tmp_path / "ckpt"))
    with pytest.raises(tf.errors.DataLossError, match="Is a directory"):
        tf.train.Checkpoint(v=tf.Variable(1.0)).restore(str(tmp_path))
