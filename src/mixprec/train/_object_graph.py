"""TensorFlow's ``TrackableObjectGraph`` proto (the ``_CHECKPOINTABLE_OBJECT_GRAPH`` entry
of a checkpoint), encoded and decoded by hand in the protobuf wire format, and the key
naming rules (escaping, ``/.ATTRIBUTES/VARIABLE_VALUE``). Knows nothing of Keras objects:
_trackable.py says what the children of an object are."""

from mixprec.train._bundle import pb_bytes, pb_fields, pb_varint

__all__ = ["Node", "encode_graph", "decode_graph", "escape", "attribute_key",
           "encode_child", "encode_slot", "decode_child", "decode_slot",
           "OBJECT_GRAPH_KEY", "VARIABLE_VALUE"]

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
VARIABLE_VALUE = "VARIABLE_VALUE"


class Node:
    """One TrackableObject: children [(node id, local name)], attributes
    [(name, full_name, checkpoint_key)], slot_variables [(original id, slot name, slot id)]."""

    __slots__ = ("children", "attributes", "slot_variables", "has_values")

    def __init__(self):
        self.children, self.attributes, self.slot_variables = [], [], []
        self.has_values = None


def escape(name):
    return name.replace(".", "..").replace("/", ".S")


def attribute_key(path, name=VARIABLE_VALUE):
    return "%s/.ATTRIBUTES/%s" % (path, escape(name))


# ObjectReference (field 1) and SlotVariableReference (field 3) are shared by the
# checkpoint's TrackableObject and SavedModel's SavedObject (saved_model/_protos.py)


def encode_child(nid, name):
    """A ``children`` entry (field 1): ObjectReference {node_id, local_name}."""
    return pb_bytes(1, (pb_varint(1, nid) if nid else b"") + pb_bytes(2, name.encode("utf-8")))


def encode_slot(orig, slot, sid):
    """A ``slot_variables`` entry (field 3): SlotVariableReference."""
    return pb_bytes(3, (pb_varint(1, orig) if orig else b"") + pb_bytes(2, slot.encode())
                    + (pb_varint(3, sid) if sid else b""))


def decode_child(v):
    """(node id, local name) of an ObjectReference."""
    nid, name = 0, ""
    for f2, w2, x in pb_fields(v):
        if f2 == 1 and w2 == 0:
            nid = x
        elif f2 == 2 and w2 == 2:
            name = _str(x)
    return nid, name


def decode_slot(v):
    """(original id, slot name, slot id) of a SlotVariableReference."""
    orig, slot, sid = 0, "", 0
    for f2, w2, x in pb_fields(v):
        if f2 == 1 and w2 == 0:
            orig = x
        elif f2 == 2 and w2 == 2:
            slot = _str(x)
        elif f2 == 3 and w2 == 0:
            sid = x
    return orig, slot, sid


def encode_graph(nodes):
    out = bytearray()
    for n in nodes:
        body = bytearray()
        for nid, name in n.children:
            body += encode_child(nid, name)
        for name, full, key in n.attributes:
            body += pb_bytes(2, pb_bytes(1, name.encode()) + (
                pb_bytes(2, full.encode()) if full else b"") + pb_bytes(3, key.encode()))
        for orig, slot, sid in n.slot_variables:
            body += encode_slot(orig, slot, sid)
        if n.has_values is not None:
            body += pb_bytes(5, pb_varint(1, 1) if n.has_values else b"")
        out += pb_bytes(1, bytes(body))
    return bytes(out)


def _str(v):
    return v.decode("utf-8", "surrogateescape")


def decode_graph(data):
    """[Node] of a serialized graph; a ValueError when it is malformed (ids out of range
    included)."""
    nodes = []
    for field, wt, body in pb_fields(data):
        if field != 1 or wt != 2:
            continue
        n = Node()
        for f, w, v in pb_fields(body):
            if w != 2:
                continue
            if f == 1:
                n.children.append(decode_child(v))
            elif f == 2:
                name = full = key = ""
                for f2, w2, x in pb_fields(v):
                    if w2 == 2 and f2 in (1, 2, 3):
                        s = _str(x)
                        if f2 == 1:
                            name = s
                        elif f2 == 2:
                            full = s
                        else:
                            key = s
                n.attributes.append((name, full, key))
            elif f == 3:
                n.slot_variables.append(decode_slot(v))
            elif f == 5:
                n.has_values = any(f2 == 1 and x for f2, _, x in pb_fields(v))
        nodes.append(n)
    for i, n in enumerate(nodes):
        ids = [c for c, _ in n.children] + [x for o, _, s in n.slot_variables for x in (o, s)]
        if any(c >= len(nodes) for c in ids):
            raise ValueError("node %d refers to a node beyond the %d in the graph"
                             % (i, len(nodes)))
    if not nodes:
        raise ValueError("the object graph is empty")
    return nodes
