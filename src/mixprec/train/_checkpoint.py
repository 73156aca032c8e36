"""``tf.train.Checkpoint``: save/write/read/restore of an object graph in TensorFlow's
format, the load statuses, and deferred restoration (values kept for variables not created
yet). Restores are all-or-nothing: every value is read, checksummed and checked before the
first assignment. Formats live in _bundle.py/_object_graph.py, child naming in
_trackable.py, the ``checkpoint`` state file in _management.py."""

import atexit
import os
import weakref

import numpy as np

from mixprec import errors
from mixprec._dtypes import int64
from mixprec._variable import Variable
from mixprec.train import _bundle, _object_graph, _trackable
from mixprec.train._object_graph import OBJECT_GRAPH_KEY, VARIABLE_VALUE

__all__ = ["Checkpoint", "save_object", "restore_object"]


# ------------------------------------------------------------------ saving


def _leaf_value(obj):
    if isinstance(obj, Variable):
        # a host tensor's own buffer, not a copy (its storage is copy-on-write, so later
        # assignments do not touch it); bfloat16 and GPU tensors are copied by numpy()
        try:
            return np.asarray(memoryview(obj._peek()))
        except (BufferError, TypeError, AttributeError):
            return obj.numpy()
    return np.asarray(obj._checkpoint_value())


def _full_name(obj):
    name = getattr(obj, "name", "")
    return name.split(":")[0] if isinstance(name, str) else ""


def serialize(root):
    """[(key, value)] of everything reachable from ``root``, the object graph last."""
    objects, _, edges, paths = _trackable.walk(root)
    slot_refs = _trackable.legacy_slot_variables(objects, paths, edges)
    nodes, items = [], []
    for i, obj in enumerate(objects):
        n = _object_graph.Node()
        n.children = list(edges[i])
        n.slot_variables = list(slot_refs.get(i, ()))
        if _trackable.is_leaf(obj):
            key = _object_graph.attribute_key(paths[i])
            n.attributes.append((VARIABLE_VALUE, _full_name(obj), key))
            items.append((key, _leaf_value(obj)))
        nodes.append(n)
    # has_checkpoint_values: the node or a descendant holds a value
    has = [bool(n.attributes) for n in nodes]
    changed = True
    while changed:
        changed = False
        for i, n in enumerate(nodes):
            if not has[i] and any(has[c] for c, _ in n.children):
                has[i] = changed = True
    for n, h in zip(nodes, has):
        n.has_values = h
    items.append((OBJECT_GRAPH_KEY, _object_graph.encode_graph(nodes)))
    return items


def save_object(root, prefix):
    """Writes the bundle ``prefix`` for the graph of ``root``; returns ``prefix``."""
    prefix = os.fspath(prefix)
    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    _bundle.write_bundle(prefix, serialize(root))
    return prefix


# ------------------------------------------------------------------ restoring


class _Restore:
    """One restore of a checkpoint into the graph of ``root``: the checkpoint's graph, the
    values not assigned yet (node id -> (key, array)), and which Python object each node
    was bound to. Kept alive (module list) while values wait for their variables."""

    def __init__(self, root, prefix, graph, values):
        self.root = weakref.ref(root)
        # NOTE: the values wait on the objects, not on the Checkpoint: a status and its
        # Checkpoint are often dropped at once (``Checkpoint(model=m).restore(p)``), so the
        # root's children are kept weakly and stand in for a root that is gone.
        self.anchors = []
        for name, child in _trackable.children(root):
            try:
                self.anchors.append((name, weakref.ref(child)))
            except TypeError:
                self.anchors.append((name, lambda c=child: c))
        self.prefix = prefix
        self.graph = graph
        self.values = values           # node id -> (key, value) still to assign
        self.bound = {}                # node id -> object (strong refs to leaves only)
        self.consumed = set()          # node ids whose value was assigned
        self.silenced = False          # status.expect_partial() was called
        # when the root and the objects it restores into are all gone, values still waiting
        # are reported, as TensorFlow's restore coordinator does when it is deleted
        me = weakref.ref(self)
        for obj in [root] + [ref() for _, ref in self.anchors]:
            try:
                weakref.finalize(obj, _on_deleted, me).atexit = False
            except TypeError:
                pass

    def alive(self):
        return self.root() is not None or any(ref() is not None for _, ref in self.anchors)

    def node_path(self, nid):
        """'(root).optimizer._variables.1': the node's path in the checkpoint's graph."""
        parent = {0: None}
        queue = [0]
        while queue and nid not in parent:
            n = queue.pop(0)
            for cid, name in self.graph[n].children:
                if cid not in parent:
                    parent[cid] = (n, name)
                    queue.append(cid)
        names = []
        while parent.get(nid) is not None:
            nid, name = parent[nid]
            names.append(name)
        return ".".join(["(root)"] + names[::-1])

    def warn_unrestored(self):
        """TensorFlow's warnings for values that were never assigned (once)."""
        if self.silenced or not self.values:
            return
        self.silenced = True
        from mixprec._logging import get_logger

        log = get_logger()
        log.warning("Detecting that an object or model or tf.train.Checkpoint is being deleted "
                    "with unrestored values. See the following logs for the specific values "
                    "in question. To silence these warnings, use `status.expect_partial()`. "
                    "See https://www.tensorflow.org/api_docs/python/tf/train/Checkpoint#restore"
                    "for details about the status object returned by the restore function.")
        for nid in sorted(self.values):
            log.warning("Value in checkpoint could not be found in the restored object: %s"
                        % self.node_path(nid))

    def match(self):
        """node id -> Python object, walking both graphs from the roots by edge name."""
        root = self.root()
        if root is None:
            root = _Anchors([(n, ref()) for n, ref in self.anchors if ref() is not None])
        matched = {0: root}
        queue = [0]
        while queue:
            nid = queue.pop(0)
            obj = matched[nid]
            if _trackable.is_leaf(obj):
                continue
            kids = {}
            for name, child in _trackable.children(obj):
                kids.setdefault(name, child)
            for cid, name in self.graph[nid].children:
                if cid in matched or name not in kids:
                    continue
                matched[cid] = kids[name]
                queue.append(cid)
        self._match_slots(matched)
        return matched

    def _match_slots(self, matched):
        """A legacy optimizer's slot nodes (its node's slot_variables) -> its slots of the
        matched original variables, where they exist (made later: restored then)."""
        from mixprec.keras.mixed_precision import loss_scale_optimizer as lso

        for nid, obj in list(matched.items()):
            refs = getattr(self.graph[nid], "slot_variables", None)
            if not refs:
                continue
            opt = obj._optimizer if isinstance(obj, lso._LossScaleOptimizerBase) else obj
            if not hasattr(opt, "_slots"):
                continue
            names = list(opt._slot_names_used())
            for orig, slot_name, sid in refs:
                var = matched.get(orig)
                if (sid in matched or not isinstance(var, Variable) or var._id not in opt._slots
                        or slot_name not in names):
                    continue
                matched[sid] = opt._slots[var._id][names.index(slot_name)]

    def pending_assignments(self, matched):
        """[(variable, value)] for matched leaves not assigned yet; a ValueError naming
        the file and key when a value does not fit its variable."""
        out = []
        for nid, obj in matched.items():
            if nid in self.consumed or nid not in self.values:
                continue
            if not _trackable.is_leaf(obj):
                continue
            key, value = self.values[nid]
            _check_fits(obj, value, key, self.prefix)
            out.append((nid, obj, value))
        return out

    def assign(self, todo):
        for nid, obj, value in todo:
            if isinstance(obj, Variable):
                obj.assign(value)
            else:
                obj._restore_value(value)
            self.consumed.add(nid)
            self.values.pop(nid, None)

    def sync(self):
        """Assigns the values whose variables exist now (deferred restoration)."""
        if not self.values:
            return
        self.assign(self.pending_assignments(self.match()))
        if self.values and self.root() is None:
            self._prune()

    def _prune(self):
        """With the root gone, only values under its live children can still be assigned:
        the others (e.g. an optimizer's, restored through ``Checkpoint(model=m)``) are
        dropped rather than kept as long as the model lives."""
        live = {n for n, ref in self.anchors if ref() is not None}
        reach = set()
        stack = [c for c, name in self.graph[0].children if name in live]
        while stack:
            nid = stack.pop()
            if nid in reach:
                continue
            reach.add(nid)
            stack.extend(c for c, _ in self.graph[nid].children)
        for nid in [n for n in self.values if n not in reach]:
            del self.values[nid]


class _Anchors:
    """Stands in for a restore's root object that no longer exists."""

    def __init__(self, children):
        self.kids = children

    def _trackable_children(self):
        return self.kids

    def alive(self):
        return bool(self.kids)


_ACTIVE = []  # _Restore objects with values waiting for variables


def _on_deleted(ref):
    r = ref()
    if r is None or r.alive():
        return
    r.warn_unrestored()
    if r in _ACTIVE:
        _ACTIVE.remove(r)


@atexit.register
def _warn_at_exit():
    # the objects are deleted with the interpreter: what still waits is reported
    for r in list(_ACTIVE):
        r.warn_unrestored()


def notify_created():
    """Called where variables come into being (Layer.add_weight, an optimizer creating its
    slots): assigns waiting checkpoint values to the variables that now exist."""
    if not _ACTIVE:
        return
    from mixprec._function import untraced
    # NOTE: in a tracing function these assignments initialise the new variables once (as
    # TensorFlow's init_scope); they must not become graph nodes replayed at every call
    with untraced():
        for r in list(_ACTIVE):
            if not r.values or not r.alive():
                r.warn_unrestored()
                _ACTIVE.remove(r)
                continue
            r.sync()
            if not r.values:
                _ACTIVE.remove(r)


def _np_dtype(obj):
    if isinstance(obj, Variable):
        return np.dtype(obj.true_dtype.as_numpy_dtype), tuple(obj.shape)
    v = np.asarray(obj._checkpoint_value())
    return v.dtype, v.shape


def _check_fits(obj, value, key, prefix):
    dtype, shape = _np_dtype(obj)
    vshape = np.shape(value)
    if tuple(vshape) != tuple(shape):
        raise ValueError("Received incompatible tensor with shape %s when attempting to restore "
                         "variable with shape %s and name %s (key %r in checkpoint %s)"
                         % (tuple(vshape), tuple(shape), _full_name(obj), key, prefix))
    vdtype = np.asarray(value).dtype
    if vdtype != dtype:
        # TensorFlow's RestoreV2 error: InvalidArgumentError
        raise errors.InvalidArgumentError(
            "tensor_name = %s; expected dtype %s does not equal original dtype %s "
            "(variable %s, checkpoint %s)" % (key, np.dtype(dtype).name, vdtype.name,
                                              _full_name(obj), prefix))


def restore_object(root, prefix, reader=None):
    """Restores the bundle ``prefix`` into the graph of ``root``; returns the _Restore.
    Everything is read and checked before the first assignment."""
    prefix = os.fspath(prefix)
    if os.path.isdir(prefix):
        # TensorFlow: DataLossError "Unable to open table file ...; Is a directory"
        raise errors.DataLossError(
            None, None, "Unable to open table file %s: %s; Is a directory. hint: pass a "
            "checkpoint prefix such as tf.train.latest_checkpoint(%r)" % (prefix, prefix, prefix))
    reader = reader or _bundle.BundleReader(prefix)
    if OBJECT_GRAPH_KEY not in reader.entries:
        raise ValueError("The checkpoint %s has no object graph (%s): it was not written by "
                         "tf.train.Checkpoint (name-based checkpoints are not supported)"
                         % (prefix, OBJECT_GRAPH_KEY))
    raw = reader.read(OBJECT_GRAPH_KEY)
    try:
        graph = _object_graph.decode_graph(raw if isinstance(raw, bytes) else bytes(raw))
    except ValueError as e:
        raise errors.DataLossError(None, None, "The object graph of checkpoint %s is corrupt: "
                                   "%s" % (prefix, e)) from None
    values = {}
    for nid, node in enumerate(graph):
        for name, _, key in node.attributes:
            if name != VARIABLE_VALUE:
                continue
            if key not in reader.entries:
                raise errors.NotFoundError(None, None, "Key %s not found in checkpoint %s"
                                           % (key, prefix))
            values[nid] = (key, reader.read(key))
    r = _Restore(root, prefix, graph, values)
    r.assign(r.pending_assignments(r.match()))
    # a newer restore into the same objects supersedes older waiting values (as TF's
    # restore uid): they would otherwise pile up, restore after restore
    mine = {id(ref()) for _, ref in r.anchors if ref() is not None}
    _ACTIVE[:] = [old for old in _ACTIVE
                  if not mine & {id(ref()) for _, ref in old.anchors if ref() is not None}]
    if r.values:
        _ACTIVE.append(r)
    return r


# ------------------------------------------------------------------ statuses


class CheckpointLoadStatus:
    """What ``Checkpoint.restore``/``read`` return (TensorFlow's CheckpointLoadStatus)."""

    def __init__(self, restore, root=None):
        self._r = restore
        self._root = root  # kept alive with the status, as TensorFlow's

    def _python_leaves(self):
        root = self._r.root()
        if root is None:
            return []
        objects = _trackable.walk(root)[0]
        return [o for o in objects[1:] if _trackable.is_leaf(o)]

    def assert_consumed(self):
        """Every value in the checkpoint was assigned, and every variable created so far
        got one (an AssertionError otherwise)."""
        self._r.sync()
        if self._r.values:
            keys = sorted(k for k, _ in self._r.values.values())
            raise AssertionError("Unresolved object in checkpoint %s: %d value(s) were not "
                                 "assigned to any variable, e.g. %s"
                                 % (self._r.prefix, len(keys), ", ".join(keys[:5])))
        return self.assert_existing_objects_matched()

    def assert_existing_objects_matched(self):
        """Every variable that exists now was bound to a value of the checkpoint."""
        self._r.sync()
        matched = self._r.match()
        for nid, obj in matched.items():
            if nid in self._r.values and _trackable.is_leaf(obj):
                raise AssertionError("Object %s not assigned a value from checkpoint %s"
                                     % (_full_name(obj), self._r.prefix))
        bound = {id(o) for nid, o in matched.items()
                 if nid in self._r.consumed or nid in self._r.values}
        unused = [o for o in self._python_leaves() if id(o) not in bound]
        if unused:
            raise AssertionError("Some Python objects were not bound to checkpointed values, "
                                 "likely due to changes in the Python program: %s"
                                 % [_full_name(o) for o in unused[:10]])
        return self

    def assert_nontrivial_match(self):
        """Something besides the root object matched the checkpoint."""
        if len(self._r.match()) <= 1:
            raise AssertionError("Nothing except the root object matched a checkpointed value. "
                                 "Typically this means that the checkpoint does not match the "
                                 "Python program.")
        return self

    def expect_partial(self):
        """Silences the warnings about values never assigned; returns self."""
        self._r.silenced = True
        return self

    def run_restore_ops(self, session=None):
        self._r.sync()

    def initialize_or_restore(self, session=None):
        self._r.sync()


class InitializationOnlyStatus:
    """``restore(None)``: nothing to restore."""

    def assert_consumed(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being "
                             "restored.")

    assert_existing_objects_matched = assert_consumed

    def assert_nontrivial_match(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being "
                             "restored.")

    def expect_partial(self):
        return self

    def run_restore_ops(self, session=None):
        pass

    def initialize_or_restore(self, session=None):
        pass


# ------------------------------------------------------------------ Checkpoint


class Checkpoint:
    """``tf.train.Checkpoint(root=None, **kwargs)``: the objects to save as named children
    (sorted by name, as TensorFlow), plus ``save_counter`` once ``save`` ran."""

    def __init__(self, root=None, **kwargs):
        for name, obj in kwargs.items():
            if obj is None or not (_trackable._is_trackable(obj)
                                   or isinstance(obj, Checkpoint)):
                raise ValueError("`Checkpoint` was expecting %s to be a trackable object "
                                 "(an object derived from `Trackable`), got %r. If you "
                                 "believe this object should be trackable (i.e. it is part of "
                                 "the TensorFlow Python API and manages state), please open "
                                 "an issue." % (name, obj))
        if root is not None and not _trackable._is_trackable(root):
            raise ValueError("`Checkpoint` was expecting root to be a trackable object, got %r"
                             % (root,))
        self._root = root
        self._kwargs = dict(sorted(kwargs.items()))
        for name, obj in self._kwargs.items():
            object.__setattr__(self, name, obj)
        self._save_counter = None

    def _trackable_children(self):
        out = []
        if self._root is not None:
            out.extend(_trackable.children(self._root))
        out.extend(self._kwargs.items())
        if self._save_counter is not None:
            out.append(("save_counter", self._save_counter))
        return out

    def _maybe_create_save_counter(self):
        if self._save_counter is None:
            self._save_counter = Variable(0, dtype=int64, trainable=False, name="save_counter")

    @property
    def save_counter(self):
        """The number of ``save`` calls (an int64 variable, saved with the checkpoint)."""
        self._maybe_create_save_counter()
        return self._save_counter

    def write(self, file_prefix, options=None):
        """Writes a checkpoint at exactly ``file_prefix`` (no number, no state file)."""
        return save_object(self, _path(file_prefix, "file_prefix"))

    def save(self, file_prefix, options=None):
        """Writes ``file_prefix-N`` (N = the incremented save_counter) and points the
        directory's ``checkpoint`` file at it; returns the path."""
        from mixprec.train import _management

        file_prefix = _path(file_prefix, "file_prefix")
        self._maybe_create_save_counter()
        self._save_counter.assign_add(1)
        path = self.write("%s-%d" % (file_prefix, int(self._save_counter.numpy())))
        _management.update_checkpoint_state(os.path.dirname(file_prefix), path, [path])
        return path

    def read(self, save_path, options=None):
        """Restores ``save_path`` (as ``restore``, for files written by ``write``)."""
        return CheckpointLoadStatus(restore_object(self, _path(save_path, "save_path")), self)

    def restore(self, save_path, options=None):
        """Restores ``save_path`` into the objects; values for variables that do not exist
        yet are assigned when they are created. Returns a load status."""
        if save_path is None:
            return InitializationOnlyStatus()
        status = self.read(save_path, options)
        # as TensorFlow: created after the read, it gets its value as a deferred restore
        if self._save_counter is None:
            self._maybe_create_save_counter()
            notify_created()
        return status

    def __setattr__(self, name, value):
        if not name.startswith("_") and "_kwargs" in self.__dict__ and \
                _trackable._is_trackable(value):
            self._kwargs[name] = value
            self._kwargs = dict(sorted(self._kwargs.items()))
        object.__setattr__(self, name, value)


def _path(p, what):
    try:
        return os.fspath(p)
    except TypeError:
        raise TypeError("%s must be a path (str or os.PathLike), got %r" % (what, p)) from None
