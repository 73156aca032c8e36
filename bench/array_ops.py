"""The array ops (sort, top_k, gather_nd, tensor_scatter_nd_add, unique, boolean_mask) in
mixprec and, with --tf-python, in TensorFlow on the same machine, one run each:

    python bench/array_ops.py [--repeat 7] [--tf-python /path/to/tf/venv/bin/python]

The TensorFlow side runs in its own interpreter (mixprec never imports TensorFlow); the same
script is given to it with --as-tf.
"""

import argparse
import json
import subprocess
import sys

import numpy as np

from _common import machine, median_time, print_table


def cases(tf, rng):
    x = tf.constant(rng.standard_normal((256, 4096), dtype=np.float32))
    p = tf.constant(rng.standard_normal((4096, 64), dtype=np.float32))
    idx = tf.constant(rng.integers(0, 4096, (65536, 1)).astype(np.int32))
    upd = tf.constant(rng.standard_normal((65536, 64), dtype=np.float32))
    u = tf.constant(rng.integers(0, 1000, 200000).astype(np.int32))
    m = tf.constant(rng.uniform(size=(4096,)) > 0.5)
    return [
        ("sort (256, 4096) f32, last axis", lambda: tf.sort(x)),
        ("top_k k=10 of (256, 4096) f32", lambda: tf.math.top_k(x, 10)),
        ("gather_nd 65536 rows of (4096, 64)", lambda: tf.gather_nd(p, idx)),
        ("tensor_scatter_nd_add 65536 rows", lambda: tf.tensor_scatter_nd_add(p, idx, upd)),
        ("unique of 200000 int32", lambda: tf.unique(u)),
        ("boolean_mask (4096, 64)", lambda: tf.boolean_mask(p, m)),
    ]


def measure(tf, repeat):
    rng = np.random.default_rng(0)
    return [(name, median_time(fn, repeat)) for name, fn in cases(tf, rng)]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--tf-python", default=None)
    ap.add_argument("--as-tf", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.as_tf:
        import tensorflow as tf
        print(json.dumps(measure(tf, args.repeat)))
        return
    import mixprec as mp
    ours = measure(mp, args.repeat)
    theirs = {}
    if args.tf_python:
        out = subprocess.run([args.tf_python, __file__, "--as-tf", "--repeat", str(args.repeat)],
                             capture_output=True, text=True, check=True).stdout
        theirs = dict(json.loads(out.strip().splitlines()[-1]))
    print("# bench/array_ops.py — %s" % machine())
    rows = []
    for name, t in ours:
        tt = theirs.get(name)
        rows.append([name, "%.3f" % (t * 1e3), "%.3f" % (tt * 1e3) if tt else "-",
                     "%.2fx" % (tt / t) if tt else "-"])
    print_table("array ops (ms, median)", ["op", "mixprec", "TensorFlow", "TF / mixprec"], rows)


if __name__ == "__main__":
    sys.exit(main())
