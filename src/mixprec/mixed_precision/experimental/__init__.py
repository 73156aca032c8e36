"""``tf.mixed_precision.experimental``: LossScale, FixedLossScale, DynamicLossScale.

The state (current scale, good-step counter) is a C object (csrc/optim.c, mp_loss_scale)
held in two variables; these classes are TensorFlow's API on it.
"""

from mixprec.mixed_precision.experimental.loss_scale import (  # noqa: F401
    DynamicLossScale, FixedLossScale, LossScale, deserialize, get, serialize)

__all__ = ["LossScale", "FixedLossScale", "DynamicLossScale", "get", "serialize", "deserialize"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
