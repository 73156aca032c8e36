"""The protobuf messages of a SavedModel directory that mixprec reads and writes, encoded
and decoded by hand in the wire format (the primitives are train/_bundle.py's): SavedModel
-> MetaGraphDef -> (MetaInfoDef, SignatureDef map, SavedObjectGraph), Keras' SavedMetadata
(keras_metadata.pb) and FingerprintDef. Field numbers are TensorFlow 2.21's. Owns bytes <->
small Python records only; what a node means is _objects.py's and the Keras loader's.
Malformed input raises ValueError (callers turn it into TF's exception)."""

from mixprec.train import _object_graph
from mixprec.train._bundle import pb_bytes, pb_fields, pb_varint, varint

__all__ = ["SavedObject", "SavedModelProto", "encode_saved_model", "decode_saved_model",
           "encode_metadata", "decode_metadata", "encode_fingerprint", "decode_fingerprint"]


def _s(v):
    return v.decode("utf-8", "surrogateescape")


def _submessages(buf, field):
    return [v for f, w, v in pb_fields(buf) if f == field and w == 2]


def _version(producer, min_consumer=0):
    # VersionDef: 1 producer, 2 min_consumer
    return (pb_varint(1, producer) if producer else b"") + (
        pb_varint(2, min_consumer) if min_consumer else b"")


def _shape(shape):
    """TensorShapeProto: 2 dim {1 size}; None dims are -1; None shape is unknown_rank (3)."""
    if shape is None:
        return pb_varint(3, 1)
    out = b""
    for d in shape:
        out += pb_bytes(2, pb_varint(1, -1 if d is None else int(d)))
    return out


def _decode_shape(buf):
    dims, unknown = [], False
    for f, w, v in pb_fields(buf):
        if f == 2 and w == 2:
            size = 0
            for f2, w2, x in pb_fields(v):
                if f2 == 1 and w2 == 0:
                    size = x - (1 << 64) if x >= 1 << 63 else x
            dims.append(None if size < 0 else size)
        elif f == 3 and w == 0 and v:
            unknown = True
    return None if unknown else tuple(dims)


# ------------------------------------------------------------------ SavedObjectGraph


class SavedObject:
    """One node of a SavedObjectGraph. ``kind`` is the oneof's name ('user_object',
    'variable', 'function', 'bare_concrete_function', 'asset', 'constant', 'resource',
    'captured_tensor' or '' when unset); ``identifier`` a user object's ('_tf_keras_layer',
    'trackable_list_wrapper' ...); ``variable`` a dict (dtype enum, shape, trainable, name)
    for variables."""

    __slots__ = ("children", "kind", "identifier", "variable", "registered_name",
                 "slot_variables", "metadata")

    _KINDS = {4: "user_object", 5: "asset", 6: "function", 7: "variable",
              8: "bare_concrete_function", 9: "constant", 10: "resource",
              12: "captured_tensor"}

    def __init__(self, kind="user_object", identifier="", children=None, variable=None):
        self.children = list(children or [])  # [(node id, local name)]
        self.kind = kind
        self.identifier = identifier
        self.variable = variable
        self.registered_name = ""
        self.slot_variables = []  # [(original id, slot name, slot id)]
        self.metadata = ""  # SavedUserObject.metadata: Keras JSON before keras_metadata.pb

    def encode(self):
        out = bytearray()
        for nid, name in self.children:
            out += _object_graph.encode_child(nid, name)
        for orig, slot, sid in self.slot_variables:
            out += _object_graph.encode_slot(orig, slot, sid)
        if self.kind == "user_object":
            # SavedUserObject: 1 identifier, 2 version {producer 1, min_consumer 1}
            out += pb_bytes(4, pb_bytes(1, self.identifier.encode())
                            + pb_bytes(2, _version(1, 1))
                            + (pb_bytes(3, self.metadata.encode()) if self.metadata else b""))
        elif self.kind == "variable":
            v = self.variable
            body = (pb_varint(1, v["dtype"]) + pb_bytes(2, _shape(v["shape"]))
                    + (pb_varint(3, 1) if v.get("trainable") else b"")
                    # synchronization 3 (ON_READ) / aggregation 1 (SUM): a metric's
                    + (pb_varint(4, v["synchronization"]) if v.get("synchronization") else b"")
                    + (pb_varint(5, v["aggregation"]) if v.get("aggregation") else b"")
                    + (pb_bytes(6, v["name"].encode()) if v.get("name") else b""))
            out += pb_bytes(7, body)
        if self.registered_name:
            out += pb_bytes(13, self.registered_name.encode())
        return bytes(out)

    @classmethod
    def decode(cls, buf):
        n = cls(kind="")
        for f, w, v in pb_fields(buf):
            if w != 2:
                continue
            if f == 1:
                n.children.append(_object_graph.decode_child(v))
            elif f == 3:
                n.slot_variables.append(_object_graph.decode_slot(v))
            elif f in cls._KINDS:
                n.kind = cls._KINDS[f]
                if f == 4:
                    for f2, w2, x in pb_fields(v):
                        if f2 == 1 and w2 == 2:
                            n.identifier = _s(x)
                        elif f2 == 3 and w2 == 2:
                            n.metadata = _s(x)
                elif f == 7:
                    var = {"dtype": 0, "shape": (), "trainable": False, "name": ""}
                    for f2, w2, x in pb_fields(v):
                        if f2 == 1 and w2 == 0:
                            var["dtype"] = x
                        elif f2 == 2 and w2 == 2:
                            var["shape"] = _decode_shape(x)
                        elif f2 == 3 and w2 == 0:
                            var["trainable"] = bool(x)
                        elif f2 == 6 and w2 == 2:
                            var["name"] = _s(x)
                    n.variable = var
            elif f == 13:
                n.registered_name = _s(v)
        return n


# ------------------------------------------------------------------ SavedModel


class SavedModelProto:
    """What mixprec keeps of a SavedModel: its tags, TF version string, signature names
    (with their input/output TensorInfo names, dtypes and shapes) and the object graph."""

    def __init__(self):
        self.schema_version = 1
        self.tags = []
        self.tensorflow_version = ""
        self.signatures = {}   # name -> {"inputs": {k: (dtype, shape)}, "outputs": {...}}
        self.nodes = []        # [SavedObject]
        self.has_graph = False  # a GraphDef with functions (TensorFlow's traces) is present


def _tensor_info(name, dtype, shape):
    # TensorInfo: 1 name, 2 dtype, 3 tensor_shape
    return pb_bytes(1, name.encode()) + pb_varint(2, dtype) + pb_bytes(3, _shape(shape))


def _signature(spec):
    # SignatureDef: 1 inputs map<string, TensorInfo>, 2 outputs map, 3 method_name
    out = b""
    for field, key in ((1, "inputs"), (2, "outputs")):
        for k, (dtype, shape) in sorted(spec.get(key, {}).items()):
            entry = pb_bytes(1, k.encode()) + pb_bytes(
                2, _tensor_info("%s_%s:0" % (key[:-1] if key == "inputs" else "output", k),
                                dtype, shape))
            out += pb_bytes(field, entry)
    return out + pb_bytes(3, b"tensorflow/serving/predict")


def encode_saved_model(proto, tf_version, git_version):
    info = b""
    for tag in proto.tags:
        info += pb_bytes(4, tag.encode())
    info += pb_bytes(5, tf_version.encode()) + pb_bytes(6, git_version.encode())
    info += pb_varint(7, 1)  # stripped_default_attrs
    graph = b"".join(pb_bytes(1, n.encode()) for n in proto.nodes)
    meta = pb_bytes(1, info)
    for name, spec in sorted(proto.signatures.items()):
        meta += pb_bytes(5, pb_bytes(1, name.encode()) + pb_bytes(2, _signature(spec)))
    meta += pb_bytes(7, graph)
    return pb_varint(1, proto.schema_version) + pb_bytes(2, meta)


def _decode_tensor_info_map(entry):
    """(key, (dtype, shape)) of one map<string, TensorInfo> entry."""
    key, info = "", b""
    for f, w, x in pb_fields(entry):
        if f == 1 and w == 2:
            key = _s(x)
        elif f == 2 and w == 2:
            info = x
    dtype, shape = 0, None
    for f, w, x in pb_fields(info):
        if f == 2 and w == 0:
            dtype = x
        elif f == 3 and w == 2:
            shape = _decode_shape(x)
    return key, (dtype, shape)


def decode_saved_model(data):
    """SavedModelProto of ``saved_model.pb``'s bytes (the first MetaGraphDef's parts);
    ValueError when they are not a SavedModel."""
    p = SavedModelProto()
    metas = []
    for f, w, v in pb_fields(data):
        if f == 1 and w == 0:
            p.schema_version = v
        elif f == 2 and w == 2:
            metas.append(v)
        elif f not in (1, 2):
            raise ValueError("field %d is not a SavedModel field" % f)
    if not metas:
        raise ValueError("the SavedModel holds no MetaGraphDef")
    for f, w, v in pb_fields(metas[0]):
        if w != 2:
            continue
        if f == 1:
            for f2, w2, x in pb_fields(v):
                if f2 == 4 and w2 == 2:
                    p.tags.append(_s(x))
                elif f2 == 5 and w2 == 2:
                    p.tensorflow_version = _s(x)
        elif f == 2:
            p.has_graph = bool(v)
        elif f == 5:
            name, body = "", b""
            for f2, w2, x in pb_fields(v):
                if f2 == 1 and w2 == 2:
                    name = _s(x)
                elif f2 == 2 and w2 == 2:
                    body = x
            infos = {"inputs": {}, "outputs": {}}
            for f2, w2, x in pb_fields(body):
                if f2 in (1, 2) and w2 == 2:
                    k, spec = _decode_tensor_info_map(x)
                    infos["inputs" if f2 == 1 else "outputs"][k] = spec
            p.signatures[name] = infos
        elif f == 7:
            p.nodes = [SavedObject.decode(n) for n in _submessages(v, 1)]
    for i, n in enumerate(p.nodes):
        if any(c >= len(p.nodes) for c, _ in n.children):
            raise ValueError("object graph node %d refers to a node beyond the %d in the graph"
                             % (i, len(p.nodes)))
    return p


# ------------------------------------------------------------------ keras_metadata.pb


def encode_metadata(records):
    """SavedMetadata: 1 nodes {2 node_id, 3 node_path, 4 identifier, 5 metadata (JSON),
    6 version {producer 2, min_consumer 1}} from [(node id, path, identifier, json)]."""
    out = bytearray()
    for nid, path, ident, meta in records:
        body = ((pb_varint(2, nid) if nid else b"") + pb_bytes(3, path.encode())
                + pb_bytes(4, ident.encode()) + pb_bytes(5, meta.encode("utf-8"))
                + pb_bytes(6, _version(2, 1)))
        out += pb_bytes(1, body)
    return bytes(out)


def decode_metadata(data):
    records = []
    for body in _submessages(data, 1):
        nid, path, ident, meta = 0, "", "", ""
        for f, w, v in pb_fields(body):
            if f == 2 and w == 0:
                nid = v
            elif f == 3 and w == 2:
                path = _s(v)
            elif f == 4 and w == 2:
                ident = _s(v)
            elif f == 5 and w == 2:
                meta = v.decode("utf-8")
        records.append((nid, path, ident, meta))
    return records


# ------------------------------------------------------------------ fingerprint.pb


def encode_fingerprint(hashes, uuid):
    """FingerprintDef: 1-5 uint64 hashes (saved_model_checksum, graph_def_program_hash,
    signature_def_hash, saved_object_graph_hash, checkpoint_hash), 6 version {producer 1},
    7 uuid."""
    out = b"".join(varint(f << 3) + varint(h & (2**64 - 1))
                   for f, h in zip(range(1, 6), hashes))
    return out + pb_bytes(6, _version(1)) + pb_bytes(7, str(uuid).encode())


def decode_fingerprint(data):
    out = {}
    names = {1: "saved_model_checksum", 2: "graph_def_program_hash", 3: "signature_def_hash",
             4: "saved_object_graph_hash", 5: "checkpoint_hash"}
    for f, w, v in pb_fields(data):
        if f in names and w == 0:
            out[names[f]] = v
        elif f == 7 and w == 2:
            out["uuid"] = _s(v)
    return out
