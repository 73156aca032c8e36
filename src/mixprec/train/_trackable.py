"""The object graph of a checkpoint: each object's named children as tf-keras 2.21 names
them (``layer_with_weights-0``, ``kernel``, ``_variables/3``, ``loss_scale``...) and the
breadth-first walk that gives every variable its key. An object plugs in by defining
``_trackable_children()`` -> [(name, child)]; a leaf that is not a Variable defines
``_checkpoint_value()``/``_restore_value(array)``. Reads objects only, never assigns."""

from mixprec._variable import Variable

__all__ = ["children", "walk", "is_leaf", "ListNode"]


class ListNode:
    """A list of trackables (tf's ListWrapper): children named "0", "1", ..."""

    __slots__ = ("items",)

    def __init__(self, items):
        self.items = list(items)

    def _trackable_children(self):
        return [(str(i), x) for i, x in enumerate(self.items)]


class _Empty:
    """A node without children or values (tf-keras' ``_index_dict``)."""

    def _trackable_children(self):
        return []


class _LossScaleNode:
    __slots__ = ("scale",)

    def __init__(self, scale):
        self.scale = scale

    def _trackable_children(self):
        variables = getattr(self.scale, "variables", None) or []
        if len(variables) < 2:
            return []
        return [("current_loss_scale", variables[0]), ("good_steps", variables[1])]


def is_leaf(obj):
    """True for objects saved as one value (``VARIABLE_VALUE``)."""
    return isinstance(obj, Variable) or hasattr(obj, "_checkpoint_value")


def _is_trackable(obj):
    from mixprec.keras.engine.base_layer import Layer
    from mixprec.keras.metrics import Metric
    from mixprec.keras.mixed_precision import loss_scale_optimizer as lso
    from mixprec.keras.optimizers.optimizer import _BaseOptimizer as Optimizer

    return is_leaf(obj) or isinstance(obj, (Layer, Metric, Optimizer,
                                            lso._LossScaleOptimizerBase)) \
        or _has_own_children(obj)


def _has_own_children(obj):
    return callable(getattr(type(obj), "_trackable_children", None))


def _attribute_children(obj, skip=()):
    """Public attributes holding trackables (lists/tuples/dicts of them as list nodes)."""
    out = []
    for name, value in list(vars(obj).items()):
        if name.startswith("_") or name in skip or value is None:
            continue
        if isinstance(value, (list, tuple)):
            items = [v for v in value if _is_trackable(v)]
            if items and len(items) == len(value):
                out.append((name, ListNode(items)))
        elif isinstance(value, dict):
            continue
        elif _is_trackable(value) and value is not obj:
            out.append((name, value))
    return out


def _weight_name(layer, var):
    name = var.name.split(":")[0]
    prefix = layer.name + "/"
    if name.startswith(prefix):
        return name[len(prefix):]
    return name.rsplit("/", 1)[-1]


def _layer_children(layer):
    out, seen = [], set()
    for v in list(layer._trainable_weights) + list(layer._non_trainable_weights):
        n = _weight_name(layer, v)
        if n not in seen:
            seen.add(n)
            out.append((n, v))
    for name, child in _attribute_children(layer):
        if name not in seen:
            seen.add(name)
            out.append((name, child))
    return out


def _model_children(model):
    from mixprec.keras.engine.sequential import Sequential

    out = []
    if getattr(model, "_is_graph_network", False) or isinstance(model, Sequential):
        weighted = 0
        for i, layer in enumerate(model.layers):
            if layer.weights:
                out.append(("layer_with_weights-%d" % weighted, layer))
                weighted += 1
            out.append(("layer-%d" % i, layer))
        own = [(_weight_name(model, v), v)
               for v in list(model._trainable_weights) + list(model._non_trainable_weights)]
        return out + own + [(n, c) for n, c in _attribute_children(model)
                            if not isinstance(c, ListNode) and n not in ("layers",)
                            and not _is_layer(c)]
    return _layer_children(model)


def _is_layer(obj):
    from mixprec.keras.engine.base_layer import Layer

    return isinstance(obj, Layer)


# tf-keras 2.21 optimizers' slot lists: (tf-keras attribute, mixprec slot name)
_TF_SLOT_LISTS = {
    "Adam": (("_momentums", "m"), ("_velocities", "v"), ("_velocity_hats", "vhat")),
    "AdamW": (("_momentums", "m"), ("_velocities", "v"), ("_velocity_hats", "vhat")),
    "SGD": (("momentums", "momentum"),),
    "RMSprop": (("_velocities", "rms"), ("_momentums", "momentum"),
                ("_average_gradients", "mg")),
    "Adagrad": (("_accumulators", "accumulator"),),
    "Adadelta": (("_accumulated_grads", "accumulated_grad"),
                 ("_accumulated_delta_vars", "accumulated_delta_var")),
    "Adamax": (("_m", "m"), ("_u", "u")),
    "Nadam": (("_momentums", "m"), ("_velocities", "v")),
    "Ftrl": (("_accumulators", "accumulator"), ("_linears", "linear")),
    "Lion": (("momentums", "m"),),
}


def tf_slot_order(opt):
    """[(variable, slot name, slot variable)] in the order tf-keras' ``_variables`` lists
    them after ``iterations``: the optimizer's ``variables`` order (its build loops: Adam
    builds m and v per variable in one loop and vhat after all of them, RMSprop one slot
    kind after the other, Nadam, Adamax, Adadelta and Ftrl their slots per variable)."""
    names = list(opt._slot_names_used())
    owner = {id(s): (v, n) for v in opt._vars for n, s in zip(names, opt._slots[v._id])}
    return [owner[id(s)] + (s,) for s in opt.variables if id(s) in owner]


class _ZeroSlot:
    """tf-keras' SGD keeps a momentum slot ``m`` even with momentum 0 (always zeros);
    mixprec's does not. This leaf stands in for it, so checkpoints match both ways: it
    saves zeros and takes (ignores) a restored value of the right shape."""

    def __init__(self, var):
        import numpy as np

        self.name = "m/" + var.name.split(":")[0]
        self._dtype = np.float64 if var.true_dtype.name == "float64" else np.float32
        self._shape = tuple(var.shape)

    def _checkpoint_value(self):
        import numpy as np

        return np.zeros(self._shape, self._dtype)

    def _restore_value(self, value):
        pass


def _zero_slots(opt):
    cache = opt.__dict__.setdefault("_checkpoint_zero_slots", {})
    out = []
    for v in opt._vars:
        if v._id not in cache:
            cache[v._id] = _ZeroSlot(v)
        out.append((v, "momentum", cache[v._id]))
    return out


class _HyperLeaf:
    """An OptimizerV2 hyperparameter variable (a float32 scalar, e.g. 'decay', 'beta_1') for
    a value mixprec keeps as a number: saves it, and sets it back when restored."""

    def __init__(self, opt, key):
        self.opt, self.key = opt, key
        self.name = "%s/%s" % (opt._name, key)

    def _checkpoint_value(self):
        import numpy as np

        if self.key == "decay":
            return np.float32(self.opt._initial_decay)
        return np.float32(getattr(self.opt, self.key))

    def _restore_value(self, value):
        import numpy as np

        if np.float32(value) == self._checkpoint_value():
            return  # the same float32: keep the number given (the config shows it)
        if self.key == "decay":
            self.opt._initial_decay = float(value)
        else:
            setattr(self.opt, self.key, float(value))


def _legacy_children(opt, extra=()):
    """OptimizerV2's checkpoint children: 'iter', its hyperparameter variables in sorted
    order (a schedule has none), the legacy Nadam's 'momentum_cache'; the slots are not
    children but the optimizer node's slot_variables (legacy_slot_variables)."""
    from mixprec.keras.optimizers import schedules

    cache = opt.__dict__.setdefault("_checkpoint_hyper_leaves", {})
    out = [("iter", opt._iterations)]
    for key in sorted(opt._CKPT_HYPERS):
        value = opt.__dict__.get("_hyper", {}).get(key)
        if isinstance(value, schedules.LearningRateSchedule):
            continue
        if isinstance(value, Variable):
            out.append((key, value))
            continue
        if key not in cache:
            cache[key] = _HyperLeaf(opt, key)
        out.append((key, cache[key]))
    out.extend(("momentum_cache", v) for v in opt._extra_variables())
    out.extend(extra)
    return out


def legacy_slot_variables(objects, paths, edges):
    """Adds the slot variables of every legacy optimizer in ``objects`` (as TensorFlow:
    by slot name, then by the original variable's node order) as extra nodes after the
    others, keyed '<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot>'; returns
    {optimizer node: [(original node, slot name, slot node)]}."""
    from mixprec.keras.mixed_precision import loss_scale_optimizer as lso

    refs = {}
    n = len(objects)
    for i in range(n):
        opt = objects[i]
        if isinstance(opt, lso._LossScaleOptimizerBase):
            opt = opt._optimizer
        if not getattr(opt, "_IS_LEGACY", False) or not hasattr(opt, "_slots"):
            continue
        names = list(opt._slot_names_used())
        for slot_name in names:
            for j in range(n):
                var = objects[j]
                if not isinstance(var, Variable) or var._id not in opt._slots:
                    continue
                slot = opt._slots[var._id][names.index(slot_name)]
                sid = len(objects)
                objects.append(slot)
                paths[sid] = "%s/.OPTIMIZER_SLOT/%s/%s" % (paths[j], paths[i], _esc(slot_name))
                edges.append([])
                refs.setdefault(i, []).append((j, slot_name, sid))
    return refs


def _optimizer_children(opt, extra=()):
    from mixprec.keras.optimizers import schedules

    if opt._IS_LEGACY:
        return _legacy_children(opt, extra)

    slots = tf_slot_order(opt)
    if type(opt).__name__ == "SGD" and not opt._slot_names_used():
        slots = _zero_slots(opt)
    out = [("_variables", ListNode([opt._iterations] + [s for _, _, s in slots])),
           ("_iterations", opt._iterations)]
    lr = opt._hyper.get("learning_rate")
    if isinstance(lr, Variable):
        out.append(("_learning_rate", lr))
    elif isinstance(lr, schedules.LearningRateSchedule) and _has_own_children(lr):
        out.append(("_learning_rate", lr))
    out.extend(extra)  # a LossScaleOptimizer's loss_scale comes here, as in tf-keras
    out.append(("_index_dict", _Empty()))
    u_product = opt.__dict__.get("_u_product")
    if u_product is not None and not opt._IS_LEGACY:
        out.append(("_u_product", u_product))  # Nadam's attribute variable
    lists = _TF_SLOT_LISTS.get(type(opt).__name__)
    names = list(dict.fromkeys(n for _, n, _ in slots))
    if lists is None:
        lists = tuple(("_" + n, n) for n in names)
    for attr, slot in lists:
        if slot in names:
            out.append((attr, ListNode([s for _, n, s in slots if n == slot])))
    return out


def children(obj):
    """[(edge name, child)] of ``obj`` in dependency order (empty for leaves)."""
    from mixprec.keras.engine.training import Model
    from mixprec.keras.metrics import Metric
    from mixprec.keras.mixed_precision import loss_scale_optimizer as lso
    from mixprec.keras.optimizers.optimizer import _BaseOptimizer as Optimizer

    if _has_own_children(obj):
        return list(obj._trackable_children())
    if is_leaf(obj):
        return []
    if isinstance(obj, lso._LossScaleOptimizerBase):
        inner = obj._optimizer
        extra = [("loss_scale", _LossScaleNode(obj._loss_scale_obj))]
        return _optimizer_children(inner, extra)
    if isinstance(obj, Optimizer):
        return _optimizer_children(obj)
    if isinstance(obj, Model):
        return _model_children(obj)
    if _is_layer(obj):
        return _layer_children(obj)
    if isinstance(obj, Metric):
        return [(_weight_name(obj, v), v) for v in obj.variables]
    raise TypeError("%r is not trackable: a checkpoint holds variables, layers, models, "
                    "optimizers and metrics" % (obj,))


def walk(root):
    """Breadth-first walk from ``root``: ([object], {id(object): node index},
    [[(child index, edge name)]], {node index: path}). An object reachable by several
    paths keeps the first (the shortest), as TensorFlow."""
    objects, index, edges, paths = [root], {id(root): 0}, [], {0: ""}
    i = 0
    while i < len(objects):
        obj = objects[i]
        mine = []
        for name, child in children(obj):
            if id(child) not in index:
                index[id(child)] = len(objects)
                paths[len(objects)] = (paths[i] + "/" if paths[i] else "") + _esc(name)
                objects.append(child)
            mine.append((index[id(child)], name))
        edges.append(mine)
        i += 1
    return objects, index, edges, paths


def _esc(name):
    return name.replace(".", "..").replace("/", ".S")
