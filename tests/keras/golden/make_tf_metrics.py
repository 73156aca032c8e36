"""Writes tf_metrics.npz: the results of tf-keras 2.21's threshold, score and IoU metrics
and of its hinge and focal losses on fixed data (metric_cases.py), for
tests/keras/test_golden_metrics.py. Not run by the tests (it needs TensorFlow):
``pip install tensorflow-cpu==2.21.* tf-keras==2.21.*`` in a separate environment, then
``python tests/keras/golden/make_tf_metrics.py``."""

import os
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np  # noqa: E402
import tf_keras as keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from metric_cases import LOSSES, METRICS, data  # noqa: E402


def main():
    d = data(np.random.default_rng(7))
    scope = {"M": keras.metrics, "Lo": keras.losses}
    out = {}
    for name, (src, calls) in METRICS.items():
        m = eval(src, scope)
        for i, (yt, yp, sw) in enumerate(calls):
            w = None if sw is None else d[sw]
            if yp is None:
                m.update_state(d[yt], sample_weight=w)
            else:
                m.update_state(d[yt], d[yp], sample_weight=w)
            out["%s/%d" % (name, i)] = np.asarray(m.result().numpy(), "float64")
    for name, (src, yt, yp, sw) in LOSSES.items():
        loss = eval(src, scope)
        out[name] = np.asarray(loss(d[yt], d[yp], sample_weight=None if sw is None else d[sw])
                               .numpy(), "float64")
    np.savez(os.path.join(HERE, "tf_metrics.npz"), **out)
    print("wrote %d results" % len(out))


if __name__ == "__main__":
    main()
