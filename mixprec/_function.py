"""``mixprec.function`` (tf.function).

NOTE: for now the decorated function runs eagerly, op by op, exactly as written (so
Python side effects happen on every call). The decorator accepts TensorFlow's arguments
(``input_signature``, ``jit_compile``, ``reduce_retracing`` …) so code written for
``tf.function`` runs unchanged; tracing and replay arrive in a later issue.
"""

import functools
import types

from mixprec._amp import graph_pass as _amp_pass
from mixprec._amp import state as _amp_state

__all__ = ["function"]


class Function:
    """A callable wrapping ``python_function`` (TensorFlow's ``tf.types.experimental.Function``)."""

    def __init__(self, python_function, input_signature=None, jit_compile=None,
                 reduce_retracing=False, **kwargs):
        self._python_function = python_function
        self.input_signature = input_signature
        self.jit_compile = jit_compile
        self.reduce_retracing = reduce_retracing
        self.experimental_options = kwargs
        functools.update_wrapper(self, python_function)

    @property
    def python_function(self):
        return self._python_function

    def __call__(self, *args, **kwargs):
        if _amp_state.active():  # the automatic mixed precision rewrite (mixprec._amp)
            f = self._python_function
            return _amp_pass.call(getattr(f, "__func__", f), "", f, args, kwargs)
        return self._python_function(*args, **kwargs)

    def __get__(self, instance, owner):
        # as TensorFlow: obj.method is a Function whose python_function is the bound method
        if instance is None:
            return self
        return Function(types.MethodType(self._python_function, instance),
                        input_signature=self.input_signature, jit_compile=self.jit_compile,
                        reduce_retracing=self.reduce_retracing, **self.experimental_options)

    def get_concrete_function(self, *args, **kwargs):
        return self

    def experimental_get_tracing_count(self):
        return 0

    def __repr__(self):
        return "<mixprec.function %s (eager)>" % getattr(self._python_function, "__name__", "?")


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_implements=None, experimental_autograph_options=None,
             experimental_attributes=None, experimental_relax_shapes=None,
             experimental_compile=None, experimental_follow_type_hints=None):
    """Decorator usable exactly as ``@tf.function`` (with or without arguments)."""
    def decorate(f):
        return Function(f, input_signature=input_signature, jit_compile=jit_compile,
                        reduce_retracing=reduce_retracing)
    if func is not None:
        return decorate(func)
    return decorate
