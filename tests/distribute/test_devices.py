"""tf.config logical devices: set/get, names, and TensorFlow's RuntimeError once used
(each case in a fresh process, as the configuration is fixed when the runtime is used)."""

import os
import subprocess
import sys
import textwrap


def _run(code):
    # on the CPU backend: with a GPU (even CI's emulated one) MirroredStrategy() picks it
    env = {k: v for k, v in os.environ.items() if k != "MIXPREC_EMULATE_GPU"}
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_logical_cpus_listed_as_tensorflow():
    out = _run("""
        import mixprec as tf
        cpu = tf.config.list_physical_devices('CPU')
        assert tf.config.get_logical_device_configuration(cpu[0]) is None
        tf.config.set_logical_device_configuration(
            cpu[0], [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
        assert len(tf.config.get_logical_device_configuration(cpu[0])) == 2
        print([d.name for d in tf.config.list_logical_devices('CPU')])
        print(tf.distribute.MirroredStrategy().num_replicas_in_sync)
    """)
    assert out.split("\n")[0] == "['/device:CPU:0', '/device:CPU:1']"
    assert out.split("\n")[1] == "2"


def test_configuring_after_use_is_a_runtime_error():
    out = _run("""
        import mixprec as tf
        cpu = tf.config.list_physical_devices('CPU')
        x = tf.constant([1.0])
        try:
            tf.config.set_logical_device_configuration(cpu[0], [tf.config.LogicalDeviceConfiguration()] * 2)
        except RuntimeError as e:
            print(e)
    """)
    assert "Virtual devices cannot be modified after being initialized" in out


def test_list_logical_devices_fixes_the_configuration_same_config_is_fine():
    out = _run("""
        import mixprec as tf
        cpu = tf.config.list_physical_devices('CPU')
        conf = [tf.config.LogicalDeviceConfiguration()] * 2
        tf.config.set_logical_device_configuration(cpu[0], conf)
        tf.config.list_logical_devices()
        tf.config.set_logical_device_configuration(cpu[0], conf)  # unchanged: accepted
        try:
            tf.config.set_logical_device_configuration(cpu[0], conf * 2)
        except RuntimeError:
            print("refused")
        try:
            tf.config.experimental.set_logical_device_configuration(
                cpu[0], [tf.config.LogicalDeviceConfiguration(memory_limit=10)])
        except ValueError as e:
            print(e)
    """)
    assert "refused" in out
    assert "not supported" in out


def test_unknown_device_is_a_value_error():
    import pytest

    import mixprec as tf

    with pytest.raises(ValueError):
        tf.config.set_logical_device_configuration("CPU:7", [])
