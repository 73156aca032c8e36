"""The CUDA plugin (mixprec._cuda) on any machine: it imports wherever it was built (every
symbol it needs resolves: it reaches the core only through the _core._C_API capsule), it
agrees with the core on the C API version, and without a GPU it registers nothing, so every
tensor stays on the CPU. Skipped when the build had no CUDA toolkit."""

import os
import subprocess
import sys

import pytest

import mixprec
from mixprec import _core, _gpu_info

pytestmark = pytest.mark.skipif(
    _gpu_info.plugin() is None,
    reason="the CUDA plugin was not built here (no toolkit)" if _gpu_info.load_error is None
    else "the CUDA plugin did not load: %s" % _gpu_info.load_error)


def test_the_plugin_speaks_the_cores_c_api():
    cuda = _gpu_info.plugin()
    assert cuda.C_API_VERSION == _core.C_API_VERSION
    assert _core.CUDA_COMPILED == 1
    assert cuda.runtime_version() >= 12000


def test_register_refuses_a_foreign_capsule():
    import datetime  # any capsule of another name will do

    capsule = datetime.datetime_CAPI
    with pytest.raises(ValueError):
        _gpu_info.plugin().register(capsule)


@pytest.mark.skipif(_core.backend_name(1) == "cuda", reason="a GPU is registered here")
def test_without_a_gpu_nothing_is_registered():
    cuda = _gpu_info.plugin()
    assert cuda.devices() == []
    assert cuda.register(_core._C_API) == 0
    assert _gpu_info.registered == 0
    assert _core.backend_name(1) in (None, "emulated-gpu")
    if _core.backend_name(1) is None:
        assert mixprec.config.list_physical_devices("GPU") == []
        assert mixprec.constant(1.0).device.endswith("device:CPU:0")
    assert cuda.sync_count() == 0
    _gpu_info.synchronize()  # no GPU registered by the plugin: nothing to wait for
    with pytest.raises(ValueError, match="no GPU 0 is registered"):
        cuda.memory_info(0)


def test_tf32_switch_reaches_the_plugin():
    cuda = _gpu_info.plugin()
    from mixprec.config import experimental

    assert experimental.tensor_float_32_execution_enabled()
    try:
        experimental.enable_tensor_float_32_execution(False)
        assert cuda.set_tf32(False) is False  # it was already off
        experimental.enable_tensor_float_32_execution(True)
        assert cuda.set_tf32(True) is True
    finally:
        experimental.enable_tensor_float_32_execution(True)


def test_a_fresh_process_imports_with_the_plugin():
    """import mixprec loads and registers the plugin before any tensor exists (where a GPU
    device node exists; elsewhere it is not imported and nothing is registered)."""
    code = ("import mixprec, mixprec._gpu_info as g; assert g.cuda_compiled(); "
            "print(g.registered, len(mixprec.config.list_physical_devices('GPU')))")
    env = dict(os.environ)
    env.pop("MIXPREC_EMULATE_GPU", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/",
                         timeout=120)
    assert out.returncode == 0, out.stderr
    registered, listed = map(int, out.stdout.split())
    assert registered == listed


def _fresh(code, **env_changes):
    env = dict(os.environ)
    env.pop("MIXPREC_EMULATE_GPU", None)
    env.update(env_changes)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_without_a_gpu_device_import_does_not_load_the_plugin():
    """The plugin's imports (CUDA runtime, cuBLASLt) cost ~100 ms: skipped without a GPU."""
    code = ("import sys, mixprec, mixprec._gpu_info as g; "
            "print(int('mixprec._cuda' in sys.modules), int(g.gpu_present()), g.registered, "
            "len(mixprec.config.list_physical_devices('GPU')), mixprec.constant(1.0).device)")
    loaded, present, registered, listed, device = _fresh(code)
    assert loaded == present  # imported exactly when a GPU device node exists
    if present == "0":
        assert (registered, listed) == ("0", "0") and device.endswith("CPU:0")
    # CUDA_VISIBLE_DEVICES hiding every GPU: nothing to load either
    loaded, present, registered, _, _ = _fresh(code, CUDA_VISIBLE_DEVICES="")
    assert (loaded, present, registered) == ("0", "0", "0")
    # the emulated GPU (a test aid) still works without the plugin
    code = ("import sys, mixprec, mixprec._gpu_info as g; "
            "print(int('mixprec._cuda' in sys.modules), int(g.emulated), "
            "mixprec.constant(1.0).device)")
    loaded, emulated, device = _fresh(code, CUDA_VISIBLE_DEVICES="-1", MIXPREC_EMULATE_GPU="1")
    assert (loaded, emulated) == ("0", "1") and device.endswith("GPU:0")


# --------------------------------------------------------------------------- cuDNN, opened at run time
# Convolutions on the GPU need cuDNN 9, which the plugin opens with dlopen on first use (never
# linked: the plugin imports without it). cudnn_probe runs the same search and builds the same
# message a GPU convolution raises (as NotImplementedError) when cuDNN is missing.


def _linked_libraries(path):
    out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=60)
    return out.stdout


def test_the_plugin_does_not_link_cudnn():
    path = _gpu_info.plugin().__file__
    assert "libcudnn" not in _linked_libraries(path)
    with open(path, "rb") as fh:  # the cudnn* names are strings for dlsym, not undefined symbols
        assert b"cudnnBackendExecute" in fh.read()


def test_missing_cudnn_says_what_to_install(tmp_path):
    cuda = _gpu_info.plugin()
    version, msg = cuda.cudnn_probe(str(tmp_path / "libcudnn.so.9"))
    assert version == 0
    if "built without cuDNN" in msg:
        return
    assert str(tmp_path / "libcudnn.so.9") in msg
    assert "pip install nvidia-cudnn-cu%d" % (cuda.runtime_version() // 1000) in msg
    assert "MIXPREC_CUDNN_LIBRARY" in msg and "/CPU:0" in msg
    # a library that is not cuDNN: named, and why
    version, msg = cuda.cudnn_probe("libm.so.6")
    assert version == 0 and "has no cudnnGetVersion" in msg


def test_mixprec_cudnn_library_overrides_the_search(monkeypatch, tmp_path):
    cuda = _gpu_info.plugin()
    monkeypatch.setenv("MIXPREC_CUDNN_LIBRARY", str(tmp_path / "nowhere.so"))
    version, msg = cuda.cudnn_probe()
    assert version == 0
    if "built without cuDNN" not in msg:
        assert "nowhere.so" in msg and "nvidia/cudnn/lib" not in msg  # only the named file is tried


def test_cudnn_is_found_where_installed():
    """Where cuDNN 9 is installed (the toolkit's directory, LD_LIBRARY_PATH, or the pip wheel
    nvidia-cudnn-cu13 beside mixprec), the probe opens it and reads its version."""
    version, where = _gpu_info.plugin().cudnn_probe()
    if version == 0:
        pytest.skip("no cuDNN 9 on this machine: %s" % where.splitlines()[0])
    assert 90000 <= version < 100000
    assert where.endswith("libcudnn.so.9") and os.path.exists(where)


def _window(n, c, h, w, oc, kh, kw, s, d, padding, groups, nchw):
    """mp_window's fields as ops_window.c resolves them (TensorFlow's SAME: the odd pixel after)."""
    def dim(size, k, st, dl, explicit):
        eff = (k - 1) * dl + 1
        if padding == "SAME":
            o = -(-size // st)
            total = max((o - 1) * st + eff - size, 0)
            return o, total // 2, total - total // 2
        a, b = explicit if padding != "VALID" else (0, 0)
        return (size + a + b - eff + st) // st, a, b
    oh, pt, pb = dim(h, kh, s[0], d[0], padding[0] if isinstance(padding, tuple) else None)
    ow, pl, pr = dim(w, kw, s[1], d[1], padding[1] if isinstance(padding, tuple) else None)
    return (n, c, h, w, oc, oh, ow, kh, kw, s[0], s[1], d[0], d[1], pt, pb, pl, pr, groups, int(nchw))


def test_cudnn_accepts_the_descriptions_of_every_convolution():
    """The graph API's tensors, convolution and operations of the conv slot (forward, backward
    data, backward filter, and the forward with bias and ReLU fused) finalize for the grid of test_nn_conv.py in every dtype and both
    layouts: checked without a GPU (finding an engine and running it needs one)."""
    cuda = _gpu_info.plugin()
    version, where = cuda.cudnn_probe()
    if version == 0:
        pytest.skip("no cuDNN 9 here: %s" % where.splitlines()[0])
    import itertools
    paddings = ("VALID", "SAME", ((1, 2), (2, 0)))
    cases = 0
    for dt, kind, padding, s, d, g, nchw in itertools.product(
            ("float32", "float16", "bfloat16", "float64"), (0, 1, 2, 3, 4), paddings, ((1, 1), (2, 1), (2, 3)),
            ((1, 1), (2, 1)), (1, 2, 4), (False, True)):
        win = _window(2, 4, 7, 6, 8, 3, 2, s, d, padding, g, nchw)
        cuda._cudnn_describe_conv(_core._C_API, kind, dt, win)
        cases += 1
    assert cases == 4 * 5 * 3 * 3 * 2 * 3 * 2
    # a description cuDNN must refuse (an output size the window cannot give) is refused
    bad = list(_window(2, 4, 7, 6, 8, 3, 2, (1, 1), (1, 1), "VALID", 1, False))
    bad[5] += 1
    with pytest.raises(RuntimeError, match="cuDNN error"):
        cuda._cudnn_describe_conv(_core._C_API, 0, "float32", tuple(bad))


# --------------------------------------------------------------------------- pooling's rules on the host
# pool.cu's kernels call the element functions of cuda/pool_rules.h; _pool_on_host runs the
# same functions on the host, so the rules (windows, first maxima, NaN skipped, averages over the
# window's part inside the input, the gathered gradients) are checked here against the CPU
# backend on any machine. Launch configurations are not (that needs a GPU: test_cuda_cnn.py).


def _cpu_pool(kind, x, b, k, s, padding, fmt):
    import mixprec as tf
    pool = tf.nn.max_pool2d if kind in (0, 2, 4) else tf.nn.avg_pool2d
    with tf.device("/CPU:0"):
        xt = tf.constant(x)
        if kind in (0, 1):
            return pool(xt, k, s, padding, data_format=fmt).numpy()
        if kind in (2, 3):
            with tf.GradientTape() as tape:
                tape.watch(xt)
                y = pool(xt, k, s, padding, data_format=fmt)
            return tape.gradient(y, xt, output_gradients=tf.constant(b)).numpy()
        dy = tf.ones(pool(xt, k, s, padding, data_format=fmt).shape, xt.dtype)
        with tf.GradientTape() as outer:
            outer.watch(dy)
            with tf.GradientTape() as inner:
                inner.watch(xt)
                y = pool(xt, k, s, padding, data_format=fmt)
            g = inner.gradient(y, xt, output_gradients=dy)
        return outer.gradient(g, dy, output_gradients=tf.constant(b)).numpy()


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16", "float64"])
def test_gpu_pooling_rules_match_the_cpu_backend(dt):
    import itertools

    import numpy as np

    from tolerances import NP_DTYPE, assert_gpu_close, round_to
    cuda = _gpu_info.plugin()
    rng = np.random.default_rng(41)
    n, h, w, c = 2, 7, 6, 3
    cases = 0
    for (k, s, padding), fmt, kind in itertools.product(
            [((2, 2), (2, 2), "VALID"), ((2, 2), (2, 2), "SAME"), ((3, 3), (2, 2), "SAME"),
             ((3, 2), (1, 2), "SAME"), ((3, 3), (1, 1), "VALID"), ((1, 3), (2, 1), "SAME"), ((4, 4), (3, 3), "SAME")],
            ("NHWC", "NCHW"), range(5)):
        nchw = fmt == "NCHW"
        win = _window(n, c, h, w, c, k[0], k[1], s, (1, 1), padding, 1, nchw)
        oh, ow = win[5], win[6]
        x = round_to(rng.integers(-2, 3, (n, c, h, w) if nchw else (n, h, w, c)) * 0.5, dt).astype(NP_DTYPE[dt])
        # NaN in x: both backends follow TensorFlow's three max-pooling rules (a leading NaN
        # keeps MaxPoolGrad's gradient; docs/architecture.md, tests/test_nn_conv.py)
        if kind in (0, 2, 4) and cases % 3 == 0:
            x.reshape(-1)[rng.integers(0, x.size, 3)] = np.nan
            x.reshape(-1)[0] = np.nan  # the first element of the first window
        yshape = (n, c, oh, ow) if nchw else (n, oh, ow, c)
        b = {0: None, 1: None, 2: yshape, 3: yshape, 4: x.shape}[kind]
        b = None if b is None else round_to(rng.standard_normal(b), dt).astype(NP_DTYPE[dt])
        out = cuda._pool_on_host(kind, dt, win, x.tobytes() if kind != 3 else b"", b"" if b is None else b.tobytes())
        got = np.frombuffer(out, NP_DTYPE[dt]).reshape(yshape if kind in (0, 1, 4) else x.shape)
        expected = _cpu_pool(kind, x, b, list(k), list(s), padding, fmt)
        case = "kind %d %s %s ksize=%s strides=%s %s" % (kind, dt, fmt, k, s, padding)
        if kind in (0, 4):  # selections: exact
            np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64), err_msg=case)
        else:
            assert_gpu_close(got, expected, dt, "convolution", err_msg=case)
        cases += 1
    assert cases == 7 * 2 * 5
