"""``tf.custom_gradient`` and ``tf.recompute_grad``: functions whose backward is Python.

The forward runs eagerly; the floating outputs become tape nodes whose backward calls, once,
the user's gradient function (csrc/python/custom_grad.c, the GIL taken there). No gradient
arithmetic here. Inside a traced function the forward is recorded like any ops, and when
``tape.gradient`` is traced the user's gradient function runs then: its ops are recorded,
so a replay runs no Python (docs/function.md).
"""

import functools
import inspect

from mixprec import _core, _nest, _variable

__all__ = ["custom_gradient", "recompute_grad"]


def _watched_trainable_variables(fn, stop_outer=False):
    """Run fn(); return (its result, the trainable variables it read, in order). With
    stop_outer the tapes already entered record nothing of it."""
    token = _core.tape_suspend_outer() if stop_outer else None
    watcher = _core.Tape(True, True)
    watcher.push()
    try:
        out = fn()
    finally:
        watcher.pop()
        if token is not None:
            _core.tape_resume_outer(token)
    seen = []
    for vid in watcher.watched_variable_ids():
        v = _variable.lookup(vid)
        if v is not None:
            seen.append(v)
    return out, seen


def _accepts_variables(grad_fn):
    try:
        spec = inspect.getfullargspec(grad_fn)
    except TypeError:
        return True
    return "variables" in spec.args or "variables" in spec.kwonlyargs or spec.varkw is not None


def _record(f, args, kwargs, stop_outer=False, what="tf.custom_gradient"):
    (result, grad_fn), watched = _watched_trainable_variables(lambda: f(*args, **kwargs),
                                                              stop_outer)
    flat_args = _nest.flatten(args)
    all_inputs = flat_args + _nest.flatten(kwargs)
    variables = [v for v in watched if all(v is not i for i in all_inputs)]
    if variables and not _accepts_variables(grad_fn):
        raise TypeError(
            "@tf.custom_gradient grad_fn must accept keyword argument 'variables', since "
            "function uses variables: %s" % (variables,))
    # a variable enters as its read (as TensorFlow's convert_to_tensor): the read is taped,
    # which watches it on the recording tapes, and the gradient reaches it through the read
    inputs = [a.value() if isinstance(a, _core.Variable) else
              a if isinstance(a, _core.Tensor) else _core.convert_to_tensor(a)
              for a in flat_args + variables]
    flat_result = _nest.flatten(result)
    flat_result = [r.value() if isinstance(r, _core.Variable) else
                   r if isinstance(r, _core.Tensor) else _core.convert_to_tensor(r)
                   for r in flat_result]
    arg_count = len(flat_args)

    floating = [k for k, r in enumerate(flat_result) if r.dtype.is_floating]

    def backward(float_dys):
        # one call for all outputs; an output no gradient reached gets zeros (as
        # TensorFlow's eager tape), a non-floating one None
        dys = [None] * len(flat_result)
        for k, dy in zip(floating, float_dys):
            r = flat_result[k]
            dys[k] = dy if dy is not None else _core.fill(list(r.shape), 0, r.dtype)
        if variables:
            input_grads, variable_grads = grad_fn(*dys, variables=variables)
            variable_grads = list(_nest.flatten(variable_grads)) if not isinstance(
                variable_grads, (list, tuple)) else list(variable_grads)
            if len(variable_grads) != len(variables):
                raise ValueError("Must return gradient for each variable from "
                                 "@custom_gradient grad_fn.")
        else:
            input_grads = grad_fn(*dys)
            variable_grads = []
        flat_grads = _nest.flatten(input_grads)
        if len(flat_grads) != arg_count:
            raise ValueError(
                "custom_gradient function expected to return %d gradients, but returned %d "
                "instead." % (arg_count, len(flat_grads)))
        return list(flat_grads) + variable_grads

    outs = _core.tape_record_custom(inputs, flat_result, backward)
    return _nest.pack_sequence_as(result, outs)


def custom_gradient(f=None):
    """Decorator: ``f(*args)`` returns ``(y, grad_fn)``; the gradient of ``y`` with respect
    to the arguments is ``grad_fn(*dys)`` (``grad_fn(*dys, variables=vs)`` returning
    ``(input_grads, variable_grads)`` when ``f`` reads trainable variables)."""
    if f is None:
        return custom_gradient
    return _Decorated(f)


class _Decorated:
    """The decorated function; on a method it binds the instance first (``self`` is not
    an input that gets a gradient)."""

    def __init__(self, f):
        self._f = f
        functools.update_wrapper(self, f)

    def __call__(self, *args, **kwargs):
        return _record(self._f, args, kwargs)

    def __get__(self, instance, owner):
        if instance is None:
            return self
        return _Decorated(functools.partial(self._f, instance))


def recompute_grad(f):
    """``tf.recompute_grad``: same values and gradients as ``f``; the forward runs with the
    tapes already entered paused, so they keep only its inputs and outputs (not its
    intermediates), and the backward re-runs ``f`` under a tape of its own."""
    @functools.wraps(f)
    def inner(*args, **kwargs):
        from mixprec._tape import GradientTape

        def call(*xs):
            result = f(*xs, **kwargs)

            def grad_fn(*dys, variables=None):
                with GradientTape(watch_accessed_variables=True) as t:
                    ids = [_core.identity(x) if isinstance(x, _core.Tensor) else x for x in xs]
                    t.watch([x for x in ids if isinstance(x, (_core.Tensor, _core.Variable))])
                    again = f(*ids, **kwargs)
                vs = list(variables or [])
                grads = t.gradient(_nest.flatten(again), list(ids) + vs,
                                   output_gradients=list(dys),
                                   unconnected_gradients="zero")
                return grads[:len(ids)], grads[len(ids):]
            return result, grad_fn
        return _record(call, args, {}, stop_outer=True, what="tf.recompute_grad")
    return inner
