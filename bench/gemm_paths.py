"""The CPU's GEMM libraries on the guide's MLP shapes, in one run: float32 through OpenBLAS
(the default) and through oneDNN, bfloat16/float16 through the widen-and-sgemm fallback and
through oneDNN (native units where the CPU has them), in GFLOP/s.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/gemm_paths.py \
        [--units 512 4096] [--batch 2048]

(The machines here export OPENBLAS_CORETYPE=Haswell / OPENBLAS_L2_SIZE for old OpenBLAS
builds; unset them for this command only, as a user's machine has them.)
"""

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import machine, median_time, print_table  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, nargs="+", default=[512, 4096])
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import mixprec as tf
    from mixprec import _core

    print(machine())
    print("OpenBLAS:", _core.blas_config(), "| OPENBLAS_CORETYPE =",
          os.environ.get("OPENBLAS_CORETYPE"))
    print(_core.dnnl_info(), "| threads:", tf.config.threading.get_intra_op_parallelism_threads())
    rows = []
    rng = np.random.default_rng(0)
    for units in args.units:
        # forward x @ W, and the two backward products of the hidden layer
        shapes = [("fwd", args.batch, 784, units, False, False),
                  ("fwd", args.batch, units, units, False, False),
                  ("dW", units, args.batch, units, True, False),
                  ("dx", args.batch, units, units, False, True)]
        for name, m, k, n, ta, tb in shapes:
            a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
            b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
            row = [units, "%s %dx%dx%d" % (name, m, k, n)]
            for dt, mode in (("float32", "openblas"), ("float32", "onednn"), ("bfloat16", "widen"),
                             ("bfloat16", "onednn"), ("float16", "widen"), ("float16", "onednn")):
                _core.gemm_path(dt, mode)
                ta_, tb_ = tf.cast(tf.constant(a), dt), tf.cast(tf.constant(b), dt)
                t = median_time(lambda: tf.matmul(ta_, tb_, transpose_a=ta, transpose_b=tb),
                                args.repeat, warmup=1)
                _core.gemm_path(dt, "auto")
                row.append("%.0f" % (2.0 * m * n * k / t / 1e9))
            rows.append(row)
    print_table("GEMM GFLOP/s (higher is better; float16 'onednn' falls back to widening where the "
                "CPU has no float16 units)",
                ["units", "product", "f32 OpenBLAS", "f32 oneDNN", "bf16 widen", "bf16 oneDNN",
                 "f16 widen", "f16 oneDNN"], rows)


if __name__ == "__main__":
    main()
