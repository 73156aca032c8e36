"""``tf.compat.v1``: ``mixed_precision`` and ``train.experimental`` (the graph rewrite)."""

from mixprec.compat.v1 import mixed_precision, train  # noqa: F401
