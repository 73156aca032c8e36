"""``tf.device`` follows TensorFlow 2.21's soft placement (measured there on a CPU-only
machine, with and without two logical CPUs): ``/cpu:1``, ``/cpu:3`` and ``/gpu:0`` all run
the op on CPU:0 instead of raising. A missing GPU index on a machine that has GPUs stays an
InvalidArgumentError (tests/test_device.py)."""

import pytest

import mixprec as tf
from mixprec import _core

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


@pytest.mark.parametrize("name", ["/cpu:1", "/CPU:3", "/device:CPU:1"])
def test_any_cpu_index_runs_on_the_host(name):
    with tf.device(name):
        c = tf.constant(1.0) + 1
    assert c.device == CPU0 and float(c) == 2.0


def test_a_gpu_request_without_gpus_runs_on_cpu():
    if _core.device_count(1) > 0:
        pytest.skip("this process has a GPU (real or emulated)")
    with tf.device("/gpu:0"):
        c = tf.constant([1.0, 2.0]) * 2
    assert c.device == CPU0 and c.numpy().tolist() == [2.0, 4.0]
