"""An exception raised while a function traces is raised again as TensorFlow 2.21 does
(src/mixprec/_user_errors.py): the same class (StagingError where TensorFlow does not
re-create it), the message framed by ``in user code:`` and the user's frames. The expected
texts are TensorFlow 2.21's, printed for the same functions (file names and line numbers
are this file's)."""

import os

import numpy as np
import pytest

import mixprec as tf
from mixprec._user_errors import StagingError

HERE = os.path.abspath(__file__)


def _line(fn, offset):
    return fn.__code__.co_firstlineno + offset


def helper(x):
    raise ValueError("multi\nline")


def calls_helper(x):
    return helper(x)


def test_a_python_error_is_framed_with_the_user_frames():
    with pytest.raises(ValueError) as e:
        tf.function(calls_helper)(tf.ones([2]))
    assert type(e.value) is ValueError
    assert str(e.value) == (
        'in user code:\n\n'
        '    File "%s", line %d, in calls_helper  *\n'
        '        return helper(x)\n'
        '    File "%s", line %d, in helper  *\n'
        '        raise ValueError("multi\\nline")\n\n'
        '    ValueError: multi\n'
        '    line\n' % (HERE, _line(calls_helper, 1), HERE, _line(helper, 1)))
    assert len(e.value.args) == 1


def test_autograph_false_keeps_the_message():
    with pytest.raises(ValueError) as e:
        tf.function(calls_helper, autograph=False)(tf.ones([2]))
    assert str(e.value) == "multi\nline"


class MyErr(Exception):
    pass


class MyVal(ValueError):
    pass


def _raise(exc):
    raise exc


@tf.autograph.experimental.do_not_convert
def not_converted(x):
    raise RuntimeError("nc")


def through_not_converted(x):
    return not_converted(x)


def numpy_error(x):
    return np.reshape(np.ones(3), (2, 2))


def test_classes_as_tensorflow_recreates_them():
    # TensorFlow 2.21: KNOWN classes and plain Exception subclasses keep their class,
    # KeyError a KeyError printing the framed text, others become StagingError
    cases = [(TypeError("tt"), TypeError), (AttributeError("a"), AttributeError),
             (NotImplementedError("ni"), NotImplementedError), (AssertionError("boom"), AssertionError),
             (MyErr("mine"), MyErr), (IndexError("idx"), StagingError),
             (ZeroDivisionError("z"), StagingError), (MyVal("val sub"), StagingError)]
    for exc, cls in cases:
        with pytest.raises(Exception) as e:
            tf.function(lambda x: _raise(exc))(tf.ones([2]))
        assert type(e.value) is cls
        msg = str(e.value)
        assert msg.startswith("in user code:\n\n") and msg.endswith(
            "\n\n    %s: %s\n" % (type(exc).__name__, exc)), msg
        assert "_raise  *\n        raise exc\n" in msg
    with pytest.raises(KeyError) as e:
        tf.function(lambda x: {}["missing"])(tf.ones([2]))
    assert type(e.value).__name__ == "KeyError"
    assert str(e.value).endswith("    KeyError: 'missing'\n")


def test_lambda_and_not_converted_frames():
    with pytest.raises(ValueError) as e:
        tf.function(lambda x: x + tf.ones([3]))(tf.ones([2]))
    lines = str(e.value).split("\n")
    # TensorFlow names a lambda's frame "None" and shows the lambda's own source
    assert lines[2].endswith(", in None  *") and lines[3] == "        lambda x: x + tf.ones([3])"
    with pytest.raises(RuntimeError) as e:
        tf.function(through_not_converted)(tf.ones([2]))
    assert str(e.value) == (
        'in user code:\n\n'
        '    File "%s", line %d, in through_not_converted  *\n'
        '        return not_converted(x)\n'
        '    File "%s", line %d, in not_converted  **\n'
        '        raise RuntimeError("nc")\n\n'
        '    RuntimeError: nc\n' % (HERE, _line(through_not_converted, 1), HERE,
                                   _line(not_converted, 2)))  # (after its decorator)
    # a library called from converted code: "**", its own callee unmarked
    with pytest.raises(ValueError) as e:
        tf.function(numpy_error)(tf.ones([2]))
    frames = [ln for ln in str(e.value).split("\n") if ln.startswith("    File ")]
    assert frames[0].endswith("in numpy_error  *") and frames[1].endswith("in reshape  **")
    assert "fromnumeric.py" in frames[1] and not frames[2].endswith("*")


def test_nested_functions_and_methods_frame_once():
    @tf.function
    def inner(x):
        return tf.reshape(x, [3, 3])

    @tf.function
    def outer(x):
        return inner(x) + 1

    with pytest.raises(ValueError) as e:
        outer(tf.ones([4]))
    msg = str(e.value)
    assert msg.count("in user code:") == 1
    assert ", in outer  *\n        return inner(x) + 1\n" in msg
    assert ", in inner  *\n        return tf.reshape(x, [3, 3])\n" in msg

    class M(tf.Module):
        @tf.function
        def __call__(self, x):
            return tf.matmul(x, x)

    with pytest.raises(ValueError, match=r"in user code:\n\n .*in __call__  \*\n        return "
                                         r"tf.matmul\(x, x\)"):
        M()(tf.ones([2, 3]))


def test_a_later_call_and_replays_are_not_framed():
    f = tf.function(lambda x, i: x[i])
    x = tf.ones([4])
    f(x, tf.constant(1))
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        f(x, tf.constant(7))  # at run time: TensorFlow's op error, without the frame
    assert "in user code" not in str(e.value)
