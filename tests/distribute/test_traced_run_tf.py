"""Interop: seed 004's traced step and epoch-in-a-function under mixprec and TensorFlow
2.21 (the peer of tests/tf_peer.py), the same script: the same tracing counts and Python
side effects, PerReplica results, and the same numbers from the same weights."""

import json
import os
import subprocess
import sys

import numpy as np

from tf_peer import tf_python
from tolerances import assert_close

HERE = os.path.dirname(os.path.abspath(__file__))


def _facts(python, framework):
    env = {k: v for k, v in os.environ.items() if k != "MIXPREC_EMULATE_GPU"}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", TF_USE_LEGACY_KERAS="1", CUDA_VISIBLE_DEVICES="")
    r = subprocess.run([python, os.path.join(HERE, "traced_run_peer.py"), framework],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return json.loads(r.stdout.split("FACTS ")[1].splitlines()[0])


def test_traced_seed004_matches_tensorflow():
    peer = tf_python()
    tf_facts = _facts(peer, "tensorflow")
    mp = _facts(sys.executable, "mixprec")
    for key in ("inner", "outer", "step_tracing_count"):
        assert mp["step"][key] == tf_facts["step"][key], key
    for key in ("epoch_outer", "epoch_inner", "epoch_tracing_count", "ids_type", "ids"):
        assert mp[key] == tf_facts[key], key
    assert_close(np.array(mp["step"]["losses"]), np.array(tf_facts["step"]["losses"]),
                 "float32", "replicas")
    for a, b in zip(mp["step"]["weights"], tf_facts["step"]["weights"]):
        assert_close(np.array(a, np.float32), np.array(b, np.float32), "float32", "replicas")
    assert_close(np.array(mp["epoch_losses"]), np.array(tf_facts["epoch_losses"]),
                 "float32", "replicas")
