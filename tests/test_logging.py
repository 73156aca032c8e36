"""Default log visibility as TensorFlow 2.21's in a plain script (checked with /tmp/tfenv):
Python INFO lines ("Using MirroredStrategy with devices ...") hidden, warnings on stderr as
``WARNING:<logger>:...``, nothing on stdout; the runtime (C++) log shown unless
TF_CPP_MIN_LOG_LEVEL hides it."""

import logging
import os
import subprocess
import sys

import mixprec as tf


def _run(code, **env):
    e = dict(os.environ)
    e.update(env)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout, p.stderr


def test_strategy_creation_prints_nothing_by_default():
    out, err = _run("import mixprec as tf\ntf.distribute.MirroredStrategy(['/cpu:0'])\n"
                    "print(tf.get_logger().level, tf.get_logger().getEffectiveLevel())")
    assert out == "0 30\n"  # TensorFlow: level NOTSET, WARNING from the root logger
    assert "Using MirroredStrategy" not in err


def test_info_lines_show_once_the_level_is_lowered():
    out, err = _run("import mixprec as tf\ntf.get_logger().setLevel('INFO')\n"
                    "tf.distribute.MirroredStrategy(['/cpu:0'])")
    assert out == ""
    assert "INFO:mixprec:Using MirroredStrategy with devices " \
           "('/job:localhost/replica:0/task:0/device:CPU:0',)" in err


def test_warnings_go_to_stderr():
    out, err = _run("import mixprec as tf\ntf.get_logger().warning('hello warning')\n"
                    "tf.get_logger().info('hidden info')")
    assert out == ""
    assert "WARNING:mixprec:hello warning" in err and "hidden info" not in err


def test_policy_compatibility_check_is_a_warning_or_nothing():
    # TensorFlow: the WARNING block without a fast GPU; the "OK" result is INFO (hidden)
    out, err = _run("from mixprec import keras\n"
                    "keras.mixed_precision.set_global_policy('mixed_float16')\n"
                    "keras.mixed_precision.set_global_policy('mixed_float16')")
    assert out == ""
    lines = [ln for ln in err.splitlines() if ln.startswith(("WARNING:", "INFO:"))]
    assert lines in ([], ["WARNING:mixprec:Mixed precision compatibility check (mixed_float16): "
                          "WARNING"])


def test_runtime_log_follows_tf_cpp_min_log_level():
    code = ("from mixprec import _logging\n_logging.runtime_logger().info('runtime line')\n"
            "_logging.runtime_logger().warning('runtime warning')")
    _, err = _run(code)
    assert "INFO:mixprec:runtime line" in err
    _, err = _run(code, TF_CPP_MIN_LOG_LEVEL="1")
    assert "runtime line" not in err and "WARNING:mixprec:runtime warning" in err


def test_get_logger_is_a_standard_logger():
    lg = tf.get_logger()
    assert isinstance(lg, logging.Logger) and lg.name == "mixprec"
