"""The CPU's two GEMM paths for 16-bit types: oneDNN (native bfloat16/float16 units,
float32 accumulation, chosen at run time by CPU features) and the widen-to-float32 +
OpenBLAS sgemm fallback. Both are forced here in turn, so both are tested on every machine;
oneDNN's float32 GEMM (kept for measurements) too."""

import os
import subprocess
import sys

import numpy as np
import pytest

import mixprec as tf
from mixprec import _core
from tolerances import NP_DTYPE, assert_close, round_to


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


@pytest.fixture
def gemm_mode():
    saved = {dt: None for dt in ("float32", "float16", "bfloat16")}

    def setter(dt, mode):
        return _core.gemm_path(dt, mode)

    yield setter
    for dt in saved:
        _core.gemm_path(dt, "auto")


@pytest.mark.parametrize("dt", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("mode", ["widen", "onednn"])
def test_both_gemm_paths_match_float64(gemm_mode, dt, mode):
    gemm_mode(dt, mode)
    rng = np.random.default_rng(0)
    for (m, k, n), ta, tb in [((37, 64, 29), False, False), ((64, 128, 256), True, False),
                              ((5, 200, 3), False, True), ((130, 33, 70), True, True)]:
        a = round_to(rng.standard_normal((k, m) if ta else (m, k)), dt)
        b = round_to(rng.standard_normal((n, k) if tb else (k, n)), dt)
        got = tf.matmul(tf.constant(a.astype(NP_DTYPE[dt])), tf.constant(b.astype(NP_DTYPE[dt])),
                        transpose_a=ta, transpose_b=tb)
        assert got.dtype == dt
        expected = (a.T if ta else a) @ (b.T if tb else b)
        assert_close(got, round_to(expected, dt), dt, "matmul", err_msg="%s %s" % (mode, (m, k, n, ta, tb)))
    # batched, with a broadcast operand
    a = round_to(rng.standard_normal((3, 4, 16)), dt)
    b = round_to(rng.standard_normal((16, 5)), dt)
    got = tf.matmul(tf.constant(a.astype(NP_DTYPE[dt])), tf.constant(b.astype(NP_DTYPE[dt])))
    assert_close(got, round_to(a @ b, dt), dt, "matmul")


@pytest.mark.parametrize("dt", ["bfloat16", "float32"])
@pytest.mark.parametrize("mode", ["widen", "onednn"])
def test_large_products_with_b_packed_for_onednn(gemm_mode, dt, mode):
    # 512 rows and more with a B of 512x512 and up: oneDNN's route reorders B into its
    # blocked layout first (dnnl_cpu.c pack_b); from 2048 rows a transposed B is transposed
    # by mixprec first (whole 64x64 tiles and ragged edges); the fused Dense op adds the bias
    # through oneDNN's bias argument (the CPU's gemm_bias_act slot) or the product's beta = 1
    gemm_mode(dt, mode)
    rng = np.random.default_rng(2)
    # float32: small integers, so every route's sums are exact (normal values over K = 600
    # cancel below the float32 matmul tolerance on OpenBLAS as on oneDNN)
    draw = (lambda shape: rng.standard_normal(shape)) if dt == "bfloat16" else (
        lambda shape: rng.integers(-3, 4, shape).astype(np.float64))
    for (m, k, n), ta, tb in [((1024, 512, 512), False, False), ((1100, 600, 520), True, False),
                              ((1024, 512, 512), False, True), ((2048, 512, 512), False, True),
                              ((2100, 520, 600), True, True)]:
        a = round_to(draw((k, m) if ta else (m, k)), dt)
        b = round_to(draw((n, k) if tb else (k, n)), dt)
        got = tf.matmul(tf.constant(a.astype(NP_DTYPE[dt])), tf.constant(b.astype(NP_DTYPE[dt])),
                        transpose_a=ta, transpose_b=tb)
        expected = (a.T if ta else a) @ (b.T if tb else b)
        assert_close(got, round_to(expected, dt), dt, "matmul", err_msg="%s %s" % (mode, (m, k, n, ta, tb)))
    x = round_to(draw((1024, 512)), dt)
    w = round_to(draw((512, 640)), dt)
    bias = round_to(draw(640), dt)
    got = _core.matmul_bias_act(tf.constant(x.astype(NP_DTYPE[dt])), tf.constant(w.astype(NP_DTYPE[dt])),
                                tf.constant(bias.astype(NP_DTYPE[dt])), False, False, 1)
    assert_close(got, round_to(np.maximum(x @ w + bias, 0), dt), dt, "matmul")


def test_gradients_through_both_paths_agree(gemm_mode):
    rng = np.random.default_rng(1)
    x = tf.constant(rng.standard_normal((16, 32)).astype(NP_DTYPE["bfloat16"]))
    w = tf.constant(rng.standard_normal((32, 8)).astype(NP_DTYPE["bfloat16"]))
    out = []
    for mode in ("widen", "onednn"):
        gemm_mode("bfloat16", mode)
        with tf.GradientTape() as tape:
            tape.watch(x)
            tape.watch(w)
            y = tf.matmul(x, w)
        out.append([y] + tape.gradient(y, [x, w]))
    for a, b in zip(*out):
        assert_close(a, b.numpy(), "bfloat16", "matmul")


def test_automatic_choice_follows_cpu_features(gemm_mode):
    gemm_mode("bfloat16", "auto")
    gemm_mode("float16", "auto")
    gemm_mode("float32", "auto")
    flags = _cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo")
    bf16 = {"avx512_bf16", "avx512f", "avx512bw", "avx512vl"} <= flags or "amx_bf16" in flags
    assert _core.gemm_path("bfloat16") == ("onednn" if bf16 else "openblas")
    fp16 = "avx512_fp16" in flags or "amx_fp16" in flags
    if not fp16:
        assert _core.gemm_path("float16") == "openblas"
    assert _core.gemm_path("float32") == "openblas"  # docs/architecture.md


def test_environment_variable_forces_the_fallback():
    env = dict(os.environ, MIXPREC_GEMM16="widen")
    out = subprocess.run([sys.executable, "-c", "from mixprec import _core; print(_core.gemm_path('bfloat16'))"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "openblas"


def test_bad_modes_are_refused():
    with pytest.raises(ValueError, match="mode"):
        _core.gemm_path("bfloat16", "fast")
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        _core.gemm_path("int32")
