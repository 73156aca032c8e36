"""The rewrite applied to a function, and its summary logged through ``mixprec.get_logger()``.

A traced function: ``rewrite_graph`` (a ``mixprec._function.graph_passes`` entry) runs
TensorFlow's colouring on the graph before its first replay (C: csrc/amp_graph.c).
A function that runs eagerly (a graph break, ``run_functions_eagerly``): ``call`` runs it
in an autocast scope (lowered values flow between ops, float32 results at its edge) and, at its
first call, the same pass (``_core.amp_color``, plain arrays) over the op sequence the core
recorded (``summarize``). This module must not cast or compute: it orders calls and
formats the summary.
"""

import threading
import weakref

from mixprec import _core, _nest
from mixprec._amp import state
from mixprec._logging import runtime_logger

NODE_OP, NODE_INPUT, NODE_VARIABLE, NODE_CONST, NODE_OUTPUT = 0, 1, 2, 3, 4

_tls = threading.local()
_summarized = weakref.WeakKeyDictionary()   # owner (function, model) -> names logged
_summarized_ids = set()                     # (id, name) for owners without weak references
last_summary = None                         # the most recent pass result (tests, debugging)
_logged_graphs = set()                      # (function name, summary) of logged traces


def _op_names():
    rows = _core.op_table()
    return {row[0]: row[1] for row in rows}


def _seen(owner, name):
    try:
        return name in _summarized.get(owner, ())
    except TypeError:
        return (id(owner), name) in _summarized_ids


def _mark(owner, name):
    try:
        _summarized.setdefault(owner, set()).add(name)
    except TypeError:
        _summarized_ids.add((id(owner), name))


def _tensor_ids(structure):
    ids = set()
    for x in _nest.flatten(structure):
        i = getattr(x, "_id", None)
        if isinstance(i, int):
            ids.add(i)
        v = getattr(x, "value", None)  # a Variable argument: its current value's id
        if callable(v) and not isinstance(x, type):
            try:
                i = getattr(v(), "_id", None)
            except Exception:  # noqa: BLE001 - not a variable after all
                i = None
            if isinstance(i, int):
                ids.add(i)
    return ids


def call(owner, name, python_function, args, kwargs):
    """Runs ``python_function`` as a rewritten function (outermost call: float32 results).

    ``owner``/``name`` identify the function (its Python function and a name): its summary
    is logged at its first call only."""
    depth = getattr(_tls, "depth", 0)
    summarize_now = depth == 0 and not _seen(owner, name)
    _tls.depth = depth + 1
    if summarize_now:
        state.refresh()  # TensorFlow reads the list variables when the pass runs
        _core.amp_record_begin()
    _core.amp_scope_enter()
    trace = None
    try:
        out = python_function(*args, **kwargs)
    finally:
        _core.amp_scope_exit()
        _tls.depth = depth
        if summarize_now:
            trace = _core.amp_record_end()
    if depth:
        return out  # a nested function is part of its caller's graph
    out = _nest.map_structure(_core.amp_restore, out)
    if summarize_now:
        _mark(owner, name)
        if trace is not None:
            summarize(trace, _tensor_ids((args, kwargs)), _tensor_ids(out))
    return out


def build_graph(trace, input_ids, output_ids):
    """The recorded op sequence as the pass's arrays: (op, kind, flags, in_off, in_node, names)."""
    ops, flags, out_ids, in_off, in_ids, alias = trace
    alias_of = dict(zip(alias[0::2], alias[1::2]))

    def resolve(i):
        seen = 0
        while i in alias_of and seen < 64:
            i, seen = alias_of[i], seen + 1
        return i

    n = len(ops)
    producer = {}
    for k in range(n):
        producer[out_ids[k]] = k
    node_op, node_kind, node_flags = list(ops), [NODE_OP] * n, list(flags)
    fanin = [[] for _ in range(n)]
    external = {}
    for k in range(n):
        for i in in_ids[in_off[k]:in_off[k + 1]]:
            i = resolve(i)
            if i in producer:
                fanin[k].append(producer[i])
                continue
            if i not in external:
                external[i] = len(node_op)
                node_op.append(-1)
                node_kind.append(NODE_INPUT if i in input_ids else NODE_VARIABLE)
                node_flags.append(0)
                fanin.append([])
            src = external[i]
            if flags[k] & 1:  # a float32 node reads it: a float32 tensor
                node_flags[src] = 3
            fanin[k].append(src)
    for i in output_ids:
        i = resolve(i)
        if i in producer:
            node_op.append(-1)
            node_kind.append(NODE_OUTPUT)
            node_flags.append(0)
            fanin.append([producer[i]])
    offs, edges = [0], []
    for f in fanin:
        edges.extend(f)
        offs.append(len(edges))
    return node_op, node_kind, node_flags, offs, edges


def node_names(node_op):
    """TensorFlow-style node names: the op's name, then _1, _2 ... for later ones."""
    tf_names = _op_names()
    counts, names = {}, []
    for op in node_op:
        base = tf_names.get(op, "_Arg") if op >= 0 else None
        if base is None:
            names.append(None)
            continue
        k = counts.get(base, 0)
        counts[base] = k + 1
        names.append(base if k == 0 else "%s_%d" % (base, k))
    return names


def summarize(trace, input_ids, output_ids, log=True):
    """Runs the colouring pass over a recorded function and logs TensorFlow's summary."""
    global last_summary
    node_op, node_kind, node_flags, offs, edges = build_graph(trace, input_ids, output_ids)
    lowered, s = _core.amp_color(node_op, node_kind, node_flags, offs, edges, state.bf16())
    names = node_names(node_op)
    s = dict(s)
    s["converted_nodes"] = [nm for nm, low in zip(names, lowered) if low and nm]
    s["dtype"] = state.lowered_dtype_name()
    last_summary = s
    if log:
        for line in summary_lines(s):
            runtime_logger().info(line)
    return s


def summary_lines(s):
    """TensorFlow's wording: NVIDIA's block, upstream's one line, then the converted nodes."""
    dtype = s["dtype"]
    if not s["allowlisted"]:
        return ["No whitelist ops found, nothing to do"]
    short = "FP16" if dtype == "float16" else "BF16"
    block = ("Automatic Mixed Precision Grappler Pass Summary:\n\n"
             "Total processable nodes: %d\n"
             "Recognized nodes available for conversion: %d\n"
             "Total nodes converted: %d\n"
             "Total %s Cast ops used (excluding Const and Variable casts): %d\n"
             "Whitelisted nodes converted: %d\n"
             "Blacklisted nodes blocking conversion: %d\n"
             "Nodes blocked from conversion by blacklisted nodes: %d"
             % (s["total_nodes"], s["recognized"], s["converted"], short, s["casts_to_lowered"],
                s["allowlisted"], s["denylisted"], s["blocked"]))
    line = ("Converted %d/%d nodes to %s precision using %d cast(s) to %s (excluding Const and "
            "Variable casts)" % (s["converted"], s["total_nodes"], dtype, s["casts_to_lowered"],
                                 dtype))
    return [block, line, "Nodes converted to %s: %s" % (dtype, ", ".join(s["converted_nodes"]))]


def restore_arguments(args, kwargs):
    """Arguments with every lowered value back in float32 (what a function receives)."""
    leaves = _nest.flatten((args, kwargs))
    if not any(_core.amp_is_lowered(x) for x in leaves):
        return args, kwargs
    return _nest.map_structure(_core.amp_restore, (args, kwargs))


_subs = threading.local()  # .rewrites: (converted ops, summary) of loop sub-graphs of
                           # the trace being made on this thread


def _sub_rewrites():
    if not hasattr(_subs, "rewrites"):
        _subs.rewrites = []
    return _subs.rewrites


def begin_trace():
    """A function starts tracing: loop sub-graphs rewritten from now on join its summary."""
    del _sub_rewrites()[:]


def rewrite_subgraph(graph, summarize=True):
    """The pass on a loop's body or condition (src/mixprec/_loops.py), rewritten like the
    function's graph (inputs and outputs keep their dtypes: the loop variables stay as
    traced); its counts join the function's summary (not for a body traced at a call)."""
    if not state.active():
        return
    state.refresh()
    ops, s = _core.amp_graph_rewrite(graph, state.bf16())
    if summarize:
        _sub_rewrites().append((list(ops), dict(s)))


def rewrite_graph(graph, name):
    """The pass on a traced function (``mixprec._function.graph_passes``): TensorFlow's
    colouring applied to the graph before its first replay, and the summary logged."""
    global last_summary
    if not state.active():
        return None
    state.refresh()  # TensorFlow reads the list variables when the pass runs
    ops, s = _core.amp_graph_rewrite(graph, state.bf16())
    s = dict(s)
    ops = list(ops)
    for sub_ops, sub in _sub_rewrites():  # the function's loops are part of its graph
        ops += sub_ops
        for k, v in sub.items():
            if isinstance(v, int) and isinstance(s.get(k), int):
                s[k] += v
    del _sub_rewrites()[:]
    s["converted_nodes"] = [n for n in node_names(ops) if n]
    s["dtype"] = state.lowered_dtype_name()
    s["function"] = name
    last_summary = s
    # a function that creates variables is traced twice on its first call: one summary
    key = (name, tuple(sorted((k, v) for k, v in s.items() if k != "converted_nodes")))
    if key not in _logged_graphs:
        _logged_graphs.add(key)
        for line in summary_lines(s):
            runtime_logger().info(line)
    return s
