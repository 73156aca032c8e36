"""``tf.test``: ``TestCase`` (a ``unittest.TestCase`` with TensorFlow's array assertions,
``evaluate`` and seeding), ``compute_gradient`` (theoretical and central-difference
Jacobians, TensorFlow's layout and default step) and the build/device queries. Test-side
helpers only: the numbers compared come from the core; mixprec's own numeric-stability
helpers are in ``mixprec.testing``."""

import contextlib
import functools
import random as _py_random
import tempfile
import unittest

import numpy as np

__all__ = ["TestCase", "main", "compute_gradient", "is_gpu_available", "gpu_device_name",
           "is_built_with_cuda", "is_built_with_gpu_support", "is_built_with_rocm",
           "is_built_with_xla", "Benchmark", "benchmark_config", "disable_with_predicate",
           "with_eager_op_as_function", "create_local_cluster", "assert_equal_graph_def",
           "experimental"]

# TensorFlow's random_seed.DEFAULT_GRAPH_SEED: TestCase.setUp seeds with it
DEFAULT_GRAPH_SEED = 87654321


def _numpy(x):
    """A value as a NumPy array (tensors and variables read; lists kept as arrays)."""
    if hasattr(x, "numpy") and callable(x.numpy):
        x = x.numpy()
    return np.asarray(x)


def _is_structure(x):
    return isinstance(x, (list, tuple, dict)) and not (
        isinstance(x, (list, tuple)) and x and all(
            isinstance(v, (int, float, bool, complex, np.generic)) for v in x))


def _as_float32_if_custom(a):
    return a.astype(np.float32) if a.dtype.kind == "V" or a.dtype.name in (
        "bfloat16", "float8_e4m3fn", "float8_e5m2") else a


def _where(cond):
    return np.where(cond) if np.ndim(cond) else ()


class _Session:
    """What ``cached_session()`` yields in eager TensorFlow 2 code: ``run`` evaluates."""

    def __init__(self, case):
        self._case = case

    def run(self, fetches, feed_dict=None):
        return self._case.evaluate(fetches)


class TestCase(unittest.TestCase):
    """``tf.test.TestCase``: each test starts from TensorFlow's default seeds."""

    def setUp(self):
        super().setUp()
        from mixprec import random as _random
        _py_random.seed(DEFAULT_GRAPH_SEED)
        np.random.seed(DEFAULT_GRAPH_SEED)
        _random.set_seed(DEFAULT_GRAPH_SEED)

    # ----------------------------------------------------------------- running values

    def evaluate(self, tensors):
        """The NumPy values of a (nested) structure of tensors/variables."""
        from mixprec import _nest

        def one(t):
            if hasattr(t, "numpy") and callable(t.numpy):
                return t.numpy()
            return t
        return _nest.map_structure(one, tensors)

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu=True, force_gpu=False):
        yield _Session(self)

    session = cached_session

    @contextlib.contextmanager
    def test_session(self, graph=None, config=None, use_gpu=True, force_gpu=False):
        """Deprecated in TensorFlow: ``cached_session``."""
        yield _Session(self)

    test_session.__test__ = False  # a helper, not a test (pytest collects test_* names)

    def get_temp_dir(self):
        d = getattr(self, "_mixprec_tmp", None)
        if d is None:
            d = tempfile.mkdtemp(prefix="tf_test_")
            self._mixprec_tmp = d
        return d

    # ----------------------------------------------------------------- closeness

    def _close_arrays(self, a, b, rtol, atol, msg, path):
        a, b = _numpy(a), _numpy(b)
        if a.shape != b.shape:
            detail = (" with contents %s." % (b,)) if (b.ndim <= 3 or b.size < 500) else "."
            self.fail(self._formatMessage(msg, "Shape mismatch: expected %s, got %s%s%s" % (
                a.shape, b.shape, detail, " (at %s)" % path if path else "")))
        a, b = _as_float32_if_custom(a), _as_float32_if_custom(b)
        if a.dtype.kind in "OSU" or b.dtype.kind in "OSU":
            raise TypeError("assertAllClose compares numbers; got %s and %s"
                            % (a.dtype, b.dtype))
        if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            return
        af, bf = a.astype(np.float64), b.astype(np.float64)
        cond = np.logical_or(np.abs(af - bf) > atol + rtol * np.abs(bf),
                             np.isnan(af) != np.isnan(bf))
        lines = [msg] if msg else []
        if a.ndim:
            lines.append("not close where = %s" % (np.where(cond),))
            x, y = a[cond], b[cond]
        else:
            x, y = a, b
        lines += ["not close lhs = %s" % (x,), "not close rhs = %s" % (y,),
                  "not close dif = %s" % (np.abs(af - bf)[cond] if a.ndim else abs(af - bf),),
                  "not close tol = %s" % (atol + rtol * np.abs(bf)[cond] if a.ndim
                                          else atol + rtol * abs(bf),),
                  "dtype = %s, shape = %s" % (a.dtype, a.shape)]
        if path:
            lines.append("Mismatched value: a%s is different from b%s." % (path, path))
        np.testing.assert_allclose(af, bf, rtol=rtol, atol=atol, err_msg="\n".join(lines),
                                   equal_nan=True)

    def _close_recursive(self, a, b, rtol, atol, msg, path=""):
        if isinstance(a, dict) or isinstance(b, dict):
            if not (isinstance(a, dict) and isinstance(b, dict)):
                self.fail(self._formatMessage(msg, "Can't compare dict to non-dict, a%s vs b%s."
                                              % (path, path)))
            self.assertEqual(set(a), set(b), self._formatMessage(
                msg, "mismatched keys: a%s has keys %s, but b%s has keys %s"
                % (path, sorted(a, key=str), path, sorted(b, key=str))))
            for k in a:
                self._close_recursive(a[k], b[k], rtol, atol, msg, "%s[%r]" % (path, k))
            return
        if _is_structure(a) or _is_structure(b):
            if _is_structure(a) and _is_structure(b):
                if len(a) != len(b):
                    self.fail(self._formatMessage(
                        msg, "Mismatched length: a%s has %d items, but b%s has %d items"
                        % (path, len(a), path, len(b))))
                for i, (x, y) in enumerate(zip(a, b)):
                    self._close_recursive(x, y, rtol, atol, msg, "%s[%d]" % (path, i))
                return
        self._close_arrays(a, b, rtol, atol, msg, path)

    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):
        """Elementwise ``|a - b| <= atol + rtol * |b|`` over (nested structures of)
        arrays/tensors; NaN matches NaN; shapes must agree."""
        self._close_recursive(a, b, rtol, atol, msg)

    def assertAllCloseAccordingToType(self, a, b, rtol=1e-6, atol=1e-6, float_rtol=1e-6,
                                      float_atol=1e-6, half_rtol=1e-3, half_atol=1e-3,
                                      bfloat16_rtol=1e-2, bfloat16_atol=1e-2, msg=None):
        """assertAllClose with tolerances widened for float32, float16 and bfloat16."""
        a, b = _numpy(a), _numpy(b)
        names = {a.dtype.name, b.dtype.name}
        if names & {"float32", "complex64"}:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if "float16" in names:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        if "bfloat16" in names:
            rtol, atol = max(rtol, bfloat16_rtol), max(atol, bfloat16_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertNotAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):
        try:
            self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)
        except AssertionError:
            return
        self.fail(self._formatMessage(msg, "The two values are close at all elements."))

    def assertArrayNear(self, farray1, farray2, err, msg=None):
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def assertNear(self, f1, f2, err, msg=None):
        self.assertTrue(f1 == f2 or abs(f1 - f2) <= err, "%f != %f +/- %f%s" % (
            f1, f2, err, " (%s)" % msg if msg is not None else ""))

    def assertNDArrayNear(self, ndarray1, ndarray2, err, msg=None):
        self.assertTrue(np.linalg.norm(_numpy(ndarray1) - _numpy(ndarray2)) <= err, msg=msg)

    # ----------------------------------------------------------------- equality / order

    def assertAllEqual(self, a, b, msg=None):
        """Same shape and equal elements (NaN equals NaN for floating arrays)."""
        a, b = _numpy(a), _numpy(b)
        if a.shape != b.shape:
            contents = (" Contents: %r. \n%s." % (b, msg or "")) if (
                b.ndim <= 3 or b.size < 500) else " %s" % (msg or "")
            self.fail("Shape mismatch: expected %s, got %s.%s" % (a.shape, b.shape, contents))
        same = a == b
        if a.dtype.kind == "f" and b.dtype.kind == "f":
            same = np.logical_or(same, np.logical_and(np.isnan(a), np.isnan(b)))
        if not np.all(same):
            diff = np.logical_not(same)
            lines = [msg] if msg else []
            if a.ndim:
                lines.append("not equal where = %s" % (np.where(diff),))
                x, y = a[diff], b[diff]
            else:
                x, y = a, b
            lines += ["not equal lhs = %r" % (x,), "not equal rhs = %r" % (y,)]
            np.testing.assert_array_equal(a, b, err_msg="\n".join(lines))

    def assertNotAllEqual(self, a, b, msg=None):
        try:
            self.assertAllEqual(a, b)
        except AssertionError:
            return
        self.fail(self._formatMessage(msg, "The two values are equal at all elements. %r"
                                      % (_numpy(a),)))

    def assertAllGreater(self, a, comparison_target):
        a = _numpy(a)
        self.assertGreater(np.min(a), comparison_target)

    def assertAllLess(self, a, comparison_target):
        a = _numpy(a)
        self.assertLess(np.max(a), comparison_target)

    def assertAllGreaterEqual(self, a, comparison_target):
        a = _numpy(a)
        self.assertGreaterEqual(np.min(a), comparison_target)

    def assertAllLessEqual(self, a, comparison_target):
        a = _numpy(a)
        self.assertLessEqual(np.max(a), comparison_target)

    def assertAllInRange(self, target, lower_bound, upper_bound, open_lower_bound=False,
                         open_upper_bound=False):
        """Every element in [lower, upper] (open ends as asked); NaN fails."""
        t = _numpy(target)
        if not (np.issubdtype(t.dtype, np.floating) or np.issubdtype(t.dtype, np.integer)):
            raise AssertionError("The value of %s does not have an ordered numeric type, "
                                 "instead it has type: %s" % (t, t.dtype))
        nan = np.isnan(t) if t.dtype.kind == "f" else np.zeros(t.shape, bool)
        if nan.any():
            raise AssertionError("%d of the %d element(s) are NaN. Subscripts(s) and value(s) "
                                 "of the NaN element(s):\n%s" % (
                                     int(nan.sum()), t.size, np.argwhere(nan).tolist()))
        rng = (("(" if open_lower_bound else "[") + str(lower_bound) + ", " +
               str(upper_bound) + (")" if open_upper_bound else "]"))
        bad = (t <= lower_bound) if open_lower_bound else (t < lower_bound)
        bad = bad | ((t >= upper_bound) if open_upper_bound else (t > upper_bound))
        if np.any(bad):
            raise AssertionError("%d of the %d element(s) are outside the range %s. "
                                 "Subscript(s) and value(s) of the offending elements:\n%s"
                                 % (int(np.sum(bad)), t.size, rng,
                                    [(tuple(i), t[tuple(i)]) for i in np.argwhere(bad)]))

    def assertAllInSet(self, target, expected_set):
        t = _numpy(target)
        diff = set(np.unique(t).tolist()) - set(expected_set)
        if diff:
            raise AssertionError("%d unique element(s) are not in the set %s: %s"
                                 % (len(diff), expected_set, diff))

    # ----------------------------------------------------------------- shapes / types

    def assertShapeEqual(self, input_a, input_b, msg=None):
        """A NumPy array's shape against a tensor's (TensorFlow's argument order)."""
        if not isinstance(input_a, (np.ndarray, np.generic)):
            raise TypeError("input_a must be a Numpy ndarray, Numpy scalar, or a Tensor."
                            "Instead received %s" % (type(input_a),))
        shape_b = tuple(input_b.shape.as_list()) if hasattr(input_b.shape, "as_list") \
            else tuple(input_b.shape)
        self.assertAllEqual(list(np.shape(input_a)), list(shape_b), msg=msg)

    def assertDTypeEqual(self, target, expected_dtype):
        from mixprec._dtypes import as_dtype
        t = target.dtype if hasattr(target, "dtype") else _numpy(target).dtype
        self.assertEqual(as_dtype(t), as_dtype(expected_dtype))

    def assertDeviceEqual(self, device1, device2, msg=None):
        def canon(d):
            d = (d or "").upper()
            return d.replace("/DEVICE:", "/").replace("/JOB:LOCALHOST/REPLICA:0/TASK:0", "")
        self.assertEqual(canon(device1), canon(device2), msg=msg)

    def assertStartsWith(self, actual, expected_start, msg=None):
        if not actual.startswith(expected_start):
            self.fail(self._formatMessage(msg, "Did not start with '%s': '%s'"
                                          % (expected_start, actual)))

    # ----------------------------------------------------------------- errors

    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type, expected_err_re_or_predicate):
        import re
        if callable(expected_err_re_or_predicate):
            predicate = expected_err_re_or_predicate
        else:
            def predicate(e):
                text = e.message if hasattr(e, "message") else str(e)
                return re.search(expected_err_re_or_predicate, str(text)) is not None
        try:
            yield
        except exception_type as e:
            if not predicate(e):
                raise AssertionError("Exception of type %s: %s" % (type(e), e)) from e
            return
        self.fail(exception_type.__name__ + " not raised")

    def assertRaisesOpError(self, expected_err_re_or_predicate):
        from mixprec import errors
        return self.assertRaisesWithPredicateMatch(errors.OpError,
                                                   expected_err_re_or_predicate)

    def assertRaisesIncompatibleShapesError(self, exception_type=None):
        from mixprec import errors
        return self.assertRaisesWithPredicateMatch(
            exception_type or errors.InvalidArgumentError,
            r"Incompatible shapes|Dimensions must be equal|required broadcastable shapes")


def main(argv=None):
    """Runs the test module's TestCases (``unittest.main``)."""
    return unittest.main(argv=argv)


# ------------------------------------------------------------------- gradients


def _jacobians(f, xs, param, delta):
    from mixprec import _core
    from mixprec._tape import GradientTape
    x_arrays = [np.array(_numpy(x)) for x in xs]
    dtypes = [_core.convert_to_tensor(x).dtype for x in xs]
    target = x_arrays[param]
    if dtypes[param].name not in ("float16", "bfloat16", "float32", "float64"):
        raise AssertionError("Cannot compute gradient for unsupported type %s of argument %d"
                             % (dtypes[param].name, param))

    def call(arrays):
        ts = [_core.constant(a, dt.name) for a, dt in zip(arrays, dtypes)]
        return ts, f(*ts)

    ts, y = call(x_arrays)
    y = _core.convert_to_tensor(y)
    y_np = y.numpy()
    ysize, xsize = int(np.prod(y_np.shape)), int(target.size)
    jt = np.zeros((ysize, xsize), dtype=target.dtype)
    for row in range(ysize):
        dy = np.zeros(y_np.shape, dtype=y_np.dtype)
        dy.reshape(-1)[row] = 1
        ts = [_core.constant(a, dt.name) for a, dt in zip(x_arrays, dtypes)]
        with GradientTape() as tape:
            tape.watch(ts[param])
            out = _core.convert_to_tensor(f(*ts))
        g = tape.gradient(out, ts[param], output_gradients=_core.constant(dy, y.dtype.name))
        if g is not None:
            jt[row] = _numpy(g).reshape(-1)
    jn = np.zeros((ysize, xsize), dtype=target.dtype)
    scale = np.asarray(2 * delta, dtype=y_np.dtype)[()]
    flat = target.reshape(-1)
    for col in range(xsize):
        orig = flat[col].copy()
        flat[col] = orig + delta
        pos = _numpy(call(x_arrays)[1])
        flat[col] = orig - delta
        neg = _numpy(call(x_arrays)[1])
        flat[col] = orig
        jn[:, col] = ((pos - neg) / scale).reshape(-1)
    return jt, jn


def compute_gradient(f, x, delta=None):
    """(theoretical, numerical) Jacobians of ``f`` at ``x``, one 2-D array per argument
    (rows: elements of f(x); columns: elements of the argument); numerical by central
    differences with step ``delta`` (TensorFlow's default 1/1024)."""
    if not isinstance(x, (list, tuple)):
        raise ValueError("`x` must be a list or tuple of values convertible to a Tensor "
                         "(arguments to `f`), not a %s" % type(x))
    if delta is None:
        delta = 1.0 / 1024
    pairs = [_jacobians(f, list(x), i, delta) for i in range(len(x))]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def max_error(grad1, grad2):
    """The largest elementwise gap between two lists of Jacobians."""
    err = 0.0
    for a, b in zip(grad1, grad2):
        if np.size(a) or np.size(b):
            err = max(err, float(np.max(np.abs(np.asarray(a) - np.asarray(b)))))
    return err


# ------------------------------------------------------------------- build and devices


def _gpus():
    from mixprec import config
    return config.list_physical_devices("GPU")


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    """Deprecated in TensorFlow (use ``tf.config.list_physical_devices('GPU')``)."""
    from mixprec import _logging
    _logging.get_logger().warning(
        "From mixprec.test: is_gpu_available (from tensorflow.python.framework.test_util) is "
        "deprecated and will be removed in a future version.\nInstructions for updating:\n"
        "Use `tf.config.list_physical_devices('GPU')` instead.")
    gpus = _gpus()
    if not gpus:
        return False
    if min_cuda_compute_capability is None:
        return True
    from mixprec import config
    for g in gpus:
        cc = config.experimental.get_device_details(g).get("compute_capability")
        if cc is not None and tuple(cc) >= tuple(min_cuda_compute_capability):
            return True
    return False


def gpu_device_name():
    """``'/device:GPU:0'`` when a GPU is visible, else ``''``."""
    return "/device:GPU:0" if _gpus() else ""


def is_built_with_cuda():
    """True: mixprec's CUDA backend is part of the build (it loads only with a GPU)."""
    return True


def is_built_with_gpu_support():
    return True


def is_built_with_rocm():
    return False


def is_built_with_xla():
    return False


class Benchmark:
    """``tf.test.Benchmark``: ``report_benchmark`` prints one line per call."""

    def report_benchmark(self, iters=None, cpu_time=None, wall_time=None, throughput=None,
                         extras=None, name=None, metrics=None):
        print("benchmark %s: iters=%s wall_time=%s cpu_time=%s throughput=%s extras=%s"
              % (name or type(self).__name__, iters, wall_time, cpu_time, throughput, extras))

    def evaluate(self, tensors):
        return TestCase.evaluate(self, tensors)


def benchmark_config():
    return None


def disable_with_predicate(pred, skip_message):
    """Skips the decorated test when ``pred()`` is true."""
    def decorator(func):
        @functools.wraps(func)
        def wrapper(self, *args, **kwargs):
            if pred():
                self.skipTest(skip_message)
            return func(self, *args, **kwargs)
        return wrapper
    return decorator


def with_eager_op_as_function(cls=None, only_as_function=False):
    return cls if cls is not None else (lambda c: c)


def create_local_cluster(*args, **kwargs):
    raise NotImplementedError("tf.test.create_local_cluster: mixprec runs no TensorFlow "
                              "servers; use mpiexec with MultiWorkerMirroredStrategy")


def assert_equal_graph_def(*args, **kwargs):
    raise NotImplementedError("tf.test.assert_equal_graph_def: mixprec has no GraphDef")


class experimental:  # noqa: N801 - TensorFlow's namespace
    @staticmethod
    def sync_devices():
        """Waits for every device's queued work (``tf.test.experimental.sync_devices``)."""
        from mixprec import _core
        sync = getattr(_core, "sync_devices", None)
        if sync is not None:
            sync()
