"""``tf.compat``: the ``v1`` names TensorFlow 2 still keeps (only those mixprec supports)."""

from mixprec.compat import v1  # noqa: F401
