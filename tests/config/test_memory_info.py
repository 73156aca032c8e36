"""tf.config.experimental.get_memory_info / reset_memory_stats / get_memory_usage."""

import pytest

import mixprec as tf
from mixprec import _gpu_info

exp = tf.config.experimental
MB = 1 << 20


def test_current_follows_tensors_and_peak_keeps_the_high_water_mark():
    base = exp.get_memory_info("CPU:0")["current"]
    exp.reset_memory_stats("CPU:0")
    with tf.device("/CPU:0"):
        x = tf.zeros([MB // 4])  # 1 MiB of float32
        assert exp.get_memory_info("CPU:0")["current"] - base == MB
        y = tf.ones([2 * MB // 4]) + 1.0  # a 2 MiB temporary and a 2 MiB result
        del y
    info = exp.get_memory_info("CPU:0")
    assert info["current"] - base == MB
    assert info["peak"] - base >= 5 * MB
    assert exp.get_memory_usage("/device:CPU:0") == info["current"]
    exp.reset_memory_stats("CPU:0")
    assert exp.get_memory_info("CPU:0")["peak"] == exp.get_memory_info("CPU:0")["current"]
    del x
    assert exp.get_memory_info("CPU:0")["current"] == base


def test_float16_activations_take_half_the_memory():
    with tf.device("/CPU:0"):
        before = exp.get_memory_info("CPU:0")["current"]
        a = tf.random.normal([256, 1024])
        f32 = exp.get_memory_info("CPU:0")["current"] - before
        b = tf.cast(a, tf.float16)
        f16 = exp.get_memory_info("CPU:0")["current"] - before - f32
    assert f32 == 2 * f16 == 256 * 1024 * 4
    del a, b


def test_unknown_devices_are_refused():
    with pytest.raises(ValueError, match="device spec"):
        exp.get_memory_info("TPU:0")
    with pytest.raises(ValueError, match="one CPU"):
        exp.get_memory_info("CPU:1")
    if not _gpu_info.devices() and not _gpu_info.emulated:
        with pytest.raises(ValueError, match="No GPU 0"):
            exp.get_memory_info("GPU:0")


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="device is required"):
        exp.get_memory_info(None)
    with pytest.raises((TypeError, ValueError)):
        exp.reset_memory_stats(3.5)
