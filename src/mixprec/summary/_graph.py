"""Graphs for TensorBoard's Graphs dashboard: ``tf.summary.trace_on``/``trace_export``/
``trace_off`` (the functions traced in between, as TensorFlow 2's
``graph_run_metadata_graph`` summary: a RunMetadata with one FunctionGraphs per function)
and ``tf.summary.graph`` (one GraphDef event). A mixprec graph (its recorded nodes, after
the AMP and fusion passes) is written as a GraphDef: node names scoped by the function,
TensorFlow's op names, input edges, dtypes and output shapes. Hand-encoded protobuf, like
the event files (summary/_events.py)."""

import threading

from mixprec.summary import _events

__all__ = ["trace_on", "trace_off", "trace_export", "graph", "graph_def"]

# tensorflow/core/framework/types.proto
_DT = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
       "string": 7, "int64": 9, "bool": 10, "bfloat16": 14, "uint16": 17, "float16": 19,
       "uint32": 22, "uint64": 23}
# node kinds of the core's graph that are not ops, as TensorFlow names them
_KIND_OPS = {"Input": "Placeholder", "Const": "Const", "ReadVariable": "ReadVariableOp",
             "AssignVariable": "AssignVariableOp", "OptimizerStep": "ResourceApplyOptimizer",
             "Host": "PyFunc", "HostCall": "EagerPyFunc", "Loop": "While",
             "LoopOutput": "Identity"}

_lock = threading.Lock()
_trace = {"on": False, "graphs": []}


def _shape_proto(shape):
    if shape is None:
        return _events._key(3, 0) + _events._varint(1)  # unknown_rank
    return b"".join(_events._len_field(2, _events._key(1, 0) + _events._varint(
        -1 if d is None else int(d))) for d in shape)


def _attr(key, value):
    return _events._len_field(5, _events._str_field(1, key) + _events._len_field(2, value))


def _node(name, op, inputs, dtype, shape):
    out = _events._str_field(1, name) + _events._str_field(2, op)
    for i in inputs:
        out += _events._str_field(3, i)
    dt = _DT.get(getattr(dtype, "name", None))
    if dt is not None:
        out += _attr("dtype" if op in ("Placeholder", "Const") else "T",
                     _events._key(6, 0) + _events._varint(dt))
    if shape is not None:
        out += _attr("_output_shapes", _events._len_field(1, _events._len_field(
            7, _shape_proto(shape))))
    return out


def graph_def(nodes, scope=""):
    """A serialized GraphDef of the core graph's ``nodes()`` (names under ``scope``)."""
    names, used = [], {}
    prefix = scope + "/" if scope else ""
    for n in nodes:
        base = n["op"] if n["kind"] == "Op" and n["op"] else _KIND_OPS.get(n["kind"], n["kind"])
        k = used.get(base, 0)
        used[base] = k + 1
        names.append(prefix + (base if k == 0 else "%s_%d" % (base, k)))
    out = b""
    for n, name in zip(nodes, names):
        op = n["op"] if n["kind"] == "Op" and n["op"] else _KIND_OPS.get(n["kind"], n["kind"])
        ins = [names[i] if j == 0 else "%s:%d" % (names[i], j) for i, j in n["inputs"]
               if 0 <= i < len(names)]
        out += _events._len_field(1, _node(name, op, ins, n.get("dtype"), n.get("shape")))
    versions = _events._key(1, 0) + _events._varint(1766)  # VersionDef.producer
    return out + _events._len_field(4, versions)


def _record(g, name):
    """A graph pass: keeps each graph traced while tracing is on."""
    with _lock:
        if _trace["on"]:
            _trace["graphs"].append((name, g.nodes()))


def trace_on(graph=True, profiler=False, profiler_outdir=None):
    """Collects the graphs of the functions traced from now on (the profiler is not
    available in mixprec: a warning, as TensorFlow without ``profiler_outdir``)."""
    from mixprec import _function, _logging
    with _lock:
        if _trace["on"]:
            _logging.get_logger().warning("Trace already enabled")
            return
        if profiler:
            _logging.get_logger().warning(
                "The profiler is not available in mixprec; tracing graphs only.")
        _trace["on"] = bool(graph)
        _trace["graphs"] = []
    if _record not in _function.graph_passes:
        _function.graph_passes.append(_record)


def trace_off():
    from mixprec import _function
    with _lock:
        _trace["on"] = False
        _trace["graphs"] = []
    if _record in _function.graph_passes:
        _function.graph_passes.remove(_record)


def trace_export(name, step=None, profiler_outdir=None):
    """Writes the collected graphs under ``name`` at ``step`` (TensorFlow's
    graph_run_metadata_graph summary), then turns tracing off."""
    from mixprec import summary
    with _lock:
        if not _trace["on"]:
            raise ValueError("Must enable trace before export through tf.summary.trace_on.")
        graphs = list(_trace["graphs"])

    def build(_):
        run_metadata = b""
        for fname, nodes in graphs:
            fg = _events._len_field(2, graph_def(nodes, fname))  # pre_optimization_graph
            run_metadata += _events._len_field(4, fg)            # RunMetadata.function_graphs
        return _events.summary_value(
            name, _events.tensor_proto(_events.DT_STRING, (), strings=[run_metadata]),
            _events.metadata("graph_run_metadata_graph", content=b"1"))
    try:
        return summary._emit(build, step)
    finally:
        trace_off()


def graph(graph_data):
    """Writes one graph (a ConcreteFunction's ``graph``, or serialized GraphDef bytes) as
    the run's graph event; True when written."""
    from mixprec import _core, summary
    from mixprec._function import FuncGraph
    if _core.graph_recording() is not None:
        raise ValueError("graph() cannot be invoked inside a graph context.")
    writer = summary._default_writer()
    if writer is None or not summary._condition() or writer._file is None:
        return _core.constant(False)
    if isinstance(graph_data, FuncGraph):
        payload = graph_def(graph_data._g.nodes())
    elif isinstance(graph_data, (bytes, bytearray)):
        payload = bytes(graph_data)
    else:
        raise ValueError("Argument 'graph_data' is not tf.Graph or tf.compat.v1.GraphDef. "
                         "Received graph_data=%s of type %s." % (graph_data,
                                                                  type(graph_data).__name__))
    event = _events.event(0) + _events._len_field(4, payload)  # Event.graph_def
    writer._write(event)
    return _core.constant(True)
