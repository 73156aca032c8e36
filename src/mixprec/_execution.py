"""``tf.executing_eagerly()``: whether ops run now (True) or are being traced into a
``tf.function`` graph (False). Reads the tracer's state only; it changes nothing."""

from mixprec import _function

__all__ = ["executing_eagerly"]


def executing_eagerly():
    """True outside a tracing ``tf.function`` (and under ``run_functions_eagerly(True)``,
    where function bodies run as Python), False while one traces."""
    return not _function.tracing()
