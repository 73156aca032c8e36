"""``tf.ragged``: the name space of mixprec's minimal RaggedTensor (src/mixprec/_ragged.py)."""

from mixprec._ragged import RaggedTensor, constant  # noqa: F401

__all__ = ["RaggedTensor", "constant"]
