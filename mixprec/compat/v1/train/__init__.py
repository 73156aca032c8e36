"""``tf.compat.v1.train``: only ``experimental`` (the mixed precision graph rewrite)."""

from mixprec.compat.v1.train import experimental  # noqa: F401
