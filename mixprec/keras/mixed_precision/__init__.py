"""``tf.keras.mixed_precision``: the stable (TF 2.4+) dtype policy API. Only gathers
names; the code is in policy.py.
"""

from mixprec.keras.mixed_precision.policy import Policy, global_policy, set_global_policy

# LossScaleOptimizer arrives with the training-core work.

__all__ = ["Policy", "global_policy", "set_global_policy"]
