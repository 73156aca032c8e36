"""A/B of one mixprec switch on bench/cnn.py's training steps, in one process: the two
settings alternate call by call (the shared machines' load moves between seconds, so
separate runs do not compare), and the fastest and median of each are printed.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/cnn_ab.py --switch pool_workspace

Switches: pool_workspace (MaxPool keeps oneDNN's argmax workspace for MaxPoolGrad, vs
MaxPoolGrad running the forward again), moments_one_pass (BatchMoments in one read of x
vs two). Models: cnn, keras, block (bench/cnn.py's).
Keep --calls small on shared machines.
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cnn  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--switch", default="pool_workspace", choices=["pool_workspace", "moments_one_pass"])
    ap.add_argument("--models", nargs="+", default=["cnn", "keras", "block"])
    ap.add_argument("--dtypes", nargs="+", default=["float32"])
    ap.add_argument("--calls", type=int, default=15, help="calls per setting")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=28)
    args = ap.parse_args()
    import numpy as np

    import mixprec as tf
    from mixprec import _core, keras

    toggle = {"pool_workspace": _core.pool_workspace_keep,
              "moments_one_pass": lambda on: _core.batch_moments_two_pass(not on)}[args.switch]
    print("load average %.1f %.1f %.1f" % os.getloadavg(), "|", _core.dnnl_info())
    for which in args.models:
        for dt in args.dtypes:
            if which == "keras":
                model, loss_fn, x, y = cnn.keras_setup(keras, tf, np, args.batch, args.size, dt)
                fn = tf.function(lambda: cnn.keras_step(tf, model, loss_fn, x, y))
            elif which == "cnn":
                params, x, y = cnn.cnn_setup(tf, np, args.batch, args.size)
                fn = tf.function(lambda: cnn.cnn_step(tf, params, x, y, dt))
            else:
                params, x, dy = cnn.block_setup(tf, np, 32, 56)
                fn = tf.function(lambda: cnn.block_step(tf, params, x, dy, dt))
            times = {True: [], False: []}
            for on in (True, False, True, False):  # warm both
                toggle(on)
                fn()
            for i in range(2 * args.calls):
                on = i % 2 == 0
                toggle(on)
                t0 = time.perf_counter()
                r = fn()
                _ = [v.numpy() for v in r if v is not None][:1]
                times[on].append(time.perf_counter() - t0)
            toggle(True)
            a, b = times[True], times[False]
            print("%-6s %-9s on: %7.2f ms fastest %7.2f median | off: %7.2f / %7.2f -> on/off %.2f / %.2f" % (
                which, dt, 1e3 * min(a), 1e3 * statistics.median(a), 1e3 * min(b), 1e3 * statistics.median(b),
                min(a) / min(b), statistics.median(a) / statistics.median(b)))
    print("load average %.1f %.1f %.1f" % os.getloadavg())


if __name__ == "__main__":
    main()
