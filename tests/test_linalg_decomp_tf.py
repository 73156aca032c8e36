"""tf.linalg's decompositions against a live TensorFlow 2.21 (tests/tf_peer.py; skipped without
one): sign-free values and the gradients of the same functions, run in both."""

import subprocess
import sys

import numpy as np

from tf_peer import tf_python
from tolerances import TOLERANCE

SCRIPT = """import sys, numpy as np
if sys.argv[1] == "tf":
    import tensorflow as tf
else:
    import mixprec as tf
L = tf.linalg
rng = np.random.default_rng(3)
A = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
W = rng.standard_normal((2, 5, 3))
B = rng.standard_normal((2, 4, 2))
S = A @ np.swapaxes(A, -1, -2)
w4 = rng.standard_normal((4, 4)); w53 = rng.standard_normal((5, 3)); w33 = rng.standard_normal((3, 3))
cases = {
 "chol": (S, lambda x: L.cholesky(x) * w4),
 "solve": (A, lambda x: L.solve(x, B, adjoint=True)),
 "trs": (A, lambda x: L.triangular_solve(x, B, lower=False, adjoint=True)),
 "qr_deep": (W, lambda x: tf.reduce_sum(L.qr(x)[0] * w53) + tf.reduce_sum(L.qr(x)[1] * w33)),
 "qr_wide": (np.swapaxes(W, -1, -2), lambda x: tf.reduce_sum(L.qr(x)[0] * w33) + tf.reduce_sum(L.qr(x)[1] * w53.T)),
 "eigh": (S, lambda x: tf.reduce_sum(L.eigh(x)[0] * w4[0]) + tf.reduce_sum(tf.abs(L.eigh(x)[1]) * w4)),
 "svd": (W, lambda x: tf.reduce_sum(L.svd(x)[0] * w33[0]) + tf.reduce_sum(tf.abs(L.svd(x)[1]) * w53) + tf.reduce_sum(tf.abs(L.svd(x)[2]) * w33)),
 "svd_full": (W[..., :4, :], lambda x: tf.reduce_sum(tf.abs(L.svd(x, full_matrices=True)[1]) * w4) + tf.reduce_sum(tf.abs(L.svd(x, full_matrices=True)[2]) * w33)),
 "slogdet": (A, lambda x: L.slogdet(x)[1]),
 "logdet": (S, lambda x: L.logdet(x)),
 "lstsq": (W, lambda x: L.lstsq(x, np.ones((2, 5, 1)), l2_regularizer=0.1)),
 "pinv": (W, lambda x: L.pinv(x) * w53.T),
 "expm": (A * 0.3, lambda x: L.expm(x) * w4),
 "cholsolve": (S, lambda x: L.cholesky_solve(L.cholesky(x), B)),
}
out = {}
for k, (x0, f) in cases.items():
    x = tf.constant(x0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(f(x))
    out[k] = t.gradient(y, x).numpy()
    out[k + " value"] = tf.reduce_sum(f(x)).numpy()
np.savez(sys.argv[2], **out)
"""


def test_values_and_gradients_match_tensorflow(tmp_path):
    exe = tf_python()
    script = tmp_path / "linalg_grads.py"
    script.write_text(SCRIPT)
    subprocess.run([exe, str(script), "tf", str(tmp_path / "tf.npz")], check=True, capture_output=True)
    subprocess.run([sys.executable, str(script), "mp", str(tmp_path / "mp.npz")], check=True, capture_output=True)
    want, got = np.load(tmp_path / "tf.npz"), np.load(tmp_path / "mp.npz")
    rtol, atol = TOLERANCE[("float64", "decomposition")]
    assert sorted(want.files) == sorted(got.files)
    for k in want.files:
        np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=atol * np.abs(want[k]).max(), err_msg=k)
