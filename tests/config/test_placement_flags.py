"""tf.config's soft-placement flag and the experimental_ spellings of run_functions_eagerly."""

import pytest

import mixprec as tf


def test_soft_device_placement_flag():
    assert tf.config.get_soft_device_placement() is True
    try:
        tf.config.set_soft_device_placement(False)
        assert tf.config.get_soft_device_placement() is False
    finally:
        tf.config.set_soft_device_placement(True)


def test_experimental_run_functions_eagerly():
    try:
        with pytest.warns(DeprecationWarning, match="run_functions_eagerly"):
            tf.config.experimental_run_functions_eagerly(True)
        with pytest.warns(DeprecationWarning):
            assert tf.config.experimental_functions_run_eagerly() is True
        assert tf.config.functions_run_eagerly() is True
    finally:
        tf.config.run_functions_eagerly(False)
