"""Objects <-> a SavedModel's object graph: ``tf.saved_model.save`` (the variables
checkpoint and a SavedObjectGraph with the same node numbering, tf.function attributes as
function nodes without graphs) and ``tf.saved_model.load`` (a tree of plain objects holding
restored Variables; callables only where a Keras config can rebuild them). Traversal and
checkpoint keys are train/_trackable.py's and train/_checkpoint.py's; files are
_directory.py's. Must not import Keras at module level nor run traced graphs."""

import os

import numpy as np

from mixprec import errors
from mixprec._variable import Variable
from mixprec.saved_model import _directory, _protos
from mixprec.train import _bundle, _checkpoint, _object_graph, _trackable

__all__ = ["save", "load", "restore_variables", "WithoutOptimizer", "Loaded"]

SERVING = "serve"
UNTRACED_FUNCTION = "_mixprec_untraced_function"
DEFAULT_SIGNATURE = "serving_default"


class WithoutOptimizer:
    """A model's checkpoint children without its optimizer (``include_optimizer=False``)."""

    def __init__(self, model):
        self.model = model

    def _trackable_children(self):
        return [(n, c) for n, c in _trackable.children(self.model) if n != "optimizer"]


# ------------------------------------------------------------------ saving


def _function_attributes(obj):
    """[(name, Function)] of tf.function attributes (instance and class), sorted."""
    from mixprec._function import Function

    out = {}
    for klass in reversed(type(obj).__mro__):
        for k, v in vars(klass).items():
            if isinstance(v, Function):
                out[k] = v
    for k, v in getattr(obj, "__dict__", {}).items():
        if isinstance(v, Function):
            out[k] = v
    return sorted(out.items())


def _variable_node(obj):
    value = np.asarray(_checkpoint._leaf_value(obj))
    dt = _bundle._DT_OF_NP.get(value.dtype, 0)
    name = _checkpoint._full_name(obj) if isinstance(obj, Variable) else ""
    var = {"dtype": dt, "shape": value.shape, "name": name,
           "trainable": bool(getattr(obj, "trainable", False))}
    return _protos.SavedObject(kind="variable", variable=var)


def _user_identifier(obj, keras_identifier):
    from mixprec._module import _DictNode

    if isinstance(obj, _trackable.ListNode):
        return "trackable_list_wrapper"
    if isinstance(obj, (_trackable._Empty, _DictNode)):
        return "trackable_dict_wrapper"
    ident = keras_identifier(obj) if keras_identifier else ""
    return ident or "_generic_user_object"


def _spec_of(spec):
    from mixprec import dtypes

    dtype = dtypes.as_dtype(getattr(spec, "dtype", "float32"))
    dt = _bundle._DT_OF_NP.get(np.dtype(dtype.as_numpy_dtype), 1)
    shape = getattr(spec, "shape", None)
    shape = None if shape is None or getattr(shape, "rank", 0) is None else tuple(
        shape.as_list() if hasattr(shape, "as_list") else shape)
    return dt, shape


def _signature_specs(signatures, keras_model):
    """{name: {'inputs': {k: (dtype, shape)}, 'outputs': {...}}} recorded in the
    MetaGraphDef (for readers such as saved_model_cli; mixprec re-creates callables from
    Keras configs, not from these)."""
    out = {}
    if signatures is None and keras_model is not None and getattr(keras_model, "inputs", None):
        ins = {t.name.split(":")[0] if hasattr(t, "name") else "input_%d" % i: _spec_of(t)
               for i, t in enumerate(keras_model.inputs)}
        outs = {}
        for i, t in enumerate(keras_model.outputs or []):
            layer = getattr(t, "_keras_history", (None,))[0]
            outs[getattr(layer, "name", "output_%d" % i)] = _spec_of(t)
        return {DEFAULT_SIGNATURE: {"inputs": ins, "outputs": outs}}
    if signatures is None:
        return out
    if not isinstance(signatures, dict):
        signatures = {DEFAULT_SIGNATURE: signatures}
    for name, fn in signatures.items():
        if not isinstance(name, str):
            raise ValueError("Signature names must be strings, got %r" % (name,))
        if not callable(fn):
            raise ValueError("Expected a TensorFlow function for which to generate a "
                             "signature, but got %r. Only `tf.functions` with an input "
                             "signature or concrete functions can be used as a signature."
                             % (fn,))
        sig = getattr(fn, "input_signature", None)
        if sig is None and hasattr(fn, "structured_input_signature"):
            sig = fn.structured_input_signature[0]
        ins = {}
        for i, s in enumerate(sig or []):
            key = getattr(s, "name", None) or "args_%d" % i
            ins[key] = _spec_of(s)
        out[name] = {"inputs": ins, "outputs": {}}
    return out


def save(root, export_dir, signatures=None, metadata=None, keras_model=None,
         keras_identifier=None, metadata_file=True):
    """Writes ``root``'s SavedModel directory; returns its absolute path. Keras metadata
    goes to keras_metadata.pb (``model.save``) or, with ``metadata_file=False``
    (``tf.saved_model.save``, which writes no such file in TF), into the nodes'
    SavedUserObject.metadata, where tf-keras reads it too."""
    objects, _, edges, paths = _trackable.walk(root)
    if keras_model is not None:
        objects[0] = keras_model  # a WithoutOptimizer root stands for the model
    nodes = []
    for i, obj in enumerate(objects):
        if _trackable.is_leaf(obj):
            node = _variable_node(obj)
        else:
            node = _protos.SavedObject(identifier=_user_identifier(obj, keras_identifier))
        node.children = list(edges[i])
        nodes.append(node)
    # tf.function attributes: placeholder user objects. NOTE: not 'function' nodes: TF's
    # loader needs a function spec and concrete functions (traced graphs) for those, which
    # mixprec does not have; TF revives these as empty objects, mixprec as callables that
    # raise NotImplementedError saying why.
    for i, obj in enumerate(list(objects)):
        if _trackable.is_leaf(obj):
            continue
        for name, _fn in _function_attributes(obj):
            nodes[i].children.append((len(nodes), name))
            nodes.append(_protos.SavedObject(identifier=UNTRACED_FUNCTION))
    specs = _signature_specs(signatures, keras_model)
    records = metadata(objects, paths) if metadata else None
    if records and not metadata_file:
        for nid, _, _, meta in records:
            nodes[nid].metadata = meta
        records = None

    def fill(tmp):
        from mixprec import version

        _bundle.write_bundle(_directory.variables_prefix(tmp), _checkpoint.serialize(root))
        proto = _protos.SavedModelProto()
        proto.tags = [SERVING]
        proto.nodes = nodes
        proto.signatures = specs
        data = _protos.encode_saved_model(proto, version.VERSION, version.GIT_VERSION)
        with open(os.path.join(tmp, _directory.SAVED_MODEL_PB), "wb") as f:
            f.write(data)
        if records:
            with open(os.path.join(tmp, _directory.KERAS_METADATA_PB), "wb") as f:
                f.write(_protos.encode_metadata(records))
        graph = b"".join(n.encode() for n in nodes)
        return data, graph, repr(sorted(specs.items())).encode()

    return _directory.write_directory(export_dir, fill)


# ------------------------------------------------------------------ restoring


def _read_checkpoint(export_dir):
    prefix = _directory.variables_prefix(export_dir)
    if not os.path.isfile(prefix + ".index"):
        raise errors.NotFoundError(None, None, "Failed to find the variables checkpoint of the "
                                   "SavedModel at %s (%s.index is missing)"
                                   % (export_dir, prefix))
    return prefix


def restore_variables(obj, export_dir):
    """Restores the SavedModel's variables checkpoint into ``obj``'s graph (matched by
    child names from the root, as TensorFlow). Values with no object here (tf-keras'
    ``keras_api`` metrics, lists of variables) are dropped, not kept waiting."""
    prefix = _read_checkpoint(export_dir)
    r = _checkpoint.restore_object(obj, prefix)
    r.silenced = True
    if r in _checkpoint._ACTIVE:
        _checkpoint._ACTIVE.remove(r)
    r.values.clear()
    return r


class Loaded:
    """What ``tf.saved_model.load`` returns for each non-variable node (TensorFlow's
    ``_UserObject``): the node's children as attributes, ``signatures``, and, for a Keras
    model, ``__call__`` running the model rebuilt from its config."""

    def __init__(self):
        self.__dict__["_mixprec_call"] = None

    def __call__(self, *args, **kwargs):
        fn = self.__dict__.get("_mixprec_call")
        if fn is None:
            raise TypeError("'_UserObject' object is not callable")
        return fn(*args, **kwargs)

    def _trackable_children(self):
        out = []
        for k, v in vars(self).items():
            if k.startswith("_mixprec") or k == "signatures":
                continue
            if isinstance(v, list) and v and all(_trackable._is_trackable(x) for x in v):
                out.append((k, _trackable.ListNode(v)))
            elif _trackable._is_trackable(v):
                out.append((k, v))
        return out


class _NotRestoredFunction:
    """A tf.function of the saved object: mixprec stores no graphs, so it cannot run."""

    def __init__(self, path, export_dir):
        self._path, self._dir = path, export_dir

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(
            "%s of the SavedModel at %s is a traced TensorFlow function; mixprec does not "
            "store or run traced graphs, so it cannot be called after loading (the variables "
            "are restored). hint: rebuild the object in Python and assign the loaded "
            "variables, or save a Keras model, whose call mixprec rebuilds from its config."
            % (self._path or "a function", self._dir))


def _child_map(nodes):
    return [{name: c for c, name in n.children} for n in nodes]


def load(export_dir, tags=None, options=None):
    """``tf.saved_model.load``: the root object of the directory's object graph."""
    del options
    export_dir = os.fspath(export_dir)
    if not os.path.exists(export_dir):
        raise OSError("SavedModel file does not exist at: %s%s{%s|%s}"
                      % (export_dir, os.sep, _directory.SAVED_MODEL_PBTXT,
                         _directory.SAVED_MODEL_PB))
    proto = _directory.read_saved_model(export_dir)
    if tags is not None:
        want = [tags] if isinstance(tags, str) else list(tags)
        if sorted(set(want)) != sorted(set(proto.tags)):
            raise RuntimeError("MetaGraphDef associated with tags %r could not be found in "
                               "SavedModel, with available tags '%s'." % (want, proto.tags))
    nodes = proto.nodes
    if not nodes:
        raise ValueError("The SavedModel at %s has no object graph (a TensorFlow 1 "
                         "SavedModel?); mixprec reads TF2 SavedModels only" % export_dir)
    keras_model = None
    records = _directory.read_metadata(export_dir)
    if records is None and nodes[0].metadata:
        records = True  # tf-keras' metadata inside the object graph
    if records and nodes[0].identifier.startswith("_tf_keras"):
        from mixprec.keras.saving import saved_model_format

        keras_model = saved_model_format.load_model(export_dir, compile=False)
    # the Keras model's variables by path, so the loaded tree shares them
    shared = {}
    if keras_model is not None:
        objs, _, _, paths = _trackable.walk(keras_model)
        shared = {paths[i]: o for i, o in enumerate(objs) if isinstance(o, Variable)}
    built = [None] * len(nodes)
    paths = {0: ""}
    order = [0]
    for nid in order:  # breadth first: first path wins, as TensorFlow's keys
        for c, name in nodes[nid].children:
            if c not in paths:
                paths[c] = (paths[nid] + "/" if paths[nid] else "") + _object_graph.escape(name)
                order.append(c)
    for nid, n in enumerate(nodes):
        if n.kind == "variable":
            v = n.variable
            obj = shared.get(paths.get(nid))
            if obj is None:
                dtype = _bundle._NP_OF_DT.get(v["dtype"])
                if dtype is None or v["shape"] is None or any(d is None for d in v["shape"]):
                    built[nid] = None
                    continue
                obj = Variable(np.zeros(v["shape"], dtype), trainable=v["trainable"],
                               name=v["name"] or None)
            built[nid] = obj
        elif n.kind in ("function", "bare_concrete_function") or (
                n.identifier == UNTRACED_FUNCTION):
            built[nid] = _NotRestoredFunction(paths.get(nid, ""), export_dir)
        elif n.identifier == "trackable_list_wrapper":
            built[nid] = []
        elif n.identifier == "trackable_dict_wrapper":
            built[nid] = {}
        else:
            built[nid] = Loaded()
    for nid, n in enumerate(nodes):
        obj = built[nid]
        if isinstance(obj, list):
            items = sorted((int(name), c) for c, name in n.children if name.isdigit())
            obj.extend(built[c] for _, c in items)
        elif isinstance(obj, dict):
            obj.update((name, built[c]) for c, name in n.children)
        elif isinstance(obj, Loaded):
            for c, name in n.children:
                if name.isidentifier() and built[c] is not None:
                    obj.__dict__[name] = built[c]
    root = built[0]
    # values: the checkpoint's nodes matched to ours by child names from the root
    prefix = _read_checkpoint(export_dir)
    reader = _bundle.BundleReader(prefix)
    raw = reader.read(_object_graph.OBJECT_GRAPH_KEY)
    try:
        graph = _object_graph.decode_graph(raw if isinstance(raw, bytes) else bytes(raw))
    except ValueError as e:
        raise errors.DataLossError(None, None, "The object graph of %s is corrupt: %s"
                                   % (prefix, e)) from None
    ours = _child_map(nodes)
    match = {0: 0}
    queue = [0]
    while queue:
        cid = queue.pop(0)
        for c, name in graph[cid].children:
            if c in match:
                continue
            mine = ours[match[cid]].get(name)
            if mine is not None:
                match[c] = mine
                queue.append(c)
    for cid, node in enumerate(graph):
        target = built[match[cid]] if cid in match else None
        if not isinstance(target, Variable) or keras_model is not None and any(
                target is s for s in shared.values()):
            continue
        for name, _, key in node.attributes:
            if name == _object_graph.VARIABLE_VALUE:
                value = reader.read(key)
                _checkpoint._check_fits(target, value, key, prefix)
                target.assign(value)
    if isinstance(root, Loaded):
        _attach_callables(root, proto, keras_model, export_dir)
    return root


def _attach_callables(root, proto, keras_model, export_dir):
    sigs = {}
    if keras_model is None and isinstance(root.__dict__.get("__call__"), _NotRestoredFunction):
        root.__dict__["_mixprec_call"] = root.__dict__["__call__"]  # raises, saying why
    if keras_model is not None:
        root.__dict__["_mixprec_call"] = keras_model.__call__
        root.__dict__["_mixprec_keras_model"] = keras_model
        # TensorFlow's revived Keras object lists its variables (saved as list nodes)
        for name in ("variables", "trainable_variables", "non_trainable_variables"):
            if not isinstance(root.__dict__.get(name), list):
                root.__dict__[name] = list(getattr(keras_model, name))

        def serving(*args, **kwargs):
            if kwargs and not args:
                names = [t.name.split(":")[0] for t in keras_model.inputs]
                args = ([kwargs[n] for n in names],) if len(names) > 1 else (kwargs[names[0]],)
            out = keras_model(*args, training=False)
            outs = out if isinstance(out, (list, tuple)) else [out]
            names = list(proto.signatures.get(DEFAULT_SIGNATURE, {}).get("outputs", {}))
            if len(names) != len(outs):
                names = ["output_%d" % i for i in range(len(outs))]
            return dict(zip(names, outs))

        for name in proto.signatures:
            if name != "__saved_model_init_op":
                sigs[name] = serving
    else:
        for name in proto.signatures:
            if name != "__saved_model_init_op":
                sigs[name] = _NotRestoredFunction("signature %r" % name, export_dir)
    root.__dict__["signatures"] = sigs
