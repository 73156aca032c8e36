"""Dtype policies: ``Policy`` and the process-global policy (``tf.keras.mixed_precision``).

Owns policy names -> (compute dtype, variable dtype), their errors, and the global policy
that both API generations (this stable one and ``experimental``) read and write. It must
not know about layers, loss scales or tensors: it deals in names only.
"""

import contextlib

from mixprec import _dtypes
from mixprec._amp import state as _amp_state
from mixprec.keras.mixed_precision import device_compatibility_check

__all__ = ["Policy", "global_policy", "set_global_policy", "policy_scope"]

_MIXED = {"mixed_float16": ("float16", "float32"), "mixed_bfloat16": ("bfloat16", "float32")}

# The _float32_vars family (TF 1.14/1.15 names) and the policy each should become.
_FLOAT32_VARS_HINTS = {
    "infer_float32_vars": " Please use the 'mixed_float16' or 'mixed_bfloat16' policy instead.",
    "infer_with_float32_vars":
        " Please use the 'mixed_float16' or 'mixed_bfloat16' policy instead.",
    "float16_with_float32_vars": " Please use the 'mixed_float16' policy instead.",
    "bfloat16_with_float32_vars": " Please use the 'mixed_bfloat16' policy instead.",
}


def _check_name_type(name):
    if isinstance(name, _dtypes.DType):
        raise TypeError("'name' must be a string, not a DType. Instead, pass DType.name. "
                        "Received: name=%s" % name.name)
    if not isinstance(name, str):
        raise TypeError("'name' must be a string, but got: %s" % (name,))


def _parse_name(name):
    """(compute_dtype, variable_dtype) for a policy name; see ``Policy``."""
    if name.endswith("_float32_vars"):
        raise ValueError(
            "Policies ending in '_float32_vars' have been removed from TensorFlow."
            + _FLOAT32_VARS_HINTS.get(name, "") + " Got policy name: '%s'" % name)
    if name in _MIXED:
        return _MIXED[name]
    if name == "_infer":
        # TF1 compatibility: the dtype comes from a layer's first input. TensorFlow makes
        # it the default only with TF2 behaviour disabled; mixprec never makes it a default.
        return None, None
    try:
        dtype = _dtypes.as_dtype(name).name
    except TypeError:
        raise ValueError(
            "Cannot convert value %s to a mixed precision Policy. Valid policies include "
            "'mixed_float16', 'mixed_bfloat16', and the name of any dtype such as "
            "'float32'." % name) from None
    return dtype, dtype


class Policy:
    """A dtype policy for a layer: the dtype it computes in and the dtype of its variables.

    As ``tf.keras.mixed_precision.Policy`` (TF 2.4+). ``name`` may be:

    * ``'mixed_float16'`` or ``'mixed_bfloat16'``: compute in float16/bfloat16, keep
      variables in float32 (mixed precision training);
    * any dtype name ``mixprec.as_dtype`` accepts (``'float32'``, ``'float16'``,
      ``'bfloat16'``, ``'float64'``, ``'int32'``, ``'half'`` ...): both dtypes are that
      dtype, given by its canonical name (``Policy('half').compute_dtype == 'float16'``);
    * ``'_infer'``: both dtypes None (TF1 behaviour, inferred from a layer's first input).

    ``name`` is kept verbatim. Layers cast their first input to ``compute_dtype`` and create
    variables in ``variable_dtype``; ``Model.compile`` wraps the optimizer in a
    ``LossScaleOptimizer`` for 'mixed_float16'. Constructing the first 'mixed_float16'
    policy of the process logs the "Mixed precision compatibility check" on the 'mixprec'
    logger.

    As in tf-keras, policies define no ``__eq__`` (compare ``str(policy)`` or ``.name``)
    and have no loss scale (``experimental.Policy`` has one).

    Differences from TensorFlow: names are limited to mixprec's dtypes, so e.g.
    ``'complex64'``, ``'string'`` or ``'int16'`` raise the "Cannot convert value" error.
    TensorFlow also runs the compatibility check for 'mixed_bfloat16', which logs nothing
    but uses up the once-per-process message; mixprec runs it only for 'mixed_float16'
    (as TF 2.1-2.3 effectively did), so the message still appears later.

    Raises:
      TypeError: ``name`` is a DType or not a string.
      ValueError: ``name`` is not a policy name (including the removed '*_float32_vars').
    """

    def __init__(self, name):
        _check_name_type(name)
        self._name = name
        self._compute_dtype, self._variable_dtype = _parse_name(name)
        if name == "mixed_float16":
            device_compatibility_check.log_device_compatibility_check(name)

    @property
    def name(self):
        """The policy's name, as passed to the constructor."""
        return self._name

    @property
    def compute_dtype(self):
        """The dtype layers compute in (a string, or None for '_infer').

        Layers cast their inputs to it, so their outputs have it too. A 16-bit compute
        dtype does not mean 16-bit accumulation: mixprec's kernels never accumulate in 16
        bits (see docs/architecture.md).
        """
        return self._compute_dtype

    @property
    def variable_dtype(self):
        """The dtype layers create variables in (a string, or None for '_infer').

        When it differs from ``compute_dtype``, layers read their variables cast to the
        compute dtype inside ``call``; regularizers run in the variable dtype.
        """
        return self._variable_dtype

    def __repr__(self):
        return '<Policy "%s">' % self._name

    def get_config(self):
        return {"name": self._name}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Builds a policy from ``get_config()``'s dict.

        A 'loss_scale' key (written by TF 2.3's experimental Policy) is dropped, as tf-keras
        does.
        """
        del custom_objects
        if "loss_scale" in config:
            config = {k: v for k, v in config.items() if k != "loss_scale"}
        return cls(**config)


def _floatx():
    # NOTE: TensorFlow uses keras.backend.floatx() here; read it here once mixprec has one.
    return "float32"


# The policy set by set_global_policy/set_policy, or None for "Policy(floatx())". One per
# process (not per thread), as in TensorFlow.
_global_policy = None


def _global_policy_or(default_cls):
    if _global_policy is None:
        return default_cls(_floatx())
    return _global_policy


def _set_global(policy, api_name, policy_cls):
    """Shared by set_global_policy and experimental.set_policy (``api_name`` names the
    caller in the error; strings become ``policy_cls``)."""
    global _global_policy
    if policy is not None and not isinstance(policy, Policy):
        policy = policy_cls(policy)
    if (policy is not None and policy.compute_dtype is not None
            and not _dtypes.as_dtype(policy.compute_dtype).is_floating):
        raise ValueError(
            '%s can only be used to set the global policy to floating-point policies, such '
            'as "float32" and "mixed_float16", but got policy: %s' % (api_name, policy.name))
    if (policy is not None and policy.compute_dtype != policy.variable_dtype
            and _amp_state.graph_rewrite_enabled):
        from mixprec._amp.rewrite import POLICY_AFTER_REWRITE

        raise ValueError(POLICY_AFTER_REWRITE % (policy.name,))
    _global_policy = policy


def global_policy():
    """The global dtype policy: the default ``Policy`` of layers built without ``dtype``.

    Returns the very object given to ``set_global_policy``, or, if none was set (or it was
    reset with None), a new ``Policy('float32')`` on each call, as TensorFlow does with its
    default floatx. (TensorFlow returns a '_infer' policy when TF2 behaviour is disabled;
    mixprec has no TF1 mode.)
    """
    return _global_policy_or(Policy)


def set_global_policy(policy):
    """Sets the global dtype policy, as ``tf.keras.mixed_precision.set_global_policy``.

    Args:
      policy: a ``Policy``, a policy name (converted with ``Policy(policy)``), or None to
        go back to the default ``Policy('float32')``.

    Layers read the global policy when they are constructed; changing it later does not
    change existing layers. The global policy is process-wide, not per thread.

    Raises:
      ValueError: the policy's compute dtype is not floating (e.g. 'int32'); such policies
        are still fine for individual layers. Also the errors of ``Policy(policy)``.

    Raises ValueError too for a mixed policy after ``enable_mixed_precision_graph_rewrite``
    (until ``disable_mixed_precision_graph_rewrite``), as TensorFlow.
    """
    _set_global(policy, "set_global_policy", Policy)


@contextlib.contextmanager
def policy_scope(policy):
    """Sets the global policy inside a ``with`` block and restores the previous one.

    Internal (as in TensorFlow); nests. ``policy`` is what ``set_global_policy`` takes.
    """
    global _global_policy
    old_policy = _global_policy
    set_global_policy(policy)
    try:
        yield
    finally:
        _global_policy = old_policy
