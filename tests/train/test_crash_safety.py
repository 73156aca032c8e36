"""A process SIGKILLed at random moments while saving (CheckpointManager.save,
save_weights in the TF format and as .npz, each overwriting or rotating) never loses the
last complete checkpoint: what is on disk afterwards always loads, whole and consistent."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np

import mixprec as tf
from mixprec import keras

CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import mixprec as tf
    from mixprec import keras
    d = sys.argv[1]
    model = keras.Sequential([keras.layers.Dense(512, input_shape=(1024,))])
    step = tf.Variable(0, dtype=tf.int64)
    ckpt = tf.train.Checkpoint(model=model, step=step)
    mgr = tf.train.CheckpointManager(ckpt, d + "/mgr", max_to_keep=2)
    if mgr.latest_checkpoint:
        ckpt.restore(mgr.latest_checkpoint)
    i = int(step.numpy())
    print("start", i, flush=True)
    while True:
        i += 1
        step.assign(i)
        for w in model.weights:
            w.assign(np.full(w.shape, float(i), np.float32))
        mgr.save()
        model.save_weights(d + "/w")
        model.save_weights(d + "/w.npz")
        print("saved", i, flush=True)
""")


def _consistent(model, step=None):
    vals = {float(np.unique(w.numpy())[0]) for w in model.weights}
    for w in model.weights:
        assert np.unique(w.numpy()).size == 1
    assert len(vals) == 1, vals
    v = vals.pop()
    if step is not None:
        assert float(step.numpy()) == v
    return v


def test_sigkill_during_saves_never_loses_the_last_checkpoint(tmp_path):
    rng = np.random.RandomState(0)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    last_complete = 0
    for _ in range(6):
        p = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
        line = p.stdout.readline()
        assert line.startswith("start"), p.stderr.read()
        time.sleep(rng.uniform(0.0, 0.5))
        p.send_signal(signal.SIGKILL)
        out, _ = p.communicate()
        saved = [int(ln.split()[1]) for ln in out.splitlines() if ln.startswith("saved")]
        if saved:
            last_complete = saved[-1]
        if last_complete == 0:
            continue
        # the manager's latest checkpoint loads and is at least the last complete one
        model = keras.Sequential([keras.layers.Dense(512, input_shape=(1024,))])
        step = tf.Variable(0, dtype=tf.int64)
        latest = tf.train.latest_checkpoint(str(tmp_path / "mgr"))
        assert latest is not None
        tf.train.Checkpoint(model=model, step=step).restore(latest).assert_consumed()
        assert _consistent(model, step) >= last_complete
        for name in ("w", "w.npz"):
            m = keras.Sequential([keras.layers.Dense(512, input_shape=(1024,))])
            m.load_weights(str(tmp_path / name))
            assert _consistent(m) >= last_complete
    assert last_complete > 0
