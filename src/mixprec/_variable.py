"""``mixprec.Variable`` (tf.Variable): TensorFlow's constructor signature, names, repr.

The variable itself is a C object (csrc/variable.c, csrc/python/variable_type.c): reads,
copy-on-write assignment, the autocast rule and the tape hooks all live there. This module
only adds what a user types and sees.
"""

import enum
import sys
import weakref

from mixprec import _core, _scopes
from mixprec._dtypes import as_dtype

__all__ = ["Variable", "VariableAggregation", "VariableSynchronization", "autocast_scope",
           "lookup"]

Variable = _core.Variable
_registry = weakref.WeakValueDictionary()  # id -> Variable (GradientTape.watched_variables)


class VariableAggregation(enum.Enum):
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


class VariableSynchronization(enum.Enum):
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


def _init(self, initial_value=None, trainable=None, validate_shape=True, caching_device=None,
          name=None, variable_def=None, dtype=None, import_scope=None, constraint=None,
          synchronization=VariableSynchronization.AUTO, aggregation=VariableAggregation.NONE,
          shape=None, experimental_enable_variable_lifting=True):
    if initial_value is None:
        raise ValueError("The `initial_value` arg (None) must be specified.")
    if callable(initial_value) and not isinstance(initial_value, (_core.Tensor, _core.Variable)):
        initial_value = initial_value()
    if isinstance(initial_value, _core.Variable):
        initial_value = initial_value._peek()
    if dtype is not None:
        dtype = as_dtype(dtype)
        if isinstance(initial_value, _core.Tensor) and initial_value.dtype != dtype:
            raise ValueError(
                "Tensor conversion requested dtype %s for Tensor with dtype %s: %r"
                % (dtype.name, initial_value.dtype.name, initial_value))
    value = _core.convert_to_tensor(initial_value, dtype)
    if synchronization == VariableSynchronization.ON_READ:
        trainable = False if trainable is None else trainable
        if trainable:
            raise ValueError("Synchronization value can be set to VariableSynchronization.ON_READ "
                             "only for non-trainable variables.")
    self._initialize(value, True if trainable is None else bool(trainable))
    self._name = _scopes.current_prefix() + (
        "Variable" if name is None else str(name).split(":")[0]) + ":0"  # tf.name_scope's prefix
    self._constraint = constraint
    self._synchronization = synchronization
    self._aggregation = aggregation
    _registry[self._id] = self
    ctx_mod = sys.modules.get("mixprec.distribute._context")
    if ctx_mod is not None:  # created in a strategy's scope or replica: the strategy's
        strategy = ctx_mod._variable_strategy()
        if strategy is not None:
            self._distribute_strategy = strategy
            hook = getattr(strategy, "_on_variable_created", None)
            if hook is not None:
                hook(self)


def lookup(var_id):
    """The live Variable with this id, or None."""
    return _registry.get(var_id)


def _name(self):
    return self.__dict__.get("_name", "Variable:0")


def _repr(self):
    from mixprec._tensor import _numpy_text

    value = self._peek()
    text = _numpy_text(value, True)  # TensorFlow's numpy_text, as a tensor's repr
    if self._autocast:
        cast_to = _core.autocast(None)
        _core.autocast(cast_to)
        return "<AutoCastVariable %r shape=%s dtype=%s dtype_to_cast_to=%s, numpy=%s>" % (
            self.name, value.shape, self.true_dtype.name,
            (cast_to or self.true_dtype).name, text)
    return "<tf.Variable %r shape=%s dtype=%s, numpy=%s>" % (
        self.name, value.shape, self.true_dtype.name, text)


def _mirror(self):
    """A mirrored variable (one copy per GPU) assigned outside a replica: every copy
    follows (TensorFlow's MirroredVariable)."""
    if "_mirror_copies" in self.__dict__:
        from mixprec.distribute import _gpu_mirror

        _gpu_mirror.broadcast_assign(self)


def _distributed_update(self, kind, value):
    """An update of a variable created under a strategy, TensorFlow's aggregation rules
    (its replicas here share one storage): in a replica, a variable with SUM/MEAN/
    ONLY_FIRST_REPLICA aggregation is updated once, in a merge_call, with the replicas'
    values reduced; outside its replicas, ``assign_add``/``assign_sub`` of an ON_READ SUM
    variable raises (TensorFlow's SyncOnReadVariable). False: the plain update applies."""
    strategy = self.__dict__.get("_distribute_strategy")
    if strategy is None:
        return False
    agg = self.__dict__.get("_aggregation", VariableAggregation.NONE)
    ctx_mod = sys.modules["mixprec.distribute._context"]
    ctx = ctx_mod._current_replica_context()
    in_replica = ctx is not None and ctx.strategy is strategy
    if self.__dict__.get("_synchronization") == VariableSynchronization.ON_READ:
        if not in_replica and agg == VariableAggregation.SUM and kind != "assign":
            raise ValueError("SyncOnReadVariable does not support `%s` in cross-replica "
                             "context when aggregation is set to "
                             "`tf.VariableAggregation.SUM`." % kind)
        return False
    if not in_replica or agg == VariableAggregation.NONE or strategy.num_replicas_in_sync == 1:
        return False

    def merge(strat, v):
        if agg == VariableAggregation.ONLY_FIRST_REPLICA:
            v = strat.experimental_local_results(v)[0]
        else:
            v = strat.reduce(agg.name, v, axis=None)
        getattr(self, "_" + kind)(v)
        _mirror(self)
    ctx.merge_call(merge, args=(value,))
    return True


def _assign(self, value, use_locking=None, name=None, read_value=True):
    if not _distributed_update(self, "assign", value):
        self._assign(value)
        _mirror(self)
    return self if read_value else None


def _assign_add(self, delta, use_locking=None, name=None, read_value=True):
    if not _distributed_update(self, "assign_add", delta):
        self._assign_add(delta)
        _mirror(self)
    return self if read_value else None


def _assign_sub(self, delta, use_locking=None, name=None, read_value=True):
    if not _distributed_update(self, "assign_sub", delta):
        self._assign_sub(delta)
        _mirror(self)
    return self if read_value else None


class _VariableRef:
    __slots__ = ("_v",)

    def __init__(self, v):
        self._v = v

    def deref(self):
        return self._v

    def __hash__(self):
        return id(self._v)

    def __eq__(self, other):
        return isinstance(other, _VariableRef) and other._v is self._v


def _deepcopy(self, memo):
    """A new variable holding a copy of the value (TensorFlow's eager ``__deepcopy__``):
    the stored dtype, trainable, name, constraint, synchronization, aggregation and
    the autocast flag carry over."""
    copied = Variable(_core.identity(self._peek()), trainable=self.trainable, name=self.name,
                      constraint=self.constraint, synchronization=self.synchronization,
                      aggregation=self.aggregation)
    copied._autocast = self._autocast
    memo[id(self)] = copied
    return copied


def _array(self, dtype=None, copy=None):
    a = self.numpy()
    return a if dtype is None else a.astype(dtype)


Variable.__init__ = _init
Variable.__repr__ = _repr
Variable.__str__ = _repr
Variable.name = property(_name)
Variable.constraint = property(lambda self: self.__dict__.get("_constraint"))
Variable.aggregation = property(
    lambda self: self.__dict__.get("_aggregation", VariableAggregation.NONE))
Variable.synchronization = property(
    lambda self: self.__dict__.get("_synchronization", VariableSynchronization.AUTO))
Variable.assign = _assign


def _values(self):
    """The variable's copy on each replica of the strategy it was created under
    (tf.distribute's MirroredVariable.values); the replicas of one host share one storage."""
    strategy = self.__dict__.get("_distribute_strategy")
    if strategy is None:
        raise AttributeError("'Variable' object has no attribute 'values' (it was not created "
                             "in a tf.distribute strategy's scope)")
    return strategy.experimental_local_results(self)


Variable.values = property(_values)
Variable.assign_add = _assign_add
Variable.assign_sub = _assign_sub
Variable.ref = lambda self: _VariableRef(self)
Variable.experimental_ref = Variable.ref
Variable.get_shape = lambda self: self.shape
Variable.__array__ = _array
Variable.__array_priority__ = 100
Variable.__format__ = lambda self, spec: format(self._peek(), spec)
# NOTE: through a read, as the C slots of the other operators (& and | included)
Variable.__xor__ = lambda self, other: self.value() ^ other
Variable.__rxor__ = lambda self, other: other ^ self.value()
Variable.__invert__ = lambda self: ~self.value()
Variable.__copy__ = lambda self: self  # TensorFlow's: a shallow copy is the same variable
Variable.__deepcopy__ = _deepcopy
Variable.__module__ = "mixprec"


class autocast_scope:
    """Within this scope, reads of autocast variables (layer weights under a mixed policy)
    return ``dtype``; ``None`` turns autocasting off. Restores the previous scope on exit.
    Layers enter it around ``call``; it is per thread, like TensorFlow's."""

    __slots__ = ("_dtype", "_prev")

    def __init__(self, dtype):
        self._dtype = None if dtype is None else as_dtype(dtype)

    def __enter__(self):
        self._prev = _core.autocast(self._dtype)
        return self

    def __exit__(self, *exc):
        _core.autocast(self._prev)
        return False
