"""Bad input never crashes: every mistake a user can make from Python becomes an exception
of the documented class (mixprec.errors.*, which also derive from ValueError, TypeError,
IndexError or MemoryError) with a message that names the offending values."""

import ctypes

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core, errors

InvalidArgument = errors.InvalidArgumentError
InvalidDType = errors.InvalidDTypeError


def test_exception_hierarchy():
    assert issubclass(errors.InvalidArgumentError, ValueError)
    assert issubclass(errors.InvalidDTypeError, errors.InvalidArgumentError)
    assert issubclass(errors.InvalidDTypeError, TypeError)
    assert issubclass(errors.OutOfRangeError, errors.InvalidArgumentError)
    assert issubclass(errors.OutOfRangeError, IndexError)
    assert issubclass(errors.ResourceExhaustedError, MemoryError)
    assert issubclass(errors.InternalError, RuntimeError)
    assert issubclass(errors.CudaError, RuntimeError)
    assert errors.InvalidArgumentError.__module__ == "mixprec.errors"
    # TensorFlow's base: every error is an OpError (catching it catches them all)
    for name in ("InvalidArgumentError", "OutOfRangeError", "InternalError", "CudaError",
                 "ResourceExhaustedError", "UnavailableError", "NotFoundError", "DataLossError",
                 "UnimplementedError", "UnknownError", "AbortedError", "CancelledError",
                 "AlreadyExistsError", "DeadlineExceededError", "FailedPreconditionError",
                 "PermissionDeniedError", "UnauthenticatedError"):
        assert issubclass(getattr(errors, name), errors.OpError), name
    assert errors.OpError is not errors.InvalidArgumentError
    assert issubclass(errors.OperatorNotAllowedInGraphError, TypeError)


# error_code of each class in TensorFlow 2.21 (tf.errors.X(None, None, "m").error_code)
_TF_CODES = {
    "CancelledError": 1, "UnknownError": 2, "InvalidArgumentError": 3, "DeadlineExceededError": 4,
    "NotFoundError": 5, "AlreadyExistsError": 6, "PermissionDeniedError": 7,
    "ResourceExhaustedError": 8, "FailedPreconditionError": 9, "AbortedError": 10,
    "OutOfRangeError": 11, "UnimplementedError": 12, "InternalError": 13, "UnavailableError": 14,
    "DataLossError": 15, "UnauthenticatedError": 16,
}


@pytest.mark.parametrize("name", sorted(_TF_CODES))
def test_tf_constructor_and_attributes(name):
    cls = getattr(errors, name)
    e = cls(None, None, "msg")  # TensorFlow's (node_def, op, message, *args)
    assert str(e) == "msg" and e.message == "msg"
    assert e.op is None and e.node_def is None
    assert e.error_code == _TF_CODES[name]
    assert cls(None, None, "m", 5).error_code == _TF_CODES[name]  # extra args are ignored
    e = cls(node_def="nd", op="op", message="kw")
    assert (e.node_def, e.op, e.message, str(e)) == ("nd", "op", "kw", "kw")
    with pytest.raises(cls, match="^raised$"):
        raise cls(None, None, "raised")


def test_error_codes_and_op_error_constructor():
    assert (errors.OK, errors.INVALID_ARGUMENT, errors.NOT_FOUND, errors.OUT_OF_RANGE,
            errors.DATA_LOSS, errors.UNAUTHENTICATED) == (0, 3, 5, 11, 15, 16)
    e = errors.OpError(None, None, "msg", 3)  # the base takes the code
    assert (str(e), e.message, e.error_code) == ("msg", "msg", 3)
    assert e.experimental_payloads == {}


def test_internal_one_argument_form_and_raised_errors_carry_tf_attributes():
    e = errors.InvalidArgumentError("just a message")  # mixprec's own raises
    assert str(e) == "just a message" and e.message == "just a message" and e.op is None
    with pytest.raises(errors.OpError) as info:  # raised from C
        tf.zeros([2]) + tf.zeros([3])
    assert info.value.error_code == errors.INVALID_ARGUMENT
    assert "Incompatible shapes" in info.value.message
    assert info.value.node_def is None and info.value.op is None


def test_errors_pickle():
    import pickle
    e = pickle.loads(pickle.dumps(errors.NotFoundError(None, "op", "gone")))
    assert type(e) is errors.NotFoundError and e.message == "gone" and e.op == "op"
    assert e.error_code == errors.NOT_FOUND


# ------------------------------------------------------------------ shapes

@pytest.mark.parametrize("fn,match", [
    (lambda: tf.matmul(tf.zeros([2, 3]), tf.zeros([2, 3])), r"Matrix size-incompatible: In\[0\]: \[2,3\], In\[1\]: \[2,3\]"),
    (lambda: tf.matmul(tf.zeros([2, 3]), tf.zeros([2, 3]), transpose_a=True, transpose_b=True),
     r"\[3,2\]|after transpose"),
    (lambda: tf.matmul(tf.zeros([3]), tf.zeros([3, 2])), r"rank >= 2.*\[3\]"),
    (lambda: tf.matmul(tf.zeros([2, 2, 3]), tf.zeros([3, 3, 2])), r"Incompatible shapes: \[2\] vs. \[3\]"),
    (lambda: tf.zeros([2, 3]) + tf.zeros([4]), r"Incompatible shapes: \[2,3\] vs. \[4\]"),
    (lambda: tf.maximum(tf.zeros([2, 3]), tf.zeros([3, 2])), r"Incompatible shapes"),
    (lambda: tf.where(tf.constant([True, False]), tf.zeros([3]), 1.0), r"Incompatible shapes"),
    (lambda: tf.reshape(tf.zeros([2, 3]), [4]), r"6 values.*\[4\] has 4"),
    (lambda: tf.reshape(tf.zeros([2, 3]), [4, -1]), r"6 values.*-1"),
    (lambda: tf.reshape(tf.zeros([2, 3]), [-1, -1]), r"only one input size may be -1"),
    (lambda: tf.reshape(tf.zeros([2, 3]), [-2, 3]), r"non-negative"),
    (lambda: tf.concat([tf.zeros([2, 3]), tf.zeros([2, 4])], 0), r"dimension 1 of input #1 does not match"),
    (lambda: tf.concat([tf.zeros([2, 3]), tf.zeros([3])], 0), r"rank 1 but input #0 has rank 2"),
    (lambda: tf.concat([tf.constant(1.0), tf.constant(2.0)], 0), r"scalars.*stack"),
    (lambda: tf.stack([tf.zeros([2]), tf.zeros([3])]), r"shapes of all inputs must match"),
    (lambda: tf.broadcast_to(tf.zeros([2, 3]), [2, 2]), r"\[2,3\] to shape \[2,2\]"),
    (lambda: tf.broadcast_to(tf.zeros([3]), [3, 1]), r"cannot broadcast"),
    (lambda: tf.nn.softmax(tf.constant(1.0)), r"rank >= 1"),
    (lambda: tf.argmax(tf.constant(1.0)), r"rank >= 1"),
    (lambda: tf.squeeze(tf.zeros([2, 3]), 1), r"Can not squeeze dim\[1\]"),
    (lambda: tf.fill([2], [1, 2]), r"value must be a scalar"),
])
def test_shape_errors(fn, match):
    with pytest.raises(InvalidArgument, match=match):
        fn()


def test_shape_errors_are_value_errors_and_leave_no_state():
    with pytest.raises(ValueError):
        tf.zeros([2]) + tf.zeros([3])
    # the next op is unaffected, and a later error reports its own message
    assert float(tf.reduce_sum(tf.ones([4]))) == 4.0
    with pytest.raises(ValueError, match=r"\[5\] vs. \[6\]"):
        tf.zeros([5]) * tf.zeros([6])


# ------------------------------------------------------------------ dtypes

@pytest.mark.parametrize("fn,names", [
    (lambda: tf.add(tf.constant(1.0, "float16"), tf.constant(1.0)), ("float16", "float32")),
    (lambda: tf.constant([1.0], "bfloat16") * tf.constant([1.0], "float16"), ("bfloat16", "float16")),
    (lambda: tf.matmul(tf.zeros([2, 2], "float16"), tf.zeros([2, 2])), ("float16", "float32")),
    (lambda: tf.concat([tf.zeros([1], "float16"), tf.zeros([1])], 0), ("float16", "float32")),
    (lambda: tf.stack([tf.zeros([1], "int32"), tf.zeros([1], "int64")]), ("int32", "int64")),
    (lambda: tf.where(tf.constant([True]), tf.constant([1.0]), tf.constant([1])), ("float32", "int32")),
    (lambda: tf.less(tf.constant([1.0], "float64"), tf.constant([1.0])), ("float64", "float32")),
    (lambda: tf.maximum(tf.constant([1], "int64"), tf.constant([1], "int32")), ("int64", "int32")),
])
def test_mixed_dtypes_name_both(fn, names):
    with pytest.raises(InvalidDType) as info:
        fn()
    msg = str(info.value)
    for n in names:
        assert n in msg, msg
    assert "cast" in msg  # the hint
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("fn,match", [
    (lambda: tf.exp(tf.constant([1])), r"Exp does not support int32.*cast"),
    (lambda: tf.math.log(tf.constant([True])), r"Log does not support bool"),
    (lambda: tf.realdiv(tf.constant([1]), tf.constant([2])), r"RealDiv does not support int32"),
    (lambda: tf.logical_and(tf.constant([1.0]), tf.constant([1.0])), r"LogicalAnd needs bool tensors"),
    (lambda: tf.logical_not(tf.constant([1])), r"LogicalNot needs bool"),
    (lambda: tf.reduce_all(tf.constant([1.0])), r"All needs bool"),
    (lambda: tf.reduce_sum(tf.constant([True])), r"Sum does not support bool"),
    (lambda: tf.negative(tf.constant([True])), r"Neg does not support bool"),
    (lambda: tf.matmul(tf.zeros([2, 2], "bool"), tf.zeros([2, 2], "bool")), r"MatMul does not support bool"),
    (lambda: tf.nn.softmax(tf.constant([1, 2])), r"Softmax does not support int32"),
    (lambda: tf.argmax(tf.constant([True, False])), r"ArgMax does not support bool"),
    (lambda: tf.math.is_nan(tf.constant([1])), r"IsNan does not support int32"),
    (lambda: tf.less(tf.constant([True]), tf.constant([False])), r"Less does not support bool"),
    (lambda: tf.one_hot(tf.constant([1.0]), 3), r"indices must be an integer tensor, got float32"),
    (lambda: tf.random.normal([2], dtype="int32"), r"RandomStandardNormal does not support int32"),
    (lambda: tf.random.truncated_normal([2], dtype="bool"), r"does not support bool"),
    (lambda: tf.random.uniform([2], maxval=3, dtype="bool"), r"RandomUniform: unsupported dtype bool"),
    (lambda: tf.random.uniform([2], maxval=3, dtype="uint8"), r"RandomUniform: unsupported dtype uint8"),
    (lambda: tf.where(tf.constant([1, 0]), 1.0, 2.0), r"requested dtype bool for Tensor with dtype int32"),
    (lambda: tf.constant([1, 2]) ^ tf.constant([1, 2]), r"only defined for bool"),
    (lambda: tf.constant([1, 2]) & tf.constant([1, 2]), r"LogicalAnd needs bool"),
])
def test_unsupported_dtypes(fn, match):
    with pytest.raises(InvalidDType, match=match):
        fn()


@pytest.mark.parametrize("fn", [
    lambda: tf.constant(1, dtype="float8"),
    lambda: tf.cast(tf.constant(1.0), "int16"),
    lambda: tf.cast(tf.constant(1.0), None),
    lambda: tf.zeros([2], "complex64"),
    lambda: tf.as_dtype("float128"),
    lambda: tf.random.uniform([2], dtype="foo"),
    lambda: tf.argmax(tf.constant([1.0]), output_type="float32"),
    lambda: tf.one_hot([1], 3, dtype="string"),
])
def test_unknown_dtype_names(fn):
    with pytest.raises(TypeError, match=r"DType|dtype|output_type"):
        fn()


# ------------------------------------------------------------------ conversion

@pytest.mark.parametrize("value,exc,match", [
    ([[1, 2], [3]], ValueError, r"non-rectangular"),
    ([[1.0], [2.0, 3.0]], ValueError, r"non-rectangular"),
    (np.array([1, "a"], dtype=object), TypeError, r"object.*ragged or mixed-type"),
    (np.array([None, None]), TypeError, r"dtype\('O'\)"),
    ("abc", TypeError, r"string tensors are not supported"),
    (b"abc", TypeError, r"string tensors are not supported"),
    (["a", "b"], TypeError, r"<U1"),
    (None, ValueError, r"^Attempt to convert a value \(None\) with an unsupported type "
                       r"\(<class 'NoneType'>\) to a Tensor\.$"),
    (None, TypeError, r"unsupported type"),  # also a TypeError, as mixprec raised before
    ({}, TypeError, r"dict"),
    (object(), TypeError, r"object"),
    (1 + 2j, TypeError, r"complex128"),
    (np.zeros(2, np.uint16), TypeError, r"uint16.*supported dtypes are"),
    (np.zeros(2, np.float128) if hasattr(np, "float128") else np.zeros(2, np.complex64), TypeError,
     r"supported dtypes"),
    (2**64, ValueError, r"too large"),
    (-(2**63) - 1, ValueError, r"too large"),
])
def test_bad_values_to_constant(value, exc, match):
    with pytest.raises(exc, match=match):
        tf.constant(value)


@pytest.mark.parametrize("value,dtype", [
    (1.5, "int32"), ([1.5], "int64"), ([np.nan], "int32"), (np.array([1.0]), "int32"), (1, "bool"),
    (True, "uint8"), (True, "bfloat16"), (256, "uint8"), (-1, "uint8"), (2**31, "int32"), (-129, "int8"), ([[1, 2], [3, 4.5]], "int32"),
])
def test_values_that_do_not_fit_the_dtype(value, dtype):
    with pytest.raises(TypeError, match="Cannot convert"):
        tf.constant(value, dtype=dtype)


def test_operands_that_do_not_fit_the_tensor_dtype():
    with pytest.raises(TypeError, match="Cannot convert 2.5 to EagerTensor of dtype int32"):
        tf.constant([1, 2]) + 2.5
    with pytest.raises(TypeError):
        tf.constant([1.0]) + "a"
    with pytest.raises(TypeError):
        tf.constant([1.0]) + None
    with pytest.raises(TypeError):
        tf.constant([True]) + 1


# ------------------------------------------------------------------ dims, axes, ranks

@pytest.mark.parametrize("fn,exc,match", [
    (lambda: tf.zeros([-1, 2]), ValueError, r"negative dimension"),
    (lambda: tf.ones([2, -3], "float16"), ValueError, r"negative dimension"),
    (lambda: tf.fill([-2], 1.0), ValueError, r"negative"),
    (lambda: tf.random.normal([-1]), ValueError, r"negative"),
    (lambda: tf.broadcast_to(tf.zeros([3]), [-1, 3]), ValueError, r"negative"),
    (lambda: tf.constant(1.0, shape=[-1]), ValueError, r"negative"),
    (lambda: tf.zeros(["a"]), TypeError, r"integer"),
    (lambda: tf.zeros([1.5]), TypeError, r"integer"),
    (lambda: tf.zeros([None]), ValueError, r"fully defined"),
    (lambda: tf.zeros(None), TypeError, r"list or tuple"),
    (lambda: tf.reshape(tf.zeros([2]), "ab"), TypeError, r"integer"),
])
def test_bad_dims(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


@pytest.mark.parametrize("fn,exc,match", [
    (lambda: tf.reduce_sum(tf.zeros([2, 3]), 2), InvalidArgument, r"Invalid reduction axis 2.*\[-2, 2\)"),
    (lambda: tf.reduce_max(tf.zeros([2, 3]), -3), InvalidArgument, r"-3"),
    (lambda: tf.reduce_mean(tf.zeros([2, 3]), [0, 5]), InvalidArgument, r"5"),
    (lambda: tf.reduce_sum(tf.zeros([2, 3]), [0, -2]), InvalidArgument, r"duplicate"),
    (lambda: tf.reduce_sum(tf.zeros([2, 3]), 1.5), TypeError, r"axis"),
    (lambda: tf.reduce_sum(tf.zeros([2, 3]), "a"), TypeError, r"axis"),
    (lambda: tf.reduce_sum(tf.constant(1.0), 0), InvalidArgument, r"0 dimension"),
    (lambda: tf.argmax(tf.zeros([2, 3]), 2), InvalidArgument, r"axis"),
    (lambda: tf.argmax(tf.zeros([2, 3]), [0, 1]), ValueError, r"single integer"),
    (lambda: tf.argmin(tf.zeros([0, 3]), 0), ValueError, r"empty"),
    (lambda: tf.nn.softmax(tf.zeros([2, 3]), 2), InvalidArgument, r"out of range"),
    (lambda: tf.nn.log_softmax(tf.zeros([2, 3]), -3), InvalidArgument, r"out of range"),
    (lambda: tf.nn.softmax_cross_entropy_with_logits(tf.zeros([2, 3]), tf.zeros([2, 3]), axis=5),
     InvalidArgument, r"axis 5 is out of range \[-2, 2\) for logits of rank 2"),
    (lambda: tf.nn.softmax_cross_entropy_with_logits(tf.zeros([2, 3]), tf.zeros([2, 3]), axis=-3),
     InvalidArgument, r"axis -3 is out of range"),
    (lambda: tf.nn.softmax_cross_entropy_with_logits(tf.zeros([2, 3]), tf.zeros([2, 3]), axis=0.5),
     TypeError, r"axis must be an integer"),
    (lambda: tf.concat([tf.zeros([2]), tf.zeros([2])], 1), InvalidArgument, r"axis 1 is out of range"),
    (lambda: tf.stack([tf.zeros([2]), tf.zeros([2])], 3), InvalidArgument, r"out of range"),
    (lambda: tf.expand_dims(tf.zeros([2]), 2), InvalidArgument, r"out of range"),
    (lambda: tf.expand_dims(tf.zeros([2]), 1.5), TypeError,
     r"expand_dims: axis must be an integer, got 1.5"),
    (lambda: tf.expand_dims(tf.zeros([2]), tf.constant(0.0)), TypeError, r"must be an integer"),
    (lambda: tf.squeeze(tf.zeros([1, 2]), 0.5), TypeError,
     r"squeeze: axis must be an integer, got 0.5"),
    (lambda: tf.squeeze(tf.zeros([1, 2]), [0.0]), TypeError, r"axis must be an integer"),
    (lambda: tf.unstack(tf.zeros([1, 2]), axis=0.5), TypeError, r"unstack: axis must be an"),
    (lambda: tf.squeeze(tf.zeros([1, 2]), 2), InvalidArgument, r"out of range"),
    (lambda: tf.unstack(tf.zeros([2, 3]), axis=2), InvalidArgument, r"out of range"),
    (lambda: tf.unstack(tf.zeros([2, 3]), num=3), ValueError, r"num"),
    (lambda: tf.unstack(tf.constant(1.0)), ValueError, r"rank"),
    (lambda: tf.transpose(tf.zeros([2, 3]), [0, 0]), ValueError, r"permutation"),
    (lambda: tf.transpose(tf.zeros([2, 3]), [0]), ValueError, r"perm has 1 entries"),
    (lambda: tf.transpose(tf.zeros([2, 3]), [0, 2]), ValueError, r"permutation"),
])
def test_bad_axes(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


@pytest.mark.parametrize("fn", [
    lambda: tf.zeros([1] * 9),
    lambda: tf.constant(np.zeros((1,) * 9)),
    lambda: tf.constant(0.0, shape=[1] * 9),
    lambda: tf.reshape(tf.zeros([2]), [1] * 8 + [2]),
    lambda: tf.expand_dims(tf.zeros([1] * 8), 0),
    lambda: tf.stack([tf.zeros([1] * 8)]),
    lambda: tf.zeros([1] * 8)[None],
    lambda: tf.broadcast_to(tf.zeros([1]), [1] * 9),
    lambda: tf.one_hot(tf.zeros([1] * 8, "int32"), 2),
    lambda: tf.random.normal([1] * 9),
])
def test_rank_above_8(fn):
    with pytest.raises(ValueError, match=r"8"):
        fn()


@pytest.mark.parametrize("fn", [
    lambda: tf.zeros([2**40, 2**40]),
    lambda: tf.zeros([2**45]),  # representable shape, allocation fails
    lambda: tf.ones([2**62], "int8"),
    lambda: tf.constant(0, shape=[2**40, 2**40]),
    lambda: tf.fill([2**31, 2**31, 4], 1.0),
    lambda: tf.random.normal([2**62]),
    lambda: tf.one_hot([1], 2**62),
    lambda: tf.broadcast_to(tf.zeros([3]), [2**40, 2**30, 3]),
    lambda: tf.matmul(tf.zeros([2**20, 1, 1, 1]), tf.zeros([1, 2**20, 1, 1])),
    lambda: tf.range(1e15),
    lambda: tf.reshape(tf.zeros([1]), [2**62, 2**62]),
    # broadcast results whose element count overflows int64 (the inputs are empty)
    lambda: tf.zeros([2**40, 1, 0]) + tf.zeros([1, 2**40, 0]),
    lambda: tf.where(tf.zeros([2**40, 1, 0], "bool"), tf.zeros([1, 2**40, 0]), 0.0),
    lambda: tf.matmul(tf.zeros([2**40, 1, 0, 1]), tf.zeros([1, 2**40, 1, 0])),
    lambda: tf.random.uniform([2**40, 2**40]),
    lambda: tf.fill([2**40, 2**40, 2**40], 0.0),
])
def test_huge_shapes_are_memory_errors_not_crashes(fn):
    with pytest.raises(MemoryError):
        fn()
    assert float(tf.reduce_sum(tf.ones([8]))) == 8.0  # the allocator still works


def test_huge_reshape_with_minus_one():
    with pytest.raises(MemoryError):
        tf.reshape(tf.zeros([3]), [-1, 2**62, 4])
    with pytest.raises(MemoryError):
        tf.reshape(tf.zeros([0]), [-1, 2**40, 2**40])


# ------------------------------------------------------------------ arithmetic errors

def test_integer_division_by_zero():
    for dt in ("int32", "int64", "int8", "uint8"):
        x = tf.constant(np.array([1, 2, 3]).astype(dt))
        z = tf.constant(np.array([1, 0, 1]).astype(dt))
        with pytest.raises(ValueError, match="Integer division by zero"):
            x // z
        with pytest.raises(ValueError, match="Integer division by zero"):
            x % z
        with pytest.raises(ValueError, match="Integer division by zero"):
            tf.floordiv(x, 0)
    big = np.ones(1 << 20, np.int32)
    big[-3] = 0  # found by whichever thread gets that chunk
    with pytest.raises(ValueError, match="Integer division by zero"):
        tf.constant(np.ones(1 << 20, np.int32)) // tf.constant(big)
    with pytest.raises(ValueError, match="negative integer powers"):
        tf.constant([2]) ** tf.constant([-1])
    # floats divide by zero without error
    assert np.isinf(float(tf.constant(1.0) / 0.0))
    assert np.isnan(float(tf.constant(0.0) // 0.0))


# ------------------------------------------------------------------ indexing

@pytest.mark.parametrize("key,exc,match", [
    (5, IndexError, r"out of bounds"),
    (-6, IndexError, r"out of bounds"),
    ((0, 4), IndexError, r"out of bounds"),
    ((0, 0, 0), IndexError, r"too many indices"),
    ((Ellipsis, Ellipsis), IndexError, r"single ellipsis"),
    (1.5, TypeError, r"valid indices"),
    ([0, 1], TypeError, r"valid indices"),
    (True, TypeError, r"valid indices"),
    ("a", TypeError, r"valid indices"),
    (slice(None, None, 0), ValueError, r"strides\[0\] must be non-zero"),  # TF: InvalidArgumentError
    (slice(0, 1.5), TypeError, r"integer|index"),
])
def test_indexing_errors(key, exc, match):
    t = tf.zeros([5, 4])
    with pytest.raises(exc, match=match):
        t[key]


def test_indexing_errors_with_tensors():
    t = tf.zeros([5, 4])
    with pytest.raises(TypeError):
        t[tf.constant(1.0)]
    with pytest.raises(TypeError):
        t[tf.constant([1, 2])]
    with pytest.raises(IndexError):
        t[tf.constant(7)]
    assert issubclass(errors.OutOfRangeError, IndexError)
    with pytest.raises(errors.OutOfRangeError):
        t[9]


# ------------------------------------------------------------------ op-specific arguments

@pytest.mark.parametrize("fn,exc,match", [
    (lambda: tf.one_hot([1, 2], -1), ValueError, r"depth must be non-negative"),
    (lambda: tf.one_hot([1, 2], 2.5), TypeError, r"depth must be an integer"),
    (lambda: tf.one_hot([1, 2], "3"), TypeError, r"depth"),
    (lambda: tf.one_hot([1, 2], 3, axis=0), NotImplementedError, r"axis=-1"),
    (lambda: tf.one_hot([1, 2], 3, on_value="x"), TypeError, r"on_value"),
    (lambda: tf.range(0, 5, 0), InvalidArgument, r"delta != 0"),
    (lambda: tf.range(5, 0), InvalidArgument, r"start <= limit when delta > 0: 5/0"),
    (lambda: tf.range(0, 5, -1), InvalidArgument, r"start <= limit"),
    (lambda: tf.range(float("nan")), InvalidArgument, r"finite"),
    (lambda: tf.range(0, float("inf")), InvalidArgument, r"finite"),
    (lambda: tf.range("a"), TypeError, r"limit must be a number"),
    (lambda: tf.random.uniform([2], dtype="int32"), ValueError, r"maxval"),
    (lambda: tf.random.uniform([2], 5, 5, dtype="int64"), ValueError, r"minval < maxval"),
    (lambda: tf.random.uniform([2], 5, 1, dtype="int32"), ValueError, r"minval < maxval"),
    (lambda: tf.random.normal([2], mean="a"), ValueError, r"could not convert|a"),
    (lambda: tf.random.normal("ab"), TypeError, r"shape"),
    (lambda: tf.fill([2], "a"), TypeError, r"string"),
    (lambda: tf.concat([], 0), ValueError, r"at least one input"),
    (lambda: tf.stack([]), ValueError, r"at least one input"),
    (lambda: tf.concat(5, 0), errors.InvalidArgumentError, r"scalars"),  # wrapped as [5], as TF
    (lambda: tf.add_n([]), ValueError, r"non-empty"),
    (lambda: tf.where(tf.constant([True]), x=1.0), ValueError, r"both"),
    (lambda: tf.Tensor(), TypeError, r"cannot be created directly"),
    (lambda: tf.add(1), TypeError, r"missing required argument 'y'"),
    (lambda: tf.add(1, 2, bogus=3), TypeError, r"unexpected keyword argument 'bogus'"),
    (lambda: tf.add(1, 2, x=3), TypeError, r"multiple values for argument 'x'"),
    (lambda: tf.reduce_sum(), TypeError, r"missing"),
    (lambda: tf.matmul(1, 2, 3, 4, 5, 6, 7, 8), TypeError, r"at most"),
    (lambda: pow(tf.constant(2.0), 2, 5), TypeError, r"modulus"),
    (lambda: tf.device("/TPU:0").__enter__(), ValueError, r"device"),
    # tf.device soft-places a GPU request on a GPU-less machine (TensorFlow's soft placement,
    # tests/test_device_soft_placement.py); the C layer still refuses a missing device
    (lambda: _core.set_device((1, 7)), InvalidArgument, r"not available"),
    (lambda: _core.set_num_threads(0), ValueError, r"at least 1"),
])
def test_argument_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


# ------------------------------------------------------------------ DLPack import

class _Exporter:
    def __init__(self, result=None, raises=None):
        self.result, self.raises = result, raises

    def __dlpack__(self, **kwargs):
        if self.raises is not None:
            raise self.raises
        return self.result


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
# the capsule keeps a pointer to its name: module-lifetime buffers
_NAMES = {n: ctypes.create_string_buffer(n) for n in (b"not_dltensor", b"used_dltensor")}
_DUMMY = ctypes.create_string_buffer(64)


@pytest.mark.parametrize("obj,exc,match", [
    (3, TypeError, r"does not implement __dlpack__"),
    ([1, 2], TypeError, r"does not implement __dlpack__"),
    (_Exporter(result=5), BufferError, r"unused DLPack capsule"),
    (_Exporter(result=None), BufferError, r"unused DLPack capsule"),
    (_Exporter(raises=ValueError("producer failed")), ValueError, r"producer failed"),
    (_Exporter(raises=TypeError("no kwargs")), TypeError, r"no kwargs"),
    (np.zeros(3, np.uint16), TypeError, r"unsupported DLPack dtype \(code 1, 16 bits\)"),
    (np.zeros(3, np.complex64), TypeError, r"unsupported DLPack dtype"),
    (np.zeros(3, np.int16), TypeError, r"unsupported DLPack dtype \(code 0, 16 bits\)"),
])
def test_from_dlpack_garbage(obj, exc, match):
    with pytest.raises(exc, match=match):
        _core.from_dlpack(obj)


def test_from_dlpack_foreign_capsules():
    for name in (b"not_dltensor", b"used_dltensor"):
        cap = _PyCapsule_New(ctypes.addressof(_DUMMY), ctypes.addressof(_NAMES[name]), None)
        with pytest.raises(BufferError, match="unused DLPack capsule"):
            _core.from_dlpack(_Exporter(result=cap))
    a = np.arange(4, dtype=np.float32)
    used = a.__dlpack__()
    _core.from_dlpack(_Exporter(result=used))  # consumes it: renamed to used_dltensor
    with pytest.raises(BufferError):
        _core.from_dlpack(_Exporter(result=used))


@pytest.mark.parametrize("values, dtype", [
    ([-1.0, 300.0], "uint8"), ([1e20], "int32"), ([2.0**63], "int64"), ([float("inf")], "int32"),
    ([float("nan")], "int64"), ([[1.0], [-129.0]], "int8"),
])
def test_python_floats_out_of_an_integer_dtype_range_are_refused(values, dtype):
    # the list form used to saturate ([300.0] as uint8 -> 255) while scalars and arrays raised
    with pytest.raises(TypeError, match="Cannot convert"):
        tf.constant(values, dtype=dtype)


def test_python_floats_within_an_integer_dtype_convert():
    np.testing.assert_array_equal(tf.constant([0.0, 255.0], dtype="uint8").numpy(), [0, 255])
    np.testing.assert_array_equal(tf.constant([-2.0**31, 3.0], dtype="int32").numpy(), [-2**31, 3])


def test_dlpack_device_must_be_a_tuple():
    t = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="dl_device must be a tuple"):
        t.__dlpack__(dl_device=[1, 0])
    with pytest.raises(TypeError, match="dl_device must be a tuple"):
        t.__dlpack__(dl_device="cpu")


def test_private_set_device_refuses_a_non_tuple():
    with pytest.raises(TypeError, match="tuple"):
        _core.set_device("ab")


def test_reshape_to_a_float_scalar_shape_names_it():
    with pytest.raises(TypeError, match="integer or a list of integers"):
        tf.reshape(tf.zeros([6]), tf.constant(6.0))


def test_sparse_cross_entropy_bad_label_is_an_invalid_argument():
    with pytest.raises(errors.InvalidArgumentError, match="outside the valid range"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(tf.constant([3]), tf.zeros([1, 3]))


@pytest.mark.parametrize("kw", [dict(initial=1e300), dict(initial=1e-300), dict(initial=float("inf")),
                                dict(min_scale=1e300), dict(min_scale=1e-300)])
def test_core_loss_scale_refuses_values_float32_cannot_hold(kw):
    # the Python classes check first; the core checks again (a double out of float range
    # converted to float is undefined in C)
    args = dict(dynamic=True, initial=2.0**15, growth=2000, multiplier=2.0, min_scale=1.0)
    args.update(kw)
    with pytest.raises(ValueError, match="float32 can hold"):
        _core.LossScale(args["dynamic"], args["initial"], args["growth"], args["multiplier"],
                        args["min_scale"])
