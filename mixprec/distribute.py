"""``tf.distribute`` (placeholder: single replica). MirroredStrategy arrives with the
distributed-training issue; until then everything runs as one replica."""

__all__ = ["get_replica_context_num_replicas"]


def get_replica_context_num_replicas():
    """Replicas taking part in the current step (1 outside a strategy)."""
    return 1
