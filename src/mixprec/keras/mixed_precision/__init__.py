"""``tf.keras.mixed_precision``: the stable (TF 2.4+) dtype policy API, plus the TF 2.1-2.3
API in ``experimental``. Only gathers names; the code is in policy.py and experimental.py.
"""

from mixprec.keras.mixed_precision import experimental  # noqa: F401
from mixprec.keras.mixed_precision.loss_scale_optimizer import LossScaleOptimizer  # noqa: F401
from mixprec.keras.mixed_precision.policy import Policy, global_policy, set_global_policy

__all__ = ["Policy", "global_policy", "set_global_policy", "LossScaleOptimizer", "experimental"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
