"""Checkpoint throughput: save (write + fsync) and restore (read, checksum, assign) of one
large checkpoint with tf.train.Checkpoint, mixprec against TensorFlow on the same disk when
a Python with TensorFlow is found (this one, --tf-python or MIXPREC_TF_PYTHON).

    python bench/checkpoint.py                 # 1 GiB in 16 float32 variables
    python bench/checkpoint.py --mb 64 --dir /tmp
"""

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

TF_SCRIPT = r"""
import json, os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf
mb, parts, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
n = mb * (1 << 20) // 4 // parts
vs = {"v%02d" % i: tf.Variable(np.full(n, i, np.float32)) for i in range(parts)}
ck = tf.train.Checkpoint(**vs)
ck.write(os.path.join(d, "warm"))
t = time.perf_counter(); p = ck.write(os.path.join(d, "tf")); save = time.perf_counter() - t
if sys.argv[4] == "1":
    for f in os.listdir(d):
        with open(os.path.join(d, f), "rb") as fh:
            while fh.read(1 << 24): pass
vs2 = {"v%02d" % i: tf.Variable(np.zeros(n, np.float32)) for i in range(parts)}
t = time.perf_counter(); tf.train.Checkpoint(**vs2).read(p).assert_consumed(); load = time.perf_counter() - t
assert float(vs2["v01"][0]) == 1.0
print("RESULT" + json.dumps({"save": save, "restore": load}))
"""


def tf_python(arg):
    if arg:
        return arg
    if importlib.util.find_spec("tensorflow") is not None:
        return sys.executable
    return os.environ.get("MIXPREC_TF_PYTHON")


def warm(d):
    """Reads every file once, so restores read from the page cache (a VM may drop the
    pages of a file just written and fsynced)."""
    for f in os.listdir(d):
        with open(os.path.join(d, f), "rb") as fh:
            while fh.read(1 << 24):
                pass


def bench_mixprec(mb, parts, d, cached):
    import mixprec as tf

    n = mb * (1 << 20) // 4 // parts
    vs = {"v%02d" % i: tf.Variable(np.full(n, i, np.float32)) for i in range(parts)}
    ck = tf.train.Checkpoint(**vs)
    ck.write(os.path.join(d, "warm"))
    t = time.perf_counter()
    p = ck.write(os.path.join(d, "mp"))
    save = time.perf_counter() - t
    if cached:
        warm(d)
    vs2 = {"v%02d" % i: tf.Variable(np.zeros(n, np.float32)) for i in range(parts)}
    t = time.perf_counter()
    tf.train.Checkpoint(**vs2).read(p).assert_consumed()
    load = time.perf_counter() - t
    assert float(vs2["v01"].numpy()[0]) == 1.0
    return {"save": save, "restore": load}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=1024, help="checkpoint size in MiB")
    ap.add_argument("--parts", type=int, default=16, help="number of variables")
    ap.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    ap.add_argument("--tf-python", default=None, help="a Python with TensorFlow")
    ap.add_argument("--no-tf", action="store_true", help="mixprec only")
    ap.add_argument("--cached", action="store_true",
                    help="restore from the page cache (files read once after saving)")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="ckbench", dir=a.dir)
    try:
        rows = [("mixprec", bench_mixprec(a.mb, a.parts, d, a.cached))]
        exe = None if a.no_tf else tf_python(a.tf_python)
        if exe:
            out = subprocess.run([exe, "-c", TF_SCRIPT, str(a.mb), str(a.parts), d,
                                  "1" if a.cached else "0"],
                                 capture_output=True, text=True, timeout=1800)
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")]
            if out.returncode == 0 and lines:
                rows.append(("TensorFlow", json.loads(lines[-1][len("RESULT"):])))
            else:
                print("TensorFlow run failed:", out.stderr[-1000:], file=sys.stderr)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("Checkpoint of %d MiB in %d float32 variables (directory on %s; restore from %s)\n"
          % (a.mb, a.parts, a.dir or tempfile.gettempdir(),
             "the page cache" if a.cached else "wherever the OS left the pages"))
    print("| framework | save s | save MiB/s | restore s | restore MiB/s |")
    print("|---|---|---|---|---|")
    for name, r in rows:
        print("| %s | %.3f | %.0f | %.3f | %.0f |" % (
            name, r["save"], a.mb / r["save"], r["restore"], a.mb / r["restore"]))


if __name__ == "__main__":
    main()
