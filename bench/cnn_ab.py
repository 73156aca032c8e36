"""A/B of one mixprec switch on bench/cnn.py's training steps, in one process: the two
settings alternate call by call (the shared machines' load moves between seconds, so
separate runs do not compare), and the fastest and median of each are printed.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/cnn_ab.py --switch pool_workspace

Switches: pool_workspace (MaxPool keeps oneDNN's argmax workspace for MaxPoolGrad, vs
MaxPoolGrad running the forward again), moments_one_pass (BatchMoments in one read of x
vs two), pool_relu_grad (traced graphs fuse ReluGrad into MaxPoolGrad, vs the two ops: a
trace-time switch, so each setting has its own traced function). Models: cnn, keras, block
(bench/cnn.py's). Wall and process CPU time (all threads) are both printed.
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
    ap.add_argument("--switch", default="pool_workspace",
                    choices=["pool_workspace", "moments_one_pass", "pool_relu_grad"])
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
              "moments_one_pass": lambda on: _core.batch_moments_two_pass(not on),
              "pool_relu_grad": lambda on: None}[args.switch]
    trace_time = {"pool_relu_grad": _core.graph_fuse_pool_relu}.get(args.switch)
    print("load average %.1f %.1f %.1f" % os.getloadavg(), "|", _core.dnnl_info())
    for which in args.models:
        for dt in args.dtypes:
            if which == "keras":
                model, loss_fn, x, y = cnn.keras_setup(keras, tf, np, args.batch, args.size, dt)
                step = lambda: cnn.keras_step(tf, model, loss_fn, x, y)  # noqa: E731
            elif which == "cnn":
                params, x, y = cnn.cnn_setup(tf, np, args.batch, args.size)
                step = lambda: cnn.cnn_step(tf, params, x, y, dt)  # noqa: E731
            else:
                params, x, dy = cnn.block_setup(tf, np, 32, 56)
                step = lambda: cnn.block_step(tf, params, x, dy, dt)  # noqa: E731
            fns = {}
            for on in (True, False):  # one function per setting of a trace-time switch
                if trace_time:
                    prev = trace_time(on)
                fns[on] = tf.function(step) if trace_time or not fns else fns[True]
                fns[on]()
                if trace_time:
                    trace_time(prev)
            times = {True: [], False: []}
            cpu = {True: [], False: []}
            for on in (True, False, True, False):  # warm both
                toggle(on)
                fns[on]()
            for i in range(2 * args.calls):
                on = i % 2 == 0
                toggle(on)
                t0, c0 = time.perf_counter(), time.process_time()
                r = fns[on]()
                _ = [v.numpy() for v in r if v is not None][:1]
                times[on].append(time.perf_counter() - t0)
                cpu[on].append(time.process_time() - c0)
            toggle(True)
            a, b = times[True], times[False]
            print("%-6s %-9s on: %7.2f ms fastest %7.2f median | off: %7.2f / %7.2f -> on/off %.2f / %.2f" % (
                which, dt, 1e3 * min(a), 1e3 * statistics.median(a), 1e3 * min(b), 1e3 * statistics.median(b),
                min(a) / min(b), statistics.median(a) / statistics.median(b)))
            a, b = cpu[True], cpu[False]
            print("%-6s %-9s cpu on: %7.2f ms fewest %7.2f median | off: %7.2f / %7.2f -> on/off %.2f / %.2f" % (
                which, dt, 1e3 * min(a), 1e3 * statistics.median(a), 1e3 * min(b), 1e3 * statistics.median(b),
                min(a) / min(b), statistics.median(a) / statistics.median(b)))
    print("load average %.1f %.1f %.1f" % os.getloadavg())


if __name__ == "__main__":
    main()
