"""Graph-context utilities eagerly and inside mixprec.function (TensorFlow 2.21's results)."""

import pytest

import mixprec as tf
from mixprec import keras


def test_executing_eagerly_and_inside_function():
    seen = []

    @tf.function
    def f(x):
        seen.append((tf.executing_eagerly(), tf.inside_function()))
        with tf.init_scope():
            seen.append((tf.executing_eagerly(), tf.inside_function()))
        return x + 1

    f(tf.constant(1.0))
    assert seen == [(False, True), (True, True)]  # TF 2.21 prints the same
    assert tf.executing_eagerly() and not tf.inside_function()


def test_name_scope_eager_names():
    with tf.name_scope("a") as s:
        assert s == "a/" and tf.get_current_name_scope() == "a"
        assert tf.Variable(1.0, name="v").name == "a/v:0"
        with tf.name_scope("b") as s2:
            assert s2 == "a/b/" and tf.get_current_name_scope() == "a/b"
            assert tf.Variable(1.0).name == "a/b/Variable:0"
        with tf.name_scope("b") as s3:  # eager scopes are not made unique
            assert s3 == "a/b/"
        with tf.name_scope("/abs/") as s4:
            assert s4 == "/abs/"
        with tf.name_scope("") as s5:
            assert s5 == "" and tf.get_current_name_scope() == ""
        d = keras.layers.Dense(2)
        d.build((None, 3))
        assert d.kernel.name == "a/kernel:0"
        d2 = keras.layers.Dense(2, name="dd")
        d2(tf.ones((1, 3)))
        assert d2.kernel.name == "a/dd/kernel:0"
        m = tf.Module(name="mm")
        with m.name_scope as s6:
            assert s6 == "a/mm/" and tf.Variable(1.0, name="x").name == "a/mm/x:0"
    assert tf.get_current_name_scope() == ""
    assert tf.Variable(1.0, name="top").name == "top:0"
    with pytest.raises(ValueError, match="name for name_scope must be a string"):
        tf.name_scope(None)
    assert tf.name_scope("q").name == "q"


def test_module_with_name_scope():
    class M(tf.Module):
        @tf.Module.with_name_scope
        def __call__(self):
            self.v = tf.Variable(1.0)
            return self.v

    m = M(name="mod")
    assert m().name == "mod/Variable:0" and m.name_scope.name == "mod/"


def test_name_scope_in_function_is_unique_and_checked():
    got = []

    @tf.function
    def f(x):
        with tf.name_scope("s") as s:
            got.append((s, tf.get_current_name_scope()))
        with tf.name_scope("x"):
            with tf.name_scope("x") as s2:
                got.append(s2)
        with tf.name_scope("x") as s3:
            got.append(s3)
        with pytest.raises(ValueError, match="is not a valid root scope name"):
            with tf.name_scope("bad name!"):
                pass
        return x

    f(tf.constant(1))
    assert got == [("s/", "s"), "x/x/", "x_1/"]


def test_control_dependencies_group_tuple_no_op():
    assert tf.no_op() is None
    assert tf.group(tf.constant(1), tf.constant(2)) is None
    out = tf.tuple([tf.constant(1), tf.constant(2.0)])
    assert isinstance(out, list) and [o.numpy() for o in out] == [1, 2.0]
    called = []
    with tf.control_dependencies([tf.constant(1), lambda: called.append(1)]) as c:
        assert c is None
    assert called == [1]


def test_get_static_value():
    assert tf.get_static_value(tf.constant([1, 2])).tolist() == [1, 2]
    assert tf.get_static_value(3) == 3 and tf.get_static_value([1, 2]) == [1, 2]
    assert tf.get_static_value(tf.Variable([1.0])) is None
    got = []

    @tf.function
    def f(x):
        got.append((tf.get_static_value(x), tf.get_static_value(tf.constant(3)),
                    tf.get_static_value(x * 0 + 1)))
        return x

    f(tf.constant(1))
    assert got[0][0] is None and got[0][1] == 3 and got[0][2] is None


def test_timestamp_and_version():
    t = tf.timestamp()
    assert t.dtype == tf.float64 and t.shape == () and t.numpy() > 1.6e9
    assert tf.version.VERSION == "2.21.0"
    assert tf.__version__ == tf.version.MIXPREC_VERSION


def test_gradients_raise_eagerly_as_tf():
    msg = "tf.gradients is not supported when eager execution is enabled"
    with pytest.raises(RuntimeError, match=msg):
        tf.gradients(tf.constant(1.0), tf.constant(2.0))
    with pytest.raises(RuntimeError, match=msg):
        tf.hessians(tf.constant(1.0), tf.constant(2.0))


def test_no_gradient_registry():
    tf.no_gradient("MixprecTestOpA")
    with pytest.raises(TypeError, match="op_type must be a string"):
        tf.no_gradient(3)
    with pytest.raises(KeyError, match="Registering two gradient with name 'MixprecTestOpA'"):
        tf.no_gradient("MixprecTestOpA")


def test_tensor_name_as_tensorflow():
    with pytest.raises(AttributeError, match="Tensor.name is undefined when eager execution "
                                             "is enabled."):
        tf.constant(1.0).name
    got = []

    @tf.function
    def f(x):
        got.append(x.name)
        return x

    f(tf.constant(1.0))
    assert got == ["x:0"]
