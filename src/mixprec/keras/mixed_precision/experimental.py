"""The TF 2.1-2.3 policy API: ``tf.keras.mixed_precision.experimental``.

Owns what differs from the stable API: a ``Policy`` that carries a loss scale, the
``set_policy`` spelling and ``get_layer_policy``. Names, dtypes and the global policy are
policy.py's (one global for both generations); loss-scale objects are
``mixprec.mixed_precision.experimental``'s. This module must not build loss scales itself.
"""

import logging

from mixprec.keras.mixed_precision import policy as _policy

__all__ = ["Policy", "set_policy", "global_policy", "get_layer_policy", "LossScaleOptimizer"]

_logger = logging.getLogger("mixprec")

# Default of Policy's loss_scale argument: "'dynamic' for 'mixed_float16', else None".
# TensorFlow's value; a string so that it shows in signatures as it does in TensorFlow.
USE_DEFAULT = "USE_DEFAULT"

def _is_default(loss_scale):
    return isinstance(loss_scale, str) and loss_scale == USE_DEFAULT


def _resolve_loss_scale(value, name):
    """The loss scale a policy named ``name`` keeps for the ``loss_scale`` argument ``value``.

    ``USE_DEFAULT`` becomes 'dynamic' for 'mixed_float16' and None otherwise; the result is
    then converted by ``mixprec.mixed_precision.experimental.get`` (int/float ->
    FixedLossScale, 'dynamic' -> DynamicLossScale, a LossScale kept as is, a config dict
    deserialized, None kept, anything else a ValueError), as TensorFlow's
    ``loss_scale_module.get`` does. (Imported here, not at module level, to keep
    ``mixprec.keras`` importable before the loss-scale module.)
    """
    from mixprec.mixed_precision.experimental import get

    if _is_default(value):
        value = "dynamic" if name == "mixed_float16" else None
    return get(value)


def _serialize_loss_scale(loss_scale):
    # TensorFlow's serialize_keras_object form; an unconverted placeholder stays as it is.
    if loss_scale is None or not hasattr(loss_scale, "get_config"):
        return loss_scale
    return {"class_name": type(loss_scale).__name__, "config": loss_scale.get_config()}


class Policy(_policy.Policy):
    """A dtype policy with a loss scale, as ``tf.keras.mixed_precision.experimental.Policy``.

    Names and dtypes are those of ``tf.keras.mixed_precision.Policy`` (this class is a
    subclass of it, as TF 2.4-2.8's ``PolicyV1`` is). ``loss_scale`` is used only by
    ``Model.compile``/``fit``/``train_on_batch``; layers and custom training loops ignore
    it.

    Args:
      name: the policy name (see ``tf.keras.mixed_precision.Policy``).
      loss_scale: a ``LossScale``, an int or float (a ``FixedLossScale``), 'dynamic' (a
        ``DynamicLossScale``) or None (no loss scaling). Defaults to 'dynamic' for
        'mixed_float16' and None otherwise. Passing one to a policy whose compute dtype is
        not float16 logs a warning, as TensorFlow does.

    Differences from TensorFlow 2.1-2.3: the errors for bad names use tf-keras' wording
    (TF 2.3 says "Valid policies include include ..." and "... Got: float16").
    """

    def __init__(self, name, loss_scale=USE_DEFAULT):
        super().__init__(name)
        self._using_default_loss_scale = _is_default(loss_scale)
        if (not self._using_default_loss_scale and loss_scale
                and self.compute_dtype not in (None, "float16")):
            _logger.warning(
                "Creating a Policy with a loss scale is only useful for float16 policies. "
                "You passed loss_scale=%r for policy %s. Consider not passing any "
                "loss_scale instead.", loss_scale, name)
        self._loss_scale = _resolve_loss_scale(loss_scale, name)

    @property
    def loss_scale(self):
        """The loss scale ``Model.fit`` uses with this policy, or None."""
        return self._loss_scale

    @property
    def should_cast_variables(self):
        """True when variables are read in another dtype than they are stored in."""
        return self.variable_dtype != self.compute_dtype

    def __repr__(self):
        return '<Policy "%s", loss_scale=%r>' % (self.name, self._loss_scale)

    def get_config(self):
        """``{'name': name}``, plus the serialized 'loss_scale' if one was passed."""
        config = {"name": self.name}
        if not self._using_default_loss_scale:
            config["loss_scale"] = _serialize_loss_scale(self._loss_scale)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Inverse of ``get_config``; a 'loss_scale' dict is deserialized by the loss-scale
        module's ``get``. ``custom_objects`` is accepted and ignored (custom LossScale
        subclasses are not looked up by name)."""
        del custom_objects
        return cls(**config)


def global_policy():
    """The global policy, as ``tf.keras.mixed_precision.experimental.global_policy``.

    Shares its state with ``tf.keras.mixed_precision.global_policy``: returns the object
    last set by either ``set_policy`` or ``set_global_policy``, or a new experimental
    ``Policy('float32')`` (no loss scale) on each call when none is set.
    """
    return _policy._global_policy_or(Policy)


def set_policy(policy):
    """Sets the global policy, as ``tf.keras.mixed_precision.experimental.set_policy``.

    Args:
      policy: a ``Policy`` (of either API), a name (converted to this module's ``Policy``,
        so 'mixed_float16' gets a dynamic loss scale), or None to reset to the default.

    Raises:
      ValueError: the policy's compute dtype is not floating ("set_policy can only be used
        to set the global policy to floating-point policies, ..."); or ``Policy``'s errors.
    """
    _policy._set_global(policy, "set_policy", Policy)


def get_layer_policy(layer):
    """``layer.dtype_policy``, as ``tf.keras.mixed_precision.experimental.get_layer_policy``.

    Anything with a ``dtype_policy`` attribute counts as a layer.

    Raises:
      ValueError: ``layer`` is not a layer.
    """
    if isinstance(layer, type) or not hasattr(layer, "dtype_policy"):
        raise ValueError("get_policy can only be called on a layer, but got: %s" % (layer,))
    return layer.dtype_policy


def __getattr__(name):
    # LossScaleOptimizer(optimizer, loss_scale), TF 2.1-2.3's; resolved lazily because
    # loss_scale_optimizer imports the optimizers, which import this package.
    if name == "LossScaleOptimizer":
        from mixprec.keras.mixed_precision.loss_scale_optimizer import LossScaleOptimizerV1

        return LossScaleOptimizerV1
    return _missing(name)


from mixprec import _unsupported  # noqa: E402

_missing = _unsupported.module_getattr(__name__)
