"""``tf.config.threading``: the host thread count (mixprec's pool and OpenBLAS)."""

from mixprec import _core

__all__ = ["get_intra_op_parallelism_threads", "set_intra_op_parallelism_threads",
           "get_inter_op_parallelism_threads", "set_inter_op_parallelism_threads"]


def get_intra_op_parallelism_threads():
    return _core.get_num_threads()


def set_intra_op_parallelism_threads(num_threads):
    """0 keeps the default (one thread per core)."""
    if num_threads:
        _core.set_num_threads(int(num_threads))


def get_inter_op_parallelism_threads():
    return 1


def set_inter_op_parallelism_threads(num_threads):
    """Ops run one after another in mixprec; accepted for compatibility."""
