"""mixprec vs NumPy on the same machine, in one run: fp32 matmul (the guide's shapes and
1024^3), fp16 matmul vs our own fp32, and casts in GB/s.

    python bench/ops.py [--repeat 15]

Targets (issue 2): fp32 matmul >= 0.9x NumPy's throughput; fp16 matmul <= 1.2x the time of
fp32 of the same shape; casts at least as fast as NumPy's astype.
"""

import argparse
import sys
import time

import ml_dtypes
import numpy as np

import mixprec as mp
from _common import machine, median_time, print_table

SHAPES = [(8192, 784, 64), (8192, 64, 64), (1024, 1024, 1024), (8192, 784, 4096)]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="smaller shapes (CI smoke test)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    print("# bench/ops.py — %s" % machine())
    print("# mixprec threads: %d, cast kernels: %s; NumPy %s" % (
        mp.config.threading.get_intra_op_parallelism_threads(), mp._core.cast_isa(),
        np.__version__))
    shapes = [(256, 128, 64)] if args.quick else SHAPES
    rows = []
    for (m, k, n) in shapes:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        ta, tb = mp.constant(a), mp.constant(b)
        ha, hb = mp.cast(ta, "float16"), mp.cast(tb, "float16")
        ba, bb = mp.cast(ta, "bfloat16"), mp.cast(tb, "bfloat16")
        rep = max(3, args.repeat // (4 if m * n * k > 1e10 else 1))
        # NOTE: mixprec first, NumPy last and then a pause: NumPy's OpenBLAS threads spin
        # for a while after each call, and measured right after them mixprec's threads got
        # half the cores (the table showed mixprec at 0.5x NumPy on the small shapes)
        t32 = median_time(lambda: mp.matmul(ta, tb), rep)
        t16 = median_time(lambda: mp.matmul(ha, hb), rep)
        tbf = median_time(lambda: mp.matmul(ba, bb), rep)
        t_np = median_time(lambda: a @ b, rep)
        time.sleep(0.5)
        gf = 2.0 * m * n * k / 1e9
        rows.append(["%dx%dx%d" % (m, k, n), "%.1f" % (gf / t_np), "%.1f" % (gf / t32),
                     "%.2f" % (t_np / t32), "%.1f" % (gf / t16), "%.2f" % (t16 / t32),
                     "%.2f" % (tbf / t32)])
    print_table("Matmul (GFLOP/s; ratios of the same shape)",
                ["M x K x N", "NumPy f32", "mixprec f32", "mixprec/NumPy speed (>=0.9)",
                 "mixprec f16", "f16/f32 time (<=1.2)", "bf16/f32 time"], rows)

    n = 1 << 16 if args.quick else 1 << 24
    x32 = rng.standard_normal(n, dtype=np.float32)
    x16 = x32.astype(np.float16)
    xbf = x32.astype(ml_dtypes.bfloat16)
    t32, t16, tbf = mp.constant(x32), mp.constant(x16), mp.constant(xbf)
    rows = []
    for name, np_fn, mp_fn, nbytes in [
            ("f32 -> f16", lambda: x32.astype(np.float16), lambda: mp.cast(t32, "float16"), 6 * n),
            ("f16 -> f32", lambda: x16.astype(np.float32), lambda: mp.cast(t16, "float32"), 6 * n),
            ("f32 -> bf16", lambda: x32.astype(ml_dtypes.bfloat16),
             lambda: mp.cast(t32, "bfloat16"), 6 * n),
            ("bf16 -> f32", lambda: xbf.astype(np.float32), lambda: mp.cast(tbf, "float32"), 6 * n)]:
        tm = median_time(mp_fn, args.repeat)
        tn = median_time(np_fn, args.repeat)
        rows.append([name, "%.1f" % (nbytes / tn / 1e9), "%.1f" % (nbytes / tm / 1e9),
                     "%.2f" % (tn / tm)])
    print_table("Casts of %d elements (GB/s read+written; NumPy/ml_dtypes astype vs mixprec.cast)"
                % n, ["cast", "NumPy", "mixprec", "mixprec speed / NumPy (>=1)"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
