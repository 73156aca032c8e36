"""Which strategy and which replica a thread is in: the scope stack, replica contexts,
``merge_call`` and ``ReduceOp``. Per thread, as TensorFlow's: a replica thread starts in its
replica context, the caller's thread stays in cross-replica context. No numbers here."""

import enum
import threading

_tls = threading.local()


class ReduceOp(enum.Enum):
    """How values of the replicas combine: ``SUM`` or ``MEAN``."""

    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        name = getattr(aggregation, "name", str(aggregation)).upper()
        if name not in ("SUM", "MEAN"):
            raise ValueError("Could not convert from `tf.VariableAggregation` %s to "
                             "`tf.distribute.ReduceOp` type" % (aggregation,))
        return ReduceOp[name]


def _as_reduce_op(op):
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str) and op.upper() in ("SUM", "MEAN"):
        return ReduceOp[op.upper()]
    raise ValueError("%r is not a valid ReduceOp" % (op,))  # TensorFlow's words


def _stack():
    s = getattr(_tls, "stack", None)
    if s is None:
        s = _tls.stack = []
    return s


def _current_scope_strategy():
    """The strategy whose scope() this thread is in (None outside any)."""
    s = getattr(_tls, "stack", None)
    return s[-1] if s else None


def _variable_strategy():
    """The non-default strategy a variable created now belongs to, or None."""
    ctx = getattr(_tls, "replica", None)
    s = ctx.strategy if ctx is not None else _current_scope_strategy()
    if s is None or getattr(s, "_is_default", False):
        return None
    return s


def _current_replica_context():
    return getattr(_tls, "replica", None)


def _set_replica_context(ctx):
    prev = getattr(_tls, "replica", None)
    _tls.replica = ctx
    return prev


class ReplicaContext:
    """What a function run by ``strategy.run`` sees: its replica id, the replica count, the
    collectives (``all_reduce``) and ``merge_call`` into cross-replica context."""

    def __init__(self, strategy, replica_id_in_sync_group, run=None):
        self._strategy = strategy
        self._replica_id = replica_id_in_sync_group
        self._run = run  # the strategy's current run (its barrier and communicator)

    @property
    def strategy(self):
        return self._strategy

    @property
    def replica_id_in_sync_group(self):
        """This replica's index among all replicas (all workers), as an int32 scalar."""
        from mixprec import _core

        return _core.constant(self._strategy.extended._global_replica_id(self._replica_id),
                              "int32")

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def devices(self):
        return (self._strategy.extended.worker_devices[self._replica_id],)

    def all_reduce(self, reduce_op, value, options=None):
        """``value`` (a nest of tensors) summed or averaged over every replica; each replica
        gets the same result."""
        return self._strategy.extended._replica_all_reduce(
            self, _as_reduce_op(reduce_op), value)

    def all_gather(self, value, axis, options=None):
        return self._strategy.extended._replica_all_gather(self, value, axis)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Runs ``merge_fn(strategy, *args, **kwargs)`` once, in cross-replica context, with
        each argument gathered from every replica (a PerReplica where they differ); every
        replica gets the result (its own component of a distributed result)."""
        return self._strategy.extended._merge_call(self, merge_fn, tuple(args), dict(kwargs or {}))

    def __repr__(self):
        return "<ReplicaContext replica %d of %d>" % (self._replica_id, self.num_replicas_in_sync)


class _DefaultReplicaContext(ReplicaContext):
    """The replica context outside any strategy (TensorFlow's class of that name): its
    replica id is the Python int 0 (inside the default strategy's ``run`` it is a tensor)."""

    @property
    def replica_id_in_sync_group(self):
        return 0


def get_strategy():
    """The strategy of the enclosing ``scope()`` (or of the replica being run); the default
    (single-replica) strategy otherwise."""
    ctx = _current_replica_context()
    if ctx is not None:
        return ctx.strategy
    s = _current_scope_strategy()
    if s is not None:
        return s
    from mixprec.distribute._strategy import _default_strategy

    return _default_strategy()


def has_strategy():
    """Whether a strategy other than the default is in scope."""
    from mixprec.distribute._strategy import _default_strategy

    return get_strategy() is not _default_strategy()


def in_cross_replica_context():
    """True in a strategy's scope outside ``strategy.run`` (and inside ``merge_call``)."""
    s = _current_scope_strategy()
    return _current_replica_context() is None and s is not None and \
        not getattr(s, "_is_default", False)


def get_replica_context():
    """The replica context: inside ``strategy.run``; outside any strategy scope, the default
    strategy's single replica; None in cross-replica context."""
    ctx = _current_replica_context()
    if ctx is not None:
        return ctx
    if in_cross_replica_context():
        return None
    from mixprec.distribute._strategy import _default_strategy

    return _DefaultReplicaContext(_default_strategy(), 0)


def get_cross_replica_context():
    if _current_replica_context() is not None:
        return None
    return get_strategy()


def _num_replicas_in_sync():
    """Replicas of the current replica context, else of the current strategy, else 1."""
    ctx = _current_replica_context()
    if ctx is not None:
        return ctx.num_replicas_in_sync
    return get_strategy().num_replicas_in_sync
