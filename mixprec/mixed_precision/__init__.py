"""``tf.mixed_precision`` (TF 2.1–2.3's home of the loss-scale classes)."""

from mixprec.mixed_precision import experimental  # noqa: F401
