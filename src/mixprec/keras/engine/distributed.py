"""Model.fit/evaluate/predict under a tf.distribute strategy: each batch is split over the
replicas (TensorFlow's rebatching rule), the step runs once per replica through
``strategy.run``, the loss that is differentiated is divided by the replica count (tf-keras'
``scale_loss_for_distribution``) so summed gradients equal the global batch's, and the logs
are read from the metrics afterwards (they aggregate over replicas). Bookkeeping only."""

from mixprec import _core, _nest

_EMPTY = object()


def strategy_of(model):
    """The strategy the model is trained under: the one in scope at compile (tf-keras
    uses the one its variables were created in), when it has several replicas."""
    s = getattr(model, "_distribute_strategy", None)
    if s is None or s.num_replicas_in_sync <= 1:
        return None
    return s


def record_strategy(model):
    from mixprec.distribute import _context

    s = _context._variable_strategy()
    if s is None:
        from mixprec.keras.engine.base_layer import Layer

        for w in Layer.weights.fget(model):  # an unbuilt Sequential: none (no ValueError)
            s = w.__dict__.get("_distribute_strategy")
            if s is not None:
                break
    if s is None:  # the strategy the model was created under (tf-keras)
        s = model.__dict__.get("_distribute_strategy")
    model._distribute_strategy = s


def scale_loss_for_distribution(loss):
    """``loss / num_replicas_in_sync`` inside a replica of a multi-replica strategy."""
    from mixprec.distribute import _context

    ctx = _context._current_replica_context()
    if ctx is None or ctx.num_replicas_in_sync <= 1:
        return loss
    return loss / _core.cast(_core.constant(ctx.num_replicas_in_sync), loss.dtype)


def _rows(batch):
    for t in _nest.flatten(batch):
        if t is not None and hasattr(t, "shape") and len(t.shape):
            return int(t.shape[0])
    return 0


def _split_batch(strategy, batch):
    from mixprec.distribute.input_lib import batch_sizes
    from mixprec.distribute.values import PerReplica

    e = strategy.extended
    n = strategy.num_replicas_in_sync
    sizes = batch_sizes(_rows(batch), n, False)
    lo = e._worker_index * e._num_local
    starts = [sum(sizes[:i]) for i in range(n)]
    mine = range(lo, lo + e._num_local)

    def cut(t):
        if t is None or not hasattr(t, "shape") or not len(t.shape):
            return t
        parts = [t[starts[i]:starts[i] + sizes[i]] for i in mine]
        return parts[0] if len(parts) == 1 else PerReplica(parts)

    return _nest.map_structure(cut, batch), [sizes[i] for i in mine]


def _quiet(model):
    """tf-keras runs its steps in a tf.function, so no eager-``run`` warning, unless
    ``run_eagerly``."""
    import contextlib

    from mixprec.distribute import _strategy
    if getattr(model, "run_eagerly", False):
        return contextlib.nullcontext()
    return _strategy.quiet_eager_run()


def _logs(model):
    return {m.name: m.result() for m in model.metrics}


def train_step(model, batch):
    strategy = strategy_of(model)
    if strategy is None:
        return model.train_step(batch)
    per_replica, _ = _split_batch(strategy, batch)

    def step(data):
        if _rows(data) == 0:  # no rows for this replica: join the gradient sum with zeros
            return _empty_train_step(model, data)
        return model.train_step(data)

    with _quiet(model):
        strategy.run(step, args=(per_replica,))
    return _logs(model)


def _empty_train_step(model, data):
    from mixprec._tape import GradientTape
    from mixprec.keras.engine.training import _unpack

    variables = model.trainable_variables
    # synchronized batch norm sums statistics over the replicas, forward and backward: a
    # replica without rows must still take part, so it runs the model on its empty batch
    # (zero rows add nothing; the layer skips its moving-statistics update), as tf-keras
    sync = any(getattr(layer, "synchronized", False) for layer in model._flatten_layers())
    with GradientTape() as tape:
        loss = None
        if sync:
            out = model(_unpack(data)[0], training=True)
            for t in _nest.flatten(out):
                term = _core.reduce_sum(_core.cast(t, "float32")) * 0.0
                loss = term if loss is None else loss + term
        for v in variables:
            term = _core.reduce_sum(_core.cast(v.value(), "float32")) * 0.0
            loss = term if loss is None else loss + term
    model.optimizer.minimize(loss, variables, tape=tape)
    return None


def test_step(model, batch):
    strategy = strategy_of(model)
    if strategy is None:
        return model.test_step(batch)
    per_replica, _ = _split_batch(strategy, batch)
    with _quiet(model):
        strategy.run(lambda data: model.test_step(data) if _rows(data) else None,
                     args=(per_replica,))
    return _logs(model)


def predict_step(model, batch):
    strategy = strategy_of(model)
    if strategy is None:
        return model.predict_step(batch)
    per_replica, sizes = _split_batch(strategy, batch)
    with _quiet(model):
        out = strategy.run(lambda data: model.predict_step(data) if _rows(data) else _EMPTY,
                           args=(per_replica,))
    parts = [p for p in strategy.experimental_local_results(out) if p is not _EMPTY]
    if strategy.extended._num_workers > 1:
        # every worker returns the whole batch's predictions (tf-keras' multi-worker concat):
        # worker k holds rows after worker k - 1's, so gathering in rank order keeps the order
        if not parts:
            raise NotImplementedError("predict under MultiWorkerMirroredStrategy with a batch "
                                      "that leaves a worker without rows")
        local = parts[0]
        flat = _nest.flatten(local)
        gathered = [strategy.extended._cross_worker_gather(t, 0) for t in flat]
        return _nest.pack_sequence_as(local, gathered) if _nest.is_nested(local) else gathered[0]
    if len(parts) == 1:
        return parts[0]
    flat = [_nest.flatten(p) for p in parts]
    mirrors = strategy.extended._mirrors
    if mirrors is not None:  # one part per GPU: joined on the first
        from mixprec.distribute import _gpu_mirror

        flat = [[_gpu_mirror.to_device(t, mirrors.specs[0]) for t in f] for f in flat]
    joined = [_core.concat(list(col), 0) for col in zip(*flat)]
    return _nest.pack_sequence_as(parts[0], joined) if _nest.is_nested(parts[0]) else joined[0]
