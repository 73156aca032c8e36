"""``enable_mixed_precision_graph_rewrite`` / ``disable_...`` and ``tf.config.optimizer``'s
experimental options, as TensorFlow's: wrapping the optimizer in a loss-scale optimizer, the
errors, and the refusal of a mixed global policy. Casting is the core's (autocast) and the
graph pass's (graph_pass.py); this module only checks arguments and flips switches.
"""

from mixprec._amp import state

_REWRITE_AFTER_POLICY = (
    "The mixed precision graph rewrite cannot be enabled, because the global Keras dtype "
    "Policy has been set to a mixed precision policy. At most, one of the following can be "
    "called:\n\n  1. tf.keras.mixed_precision.set_global_policy() with a mixed precision "
    "policy (You called this first)\n  2. tf.train.experimental."
    "enable_mixed_precision_graph_rewrite() (You called this second)\n\nBoth turn on mixed "
    "precision; keep one. The Keras policy is the better choice: it works eagerly too and "
    "can be set per layer.")

POLICY_AFTER_REWRITE = (
    'The global dtype policy cannot be set to "%s", because the mixed precision graph '
    "rewrite has already been enabled.\nAt most, one of the following can be called:\n\n"
    "  1. tf.compat.v1.train.experimental.enable_mixed_precision_graph_rewrite() (You called "
    "this first)\n  2. tf.keras.mixed_precision.set_global_policy() with a mixed precision "
    "policy (You called this second)\n\nBoth turn on mixed precision; keep one (call "
    "disable_mixed_precision_graph_rewrite() first to switch to the policy).")


def _global_policy_is_mixed():
    from mixprec.keras.mixed_precision import policy as _policy

    p = _policy._global_policy
    return p is not None and p.compute_dtype != p.variable_dtype


def _wrap_optimizer(opt, loss_scale):
    from mixprec.keras.mixed_precision import loss_scale_optimizer as lso
    from mixprec.keras.optimizers.optimizer import _BaseOptimizer as Optimizer
    from mixprec.mixed_precision.experimental import loss_scale as ls

    if isinstance(opt, lso._LossScaleOptimizerBase):
        raise ValueError('"opt" must not already be an instance of a LossScaleOptimizer. '
                         "`enable_mixed_precision_graph_rewrite` will automatically wrap the "
                         "optimizer with a LossScaleOptimizer.")
    if not isinstance(opt, Optimizer):
        raise ValueError('"opt" must be an instance of a tf.train.Optimizer or a '
                         "tf.keras.optimizers.Optimizer, but got: %s" % (opt,))
    invalid = ('Invalid value passed to loss_scale. loss_scale must be the string "dynamic" '
               "(recommended), an int, a float, a FixedLossScale, or a DynamicLossScale. Got "
               "value: %s" % (loss_scale,))
    if isinstance(loss_scale, str):
        if loss_scale != "dynamic":
            raise ValueError(invalid)
        return lso.LossScaleOptimizer(opt)
    if loss_scale is None:
        raise ValueError(invalid)
    if isinstance(loss_scale, (int, float)):
        return lso.LossScaleOptimizer(opt, dynamic=False, initial_scale=loss_scale)
    if isinstance(loss_scale, ls.FixedLossScale):
        return lso.LossScaleOptimizer(opt, dynamic=False,
                                      initial_scale=loss_scale._loss_scale_value)
    if isinstance(loss_scale, ls.DynamicLossScale):
        if loss_scale.multiplier != 2:
            raise ValueError('When passing a DynamicLossScale to "loss_scale", '
                             "DynamicLossScale.multiplier must be 2. Got: %s" % (loss_scale,))
        return lso.LossScaleOptimizer(opt, initial_scale=loss_scale.initial_loss_scale,
                                      dynamic_growth_steps=loss_scale.increment_period)
    if isinstance(loss_scale, ls.LossScale):
        raise TypeError("Passing a LossScale that is not a FixedLossScale or a "
                        "DynamicLossScale is not supported. Got: %s" % (loss_scale,))
    raise ValueError(invalid)


def enable_mixed_precision_graph_rewrite(opt, loss_scale="dynamic"):
    """Wraps ``opt`` in a LossScaleOptimizer and turns on the automatic mixed precision rewrite.

    Every ``mixprec.function`` (and Keras' train/test/predict steps) then runs TensorFlow's
    allow/infer/deny/clear colouring: MatMuls in float16, numerically risky ops (Exp, Sum,
    Mean, the cross-entropies...) in float32, with casts where the colour changes; results
    come back as float32. Unlike TensorFlow, it also acts on a CPU and on code that runs
    eagerly (autocast at dispatch). The summary is logged once per function.

    Args:
      opt: a ``mixprec.keras.optimizers.Optimizer``.
      loss_scale: ``'dynamic'`` (initial scale 2**15, doubled after 2000 finite steps), a
        number (fixed scale), a ``FixedLossScale`` or a ``DynamicLossScale`` (multiplier 2).

    Returns:
      ``tf.keras.mixed_precision.LossScaleOptimizer`` wrapping ``opt``.

    Raises:
      ValueError: ``opt`` is not an optimizer or already a LossScaleOptimizer; the same
        optimizer is wrapped twice; an invalid ``loss_scale``; a mixed global policy is set.
    """
    if _global_policy_is_mixed():
        raise ValueError(_REWRITE_AFTER_POLICY)
    opt = _wrap_optimizer(opt, loss_scale)
    state.options["auto_mixed_precision"] = True
    state.graph_rewrite_enabled = True
    state.refresh()
    return opt


def disable_mixed_precision_graph_rewrite():
    """Turns the rewrite off again (optimizers already wrapped keep their loss scaling)."""
    if not state.graph_rewrite_enabled:
        from mixprec._logging import get_logger

        get_logger().warning("disable_mixed_precision_graph_rewrite() called when mixed "
                             "precision is already disabled.")
    state.options["auto_mixed_precision"] = False
    state.graph_rewrite_enabled = False
    state.refresh()


def set_experimental_options(options):
    """``tf.config.optimizer.set_experimental_options``: ``auto_mixed_precision`` (float16),
    ``auto_mixed_precision_onednn_bfloat16`` (``auto_mixed_precision_mkl``, bfloat16) switch
    the rewrite; ``remapping`` (False) and ``disable_meta_optimizer`` (True) switch off the
    fusions of traced graphs (``mixprec._remapper``); other Grappler options are kept and
    reported but change nothing."""
    if not isinstance(options, dict):
        raise TypeError("options must be a dict, got %s" % (type(options).__name__,))
    state.options.update(options)
    state.refresh()


def get_experimental_options():
    """The options set so far (TensorFlow also reports its two meta-optimizer defaults)."""
    out = {}
    for k in _OPTION_ORDER:
        if k in state.options or k in ("disable_model_pruning", "disable_meta_optimizer"):
            out[k] = state.options.get(k, False)
    out.update((k, v) for k, v in state.options.items() if k not in out)
    return out


# the order TensorFlow 2.21 reports its Grappler options in (its rewriter config's), e.g.
# {'layout_optimizer': False, 'constant_folding': True, 'remapping': False,
#  'disable_model_pruning': False, 'auto_mixed_precision': True, 'disable_meta_optimizer': False}
_OPTION_ORDER = (
    "layout_optimizer", "constant_folding", "shape_optimization", "remapping",
    "arithmetic_optimization", "dependency_optimization", "loop_optimization",
    "function_optimization", "debug_stripper", "disable_model_pruning",
    "scoped_allocator_optimization", "pin_to_host_optimization", "implementation_selector",
    "auto_mixed_precision", "use_plugin_optimizers", "disable_meta_optimizer",
    "auto_mixed_precision_onednn_bfloat16", "auto_mixed_precision_mkl", "min_graph_nodes")
