"""tf.autograph.set_verbosity and tf.autograph.trace (TensorFlow 2.21: both return None;
trace prints its arguments to stdout when the function is traced)."""

import logging

import mixprec as tf
from mixprec.autograph import _verbosity


def test_set_verbosity_and_environment(monkeypatch):
    monkeypatch.setattr(_verbosity, "_level", None)
    monkeypatch.setenv("AUTOGRAPH_VERBOSITY", "5")
    assert _verbosity.get_verbosity() == 5
    assert tf.autograph.set_verbosity(0) is None
    assert _verbosity.get_verbosity() == 0  # set_verbosity wins over the environment


def test_level_gates_messages_and_echo(monkeypatch, capsys, caplog):
    monkeypatch.setattr(_verbosity, "_level", None)
    monkeypatch.setattr(_verbosity, "_echo", False)
    monkeypatch.delenv("AUTOGRAPH_VERBOSITY", raising=False)
    tf.get_logger().addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.INFO, logger="mixprec"):
            _verbosity.log(1, "hidden %s", 1)
            tf.autograph.set_verbosity(1, alsologtostdout=True)
            _verbosity.log(1, "shown %s", 2)
            _verbosity.log(2, "too verbose")
    finally:
        tf.get_logger().removeHandler(caplog.handler)
    msgs = [r.getMessage() for r in caplog.records]
    assert msgs == ["shown 2"]
    assert capsys.readouterr().out == "shown 2\n"


def test_trace_prints_at_tracing_time(capsys):
    @tf.function
    def f(x):
        tf.autograph.trace("x is", x.dtype)
        return x * 2

    f(tf.constant(1.0))
    f(tf.constant(2.0))  # no retrace: nothing printed
    assert capsys.readouterr().out == "x is <dtype: 'float32'>\n"
