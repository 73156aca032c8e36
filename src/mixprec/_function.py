"""``mixprec.function`` (tf.function): trace once per input signature, replay in C.

Owns the signature rules (TensorFlow's: tensor shapes/dtypes, Python values, structure,
``input_signature``, ``reduce_retracing``), the trace/replay cycle over ``_core.Graph``
(csrc/graph.h), graph breaks (fall back to eager per signature, one warning naming the
line) and ``ConcreteFunction``. It must not compute tensor values itself.

The call that traces runs the Python function for real while the core records it (so a
graph break just lets the rest of that call run eagerly); later calls replay. A second
trace (TensorFlow's, for functions that create variables) and get_concrete_function trace
"dry": ops execute for shapes, but variable writes, optimizer steps and ``tf.print`` are
only recorded. So Python side effects happen at tracing only, state changes at every call,
exactly once.
"""

import functools
import inspect
import os
import threading
import types
import warnings
import weakref

import numpy as np

from mixprec import _core, _nest, _user_errors
from mixprec._amp import graph_pass as _amp_pass
from mixprec._amp import state as _amp_state
from mixprec import _retracing
from mixprec import _remapper
from mixprec._dtypes import as_dtype
from mixprec._shape import TensorShape

__all__ = ["function", "Function", "ConcreteFunction", "TensorSpec", "untraced"]

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_state = threading.local()


class TensorSpec:
    """``tf.TensorSpec``: a shape (dims may be None) and a dtype."""

    def __init__(self, shape, dtype="float32", name=None):
        self.shape = TensorShape(shape)
        self.dtype = as_dtype(dtype)
        self.name = name

    @classmethod
    def from_tensor(cls, tensor, name=None):
        # (inside a traced function: the static shape, None where relaxed)
        shape = _core.static_shape(tensor) if _is_tensor(tensor) else tensor.shape
        if name is None and _is_tensor(tensor) and _core.graph_recording() is not None:
            # a traced argument is named as its placeholder (TensorFlow's "x")
            entry = (getattr(_state, "input_names", None) or {}).get(id(tensor))
            name = entry[0].rsplit(":", 1)[0] if entry else None
        return cls(shape, tensor.dtype, name)

    def is_compatible_with(self, x):
        shape = x.shape if not isinstance(x, TensorSpec) else x.shape
        return as_dtype(x.dtype) == self.dtype and self.shape.is_compatible_with(shape)

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self.dtype == other.dtype
                and self.shape.as_list() == other.shape.as_list() if self.shape.rank is not None
                and other.shape.rank is not None else isinstance(other, TensorSpec)
                and self.dtype == other.dtype and self.shape.rank == other.shape.rank)

    def __hash__(self):
        return hash((self.dtype.name, str(self.shape)))

    def __repr__(self):
        return "TensorSpec(shape=%s, dtype=tf.%s, name=%r)" % (
            _shape_text(self.shape), self.dtype.name, self.name)


def _shape_text(shape):
    if shape.rank is None:
        return "<unknown>"
    dims = shape.as_list()
    return "(" + ", ".join("None" if d is None else str(d) for d in dims) + \
        ("," if len(dims) == 1 else "") + ")"


class untraced:
    """Context: host-side bookkeeping (reading hyperparameters) that a trace must not
    record nor treat as a graph break."""

    def __enter__(self):
        self._tok = _core.graph_suspend()
        return self

    def __exit__(self, *exc):
        _core.graph_resume(self._tok)
        return False


def tracing():
    """True while a function traces on this thread."""
    return _core.graph_recording() is not None


def checked_shape(x):
    """``x.shape`` for a check that bakes nothing into the trace (comparing with a spec
    whose open dimensions it skips): not counted as a shape read, so a shape-free graph
    stays replayable at other shapes (docs/architecture.md)."""
    tok = _core.graph_suspend()
    try:
        return x.shape
    finally:
        _core.graph_resume(tok)


def _on_break(reason):
    """Called by the core at the first host read of a traced value: remember the line."""
    site = "<unknown>"
    import sys
    f = sys._getframe(1)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(_PKG_DIR + os.sep):
            site = "%s:%d" % (f.f_code.co_filename, f.f_lineno)
            break
        f = f.f_back
    if getattr(_state, "break_site", None) is None:
        _state.break_site = (site, reason)


_core._set_graph_break_hook(_on_break)

# Breaks that are the documented way a construct runs, not a surprise: no warning.
# tf.distribute: strategy.run over several GPUs or processes (their replicas run at once,
# summing through the collectives), or meeting a construct that needs the replicas at once
# (docs/distribute.md); on logical CPUs it traces (distribute/_traced.py).
_SILENT_BREAKS = ("tf.distribute:",)

# Graph passes run on every traced graph after recording and before its first replay:
# callables pass(graph: _core.Graph, name: str) (the automatic-mixed-precision rewrite
# registers itself here). A pass may change dtypes and insert casts (csrc/graph.h).
# The remapper's fusions run after the AMP rewrite (Grappler's order), so the rewrite and
# its lists see Conv2D / MatMul as TensorFlow's pass does.
graph_passes = [_amp_pass.rewrite_graph, _remapper.fuse_graph]
# Passes on a loop's body and condition sub-graphs (src/mixprec/_loops.py), run when each
# is recorded: pass(graph, summarize) (summarize: False for a body traced at a call).
loop_graph_passes = [_amp_pass.rewrite_subgraph, _remapper.fuse_subgraph]
# Predicates: when one returns True, a new signature traces dry (no state change) and the
# call's results come from the first replay, so a pass's effect shows from the first call.
dry_first_trace = [_amp_state.active]


_run_eagerly = [False]


def run_functions_eagerly(run_eagerly):
    """``tf.config.run_functions_eagerly``: every Function runs its Python body at every
    call (no tracing), for debugging."""
    _run_eagerly[0] = bool(run_eagerly)


def functions_run_eagerly():
    return _run_eagerly[0]


# ---------------------------------------------------------------------------- signatures

def _is_tensor(x):
    return isinstance(x, _core.Tensor)


def _fast_key(args, ts):
    """A key for positional arguments made of tensors, None and tuples/lists of them
    (appending the tensors to ts in order), or None for anything else."""
    key = []
    for a in args:
        if type(a) is _core.Tensor:
            key.append(a._sig)
            ts.append(a)
        elif a is None:
            key.append(None)
        elif _is_distributed(a):
            vals = a.values
            if any(type(v) is not _core.Tensor for v in vals):
                return None
            key.append((type(a), tuple(v._sig for v in vals), _aliasing(vals)))
            ts.extend(vals)
        elif type(a) in (tuple, list):
            sub = _fast_key(a, ts)
            if sub is None:
                return None
            key.append((type(a) is list, sub))
        else:
            return None
    return tuple(key)


def _is_distributed(x):
    """A tf.distribute PerReplica/Mirrored value (its class says so; no import cycle)."""
    return getattr(type(x), "_mp_distributed_value", False)


def _aliasing(vals):
    """Which components of a distributed value are the same object (the first index of
    each): a graph input stands for one tensor, so this is part of the trace's key."""
    return tuple(next(j for j, u in enumerate(vals) if u is v) for v in vals)


def _leaf_key(x, relax):
    """(key, is_input) of one leaf of the arguments."""
    if _is_tensor(x):
        shape = (None,) * x.ndim if relax else tuple(x.shape.as_list())
        return ("T", x.dtype.name, shape), True
    if _is_distributed(x):
        # keyed by its components' specs, as TensorFlow's PerReplicaSpec: a distributed
        # batch of the same shapes replays the trace instead of tracing every step
        return ("D", type(x).__qualname__,
                tuple(_leaf_key(_to_tensor_leaf(v), relax)[0] for v in x.values),
                _aliasing(x.values)), False
    if isinstance(x, _core.Variable):
        return ("V", id(x)), False
    if isinstance(x, _dataset_iterator()):
        # an iterator over a dataset: traced by its dataset (TensorFlow: by its element
        # spec), so a new iterator over the same dataset replays, iterating itself
        return ("I", id(x._dataset)), False
    if isinstance(x, _dataset()):
        # TensorFlow's DatasetSpec: by element spec, so another dataset of the same spec
        # replays (the loop iterating it is pointed at the call's dataset)
        try:
            spec = x.element_spec
        except Exception:  # noqa: BLE001 - no spec known: traced by identity
            return ("H", type(x).__qualname__, id(x)), False
        return ("DS", repr(_nest.map_structure(lambda s: 0, spec)),
                tuple((s.dtype.name, None if s.shape.rank is None else tuple(s.shape.as_list()))
                      for s in _nest.flatten(spec))), False
    if isinstance(x, (bool, int, float)):
        # TensorFlow's Literal: by value, so 1, True and 1.0 share a trace
        return ("P", "number", x), False
    if isinstance(x, (str, bytes, type(None))):
        return ("P", type(x).__name__, x), False
    if isinstance(x, np.generic):
        return ("P", type(x).__name__, x.item()), False
    try:
        hash(x)
        return ("H", type(x).__qualname__, id(x)), False
    except TypeError:
        return ("O", type(x).__qualname__, id(x)), False


def _dataset_iterator():
    from mixprec.data.dataset import DatasetIterator
    return DatasetIterator


def _dataset():
    from mixprec.data.dataset import Dataset
    return Dataset


def _key_fits(traced, given):
    """A call's exact key `given` fits the trace key `traced` (None dims and an unknown
    rank take any size)."""
    if len(traced) != len(given):
        return False
    for a, b in zip(traced, given):
        if a == b:
            continue
        if not (a[0] == "T" == b[0] and a[1] == b[1]):
            return False
        if a[2] is not None and (b[2] is None or len(a[2]) != len(b[2]) or any(
                d is not None and d != e for d, e in zip(a[2], b[2]))):
            return False
    return True


def _key_supertype(a, b):
    """The most specific key both fit (TensorSpec's most_specific_common_supertype per
    tensor), or None when a non-tensor part differs."""
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b):
        if x == y:
            out.append(x)
        elif x[0] == "T" == y[0] and x[1] == y[1]:
            if x[2] is None or y[2] is None or len(x[2]) != len(y[2]):
                out.append(("T", x[1], None))
            else:
                out.append(("T", x[1], tuple(d if d == e else None for d, e in zip(x[2], y[2]))))
        else:
            return None
    return tuple(out)


def _generality(key):
    return sum(100 if k[2] is None else sum(d is None for d in k[2])
               for k in key if k[0] == "T")


def _spec_fits(traced, given):
    """A DatasetSpec key `given` is a subtype of `traced` (None dims take any size)."""
    if traced[1] != given[1] or len(traced[2]) != len(given[2]):
        return False
    for (da, sa), (db, sb) in zip(traced[2], given[2]):
        if da != db:
            return False
        if sa is None:
            continue
        if sb is None or len(sa) != len(sb) or any(a is not None and a != b
                                                  for a, b in zip(sa, sb)):
            return False
    return True


def _structure_key(x):
    if isinstance(x, dict):
        return ("dict", tuple(sorted(map(repr, x))))
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__qualname__, tuple(_structure_key(v) for v in x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(_structure_key(v) for v in x))
    return None


def _to_tensor_leaf(x):
    # NumPy arrays and NumPy scalars are tensors (TensorFlow 2.21: f(x, np.float32(2)) is
    # a float32 tensor argument)
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "biuf":
        return _core.convert_to_tensor(x)
    if _is_distributed(x) and any(isinstance(v, np.ndarray) for v in x.values):
        return type(x)([_to_tensor_leaf(v) for v in x.values])
    return x


def _input_tensors(flat):
    """The graph inputs among flat leaves: tensors, and the tensor components of
    distributed values (a PerReplica batch), in order."""
    out = []
    for x in flat:
        if _is_tensor(x):
            out.append(x)
        elif _is_distributed(x):
            out.extend(v for v in x.values if _is_tensor(v))
    return out


def _input_statics(key, inputs, names):
    """The static shape of each graph input (None dims; None when fully known): an
    input_signature's TensorSpec, a relaxed trace key's shape (reduce_retracing,
    get_concrete_function with None dims); an unknown rank has every dimension None."""
    out = [None] * len(inputs)
    for i, x in enumerate(inputs):
        spec = (names or {}).get(id(x), (None, None))[1]
        if spec is not None and (spec.rank is None or None in spec):
            out[i] = [None] * x.ndim if spec.rank is None or len(spec) != x.ndim else list(spec)
    if key is None:
        return out
    shapes = []
    for k in key[1]:
        if k[0] == "T":
            shapes.append(k[2])
        elif k[0] == "D":
            shapes.extend(c[2] if c[0] == "T" else () for c in k[2])
    if len(shapes) != len(inputs):
        return out
    for i, (x, shape) in enumerate(zip(inputs, shapes)):
        if out[i] is not None:
            continue
        if shape is None:
            out[i] = [None] * x.ndim if x.ndim else None
        elif None in shape and len(shape) == x.ndim:
            out[i] = list(shape)
    return out


class _Trace:
    """One traced signature: its graph (or None when it broke) and the output template."""

    __slots__ = ("graph", "outputs", "n_out", "eager", "specs", "keepalive", "shapes", "gvars",
                 "gkeep", "generic", "gsources", "gvariants", "key", "gstatic")

    def __init__(self):
        self.graph = None
        self.outputs = None
        self.eager = False
        self.specs = None
        self.keepalive = None
        self.shapes = {}
        self.gvars = {}  # id(graph) -> the variable arguments it was traced with
        self.gkeep = {}  # id(graph) -> its outputs' template (Python values kept as traced)
        # id(graph) -> [(k, loop source)]: a loop iterating the k-th iterator argument,
        # pointed at the call's iterator before each replay
        self.gsources = {}
        # a relaxed signature's graph that two traces at different shapes recorded alike:
        # replayed for every shape (polymorphic) instead of running Python again
        self.generic = {}  # the inputs' ranks -> that graph (an unknown rank has several)
        # shape key -> the graphs recorded for it at other tensor-bound slice shapes
        self.gvariants = {}
        self.key = None    # the trace key (its relaxed shapes: the inputs' static shapes)
        self.gstatic = {}  # id(graph) -> its tensor outputs' static shapes (None dims)


_MAX_VALUE_VARIANTS = 8  # graphs kept per signature for a function baking a slice's size

_SINGLETON = (
    "tf.function only supports singleton tf.Variables created on the first call. Make sure "
    "the tf.Variable is only created once or created outside tf.function. See "
    "https://www.tensorflow.org/guide/function#creating_tfvariables for more information.")


class Function:
    """A callable wrapping ``python_function`` (TensorFlow's ``tf.types.experimental.Function``)."""

    def __init__(self, python_function, input_signature=None, jit_compile=None,
                 reduce_retracing=False, autograph=True, name=None, **kwargs):
        if input_signature is not None:
            if not isinstance(input_signature, (list, tuple)):
                raise TypeError("input_signature must be either a tuple or a list, got %s."
                                % type(input_signature))
            for s in _nest.flatten(list(input_signature)):
                if not isinstance(s, TensorSpec):
                    bad = [x for x in _nest.flatten(list(input_signature))
                           if not isinstance(x, TensorSpec)]
                    raise TypeError("input_signature must be a possibly nested sequence of "
                                    "TensorSpec objects, got invalid args %r with types %r."
                                    % (bad, [type(x) for x in bad]))
        self._python_function = python_function
        self._autograph = bool(autograph)
        # Keras' step functions: the batch dimension is relaxed from the first trace on, as
        # tf-keras traces them for its dataset's element spec (batch None)
        self._relax_batch = bool(kwargs.pop("_relax_batch", False))
        self._converted = None           # the autograph form, made at the first trace
        self.input_signature = None if input_signature is None else list(input_signature)
        self.jit_compile = jit_compile
        self.reduce_retracing = bool(reduce_retracing or kwargs.get("experimental_relax_shapes"))
        self.experimental_options = kwargs
        self._name = name or getattr(python_function, "__name__", "function")
        self._traces = {}
        self._fast = {}                  # exact positional signature -> (trace, graph)
        self._tls = threading.local()    # .vars: variable arguments of the call being prepared
        self._tracing_count = 0
        self._variables_traced = False   # the first trace happened (variables may be made)
        self._seen = {}                  # reduce_retracing: relaxed key -> a key traced before
        self._rr_keys = {}               # reduce_retracing: structure -> trace keys made
        self._spec_keys = []             # relaxed keys traced by get_concrete_function
        self._inlined = set()            # signatures first met inlined in another trace
        self._retracing = _retracing.detector_for(python_function)
        self._concrete = {}              # trace key -> its ConcreteFunction (one object)
        self._descriptor_cache = weakref.WeakKeyDictionary()
        self._warned = set()
        try:
            self._signature = inspect.signature(python_function)
        except (TypeError, ValueError):
            self._signature = None
        functools.update_wrapper(self, python_function)

    @property
    def python_function(self):
        return self._python_function

    def __deepcopy__(self, memo):
        # a copy starts without traces (graphs refer to the original's variables)
        import copy
        return Function(copy.deepcopy(self._python_function, memo),
                        input_signature=self.input_signature, jit_compile=self.jit_compile,
                        reduce_retracing=self.reduce_retracing, autograph=self._autograph,
                        **self.experimental_options)

    @property
    def function_spec(self):
        return self._signature

    def __get__(self, instance, owner):
        # as TensorFlow: obj.method is a Function whose python_function is the bound method,
        # one per instance (each keeps its own traces)
        if instance is None:
            return self
        try:
            f = self._descriptor_cache.get(instance)
        except TypeError:
            f = None
        if f is None:
            f = Function(types.MethodType(self._python_function, instance),
                         input_signature=self.input_signature, jit_compile=self.jit_compile,
                         reduce_retracing=self.reduce_retracing, autograph=self._autograph,
                        **self.experimental_options)
            try:
                self._descriptor_cache[instance] = f
            except TypeError:
                pass
        return f

    # ------------------------------------------------------------------ binding

    def _bind(self, args, kwargs):
        """(values in parameter order, a function rebuilding (args, kwargs) from them)."""
        if self._signature is None:
            keys = sorted(kwargs)
            vals = tuple(args) + tuple(kwargs[k] for k in keys)
            n = len(args)
            return vals, lambda v: (tuple(v[:n]), dict(zip(keys, v[n:])))
        try:
            b = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError("Binding inputs to tf.function failed due to `%s`. Received args: %r "
                            "and kwargs: %r for signature: %s." % (e, args, kwargs,
                                                                   self._signature)) from None
        b.apply_defaults()
        names = list(b.arguments)

        def rebuild(v):
            for k, x in zip(names, v):
                b.arguments[k] = x
            return b.args, b.kwargs
        return tuple(b.arguments.values()), rebuild

    def _apply_signature(self, args, kwargs):
        """Converts the call against input_signature (TensorFlow's TypeError otherwise)."""
        sig = self.input_signature
        if kwargs:
            # keyword arguments bind to the signature's parameter names
            bound, _ = self._bind(args, kwargs)
            args = bound[:len(sig)] if len(bound) >= len(sig) else bound
            kwargs = {}
        if len(args) != len(sig):
            raise TypeError("Binding inputs to tf.function failed due to `too many positional "
                            "arguments`. Received args: %r and kwargs: %r for signature: (%s)."
                            % (args, kwargs, self._sig_text()) if len(args) > len(sig) else
                            "Binding inputs to tf.function failed due to `missing a required "
                            "argument`. Received args: %r and kwargs: %r for signature: (%s)."
                            % (args, kwargs, self._sig_text()))
        out = []
        for a, s in zip(args, sig):
            if _nest.is_nested(s) and _structure_key(a) != _structure_key(
                    _nest.map_structure(lambda x: None, s)):
                # another nesting than the signature's (a list for its tuple): TensorFlow's
                # TypeError, not a trace of another structure
                raise TypeError("Binding inputs to tf.function failed due to `Can not cast %r "
                                "to %r`. Received args: %r and kwargs: %r for signature: (%s)."
                                % (a, s, args, kwargs, self._sig_text()))
            out.append(_nest.map_structure(lambda v, sp: self._conform(v, sp, args, kwargs),
                                           a, s) if _nest.is_nested(s) else
                       self._conform(a, s, args, kwargs))
        return tuple(out)

    def _sig_text(self):
        names = list(self._signature.parameters) if self._signature else []
        parts = []
        for i, s in enumerate(self.input_signature):
            parts.append("%s: %r" % (names[i] if i < len(names) else "arg%d" % i, s))
        return ", ".join(parts)

    def _conform(self, v, spec, args, kwargs):
        def fail(what):
            raise TypeError("Binding inputs to tf.function failed due to `Can not cast %s to %r`. "
                            "Received args: %r and kwargs: %r for signature: (%s)."
                            % (what, spec, args, kwargs, self._sig_text()))
        if isinstance(v, _core.Variable):
            v = v.read_value()
        if _is_tensor(v):
            if v.dtype != spec.dtype or not spec.shape.is_compatible_with(v.shape):
                fail("TensorSpec(shape=%s, dtype=tf.%s, name=None)" % (_shape_text(v.shape),
                                                                      v.dtype.name))
            return v
        try:
            if isinstance(v, np.ndarray) or isinstance(v, (list, tuple, int, float, np.generic)):
                arr = np.asarray(v)
                if arr.dtype == object or (arr.dtype.kind in "fc" and not spec.dtype.is_floating):
                    fail(repr(v))
                t = _core.convert_to_tensor(arr.astype(spec.dtype.as_numpy_dtype)
                                            if arr.dtype.kind != "b" or spec.dtype.name == "bool"
                                            else arr, spec.dtype)
            else:
                fail(repr(v))
        except (TypeError, ValueError) as e:
            if "Binding inputs" in str(e):
                raise
            fail(repr(v))
        if not spec.shape.is_compatible_with(t.shape):
            fail("TensorSpec(shape=%s, dtype=tf.%s, name=None)" % (_shape_text(t.shape),
                                                                  t.dtype.name))
        return t

    def _key(self, bound):
        """(signature key, exact-shape key, flat leaves, tensor leaves)."""
        flat = _nest.flatten(list(bound))
        flat = [_to_tensor_leaf(x) for x in flat]
        exact = []
        seen_vars = []
        for x in flat:
            if isinstance(x, _core.Variable):
                # TensorFlow's VariableSpec: a variable argument is traced by its shape and
                # dtype (another of the same spec replays the graph on itself), and by which
                # arguments are the same variable
                same = next((i for i, v in enumerate(seen_vars) if v is x), len(seen_vars))
                seen_vars.append(x)
                exact.append(("V", x.true_dtype.name, tuple(x.shape.as_list()), same))
            else:
                exact.append(_leaf_key(x, False)[0])
        struct = _structure_key(list(bound))
        return (struct, tuple(exact)), flat

    # ------------------------------------------------------------------ calling

    def _prepare(self, args, kwargs):
        """(trace key, shape key, call args, call kwargs, tensor inputs): NumPy arrays
        among the arguments become tensors (graph inputs, as TensorFlow's)."""
        if self.input_signature is not None:
            bound = self._apply_signature(args, kwargs)
            rebuild = lambda v: (tuple(v), {})  # noqa: E731
        else:
            bound, rebuild = self._bind(args, kwargs)
            conv = _nest.map_structure(_to_tensor_leaf, list(bound))
            bound = tuple(conv)
        (struct, exact), flat = self._key(bound)
        tkey = (struct, self._trace_key(exact, struct))
        inputs = _input_tensors(flat)
        variables = [x for x in flat if isinstance(x, _core.Variable)]
        shape_key = tuple(tuple(t.shape.as_list()) + (t.dtype.name,) for t in inputs)
        if variables:
            shape_key += tuple(k for k in exact if k[0] == "V")
        call_args, call_kwargs = rebuild(bound)
        self._tls.call = (call_args, call_kwargs)
        self._tls.vars = variables
        self._tls.names = (bound, inputs)
        self._tls.iters = [x for x in flat if isinstance(x, (_dataset_iterator(), _dataset()))] \
            if any(k[0] in ("I", "DS") for k in exact) else []
        return tkey, shape_key, call_args, call_kwargs, inputs

    def __call__(self, *args, **kwargs):
        if _amp_state.active():  # values autocast lowered enter as the float32 they stand for
            args, kwargs = _amp_pass.restore_arguments(args, kwargs)
        eager = _run_eagerly[0] or getattr(_state, "eager_here", False)  # (a GPU replica thread)
        if not kwargs and not eager:
            # fast path: positional tensors (in tuples/lists, None allowed) seen before
            ts = []
            key = _fast_key(args, ts)
            if key is not None:
                hit = self._fast.get(key)
                if hit is not None and _core.graph_recording() is None and not (
                        hit[1].python_grads and _core.graph_tape_recording()):
                    try:
                        outs = hit[1].run(ts)
                    except Exception:
                        if not hit[1].value_shape_miss:
                            raise
                        # a tensor-bound slice took another shape: the slow path below
                    else:
                        self._retracing.untraced()
                        return self._pack(hit[0], outs)
        if eager:
            if self.input_signature is not None:
                args, kwargs = self._apply_signature(args, kwargs), {}
            return self._run_eagerly(args, kwargs)
        tkey, shape_key, call_args, call_kwargs, inputs = self._prepare(args, kwargs)
        trace = self._traces.get(tkey)
        if trace is None and self._spec_keys:
            k = self._spec_trace(tkey)
            if k is not None:
                tkey, trace = k, self._traces.get(k)
        if trace is None and any(k[0] == "DS" for k in tkey[1]):
            k = self._dataset_supertype(tkey)
            if k is not None:
                tkey, trace = k, self._traces.get(k)
        if trace is not None and trace.eager:
            return self._run_eagerly(call_args, call_kwargs)
        if _core.graph_recording() is None:
            before = self._tracing_count
            try:
                return self._call_traced(args, kwargs, tkey, trace, shape_key, call_args,
                                         call_kwargs, inputs)
            finally:
                if self._tracing_count != before:
                    self._retracing.traced(self._python_function)
                else:
                    self._retracing.untraced()
        return self._call_traced(args, kwargs, tkey, trace, shape_key, call_args, call_kwargs,
                                 inputs)

    def _call_traced(self, args, kwargs, tkey, trace, shape_key, call_args, call_kwargs, inputs):
        if _core.graph_recording() is not None:
            # called while another function traces: inlined there (converted as well);
            # TensorFlow traces it then (its count grows once per new signature)
            if trace is None and tkey not in self._inlined:
                self._inlined.add(tkey)
                self._tracing_count += 1
            return self._traceable()(*call_args, **call_kwargs)
        g = trace.shapes.get(shape_key) if trace is not None else None
        if g is None and trace is not None and trace.generic:
            # a shape not seen, under a relaxed signature: no Python
            g = trace.generic.get(tuple(len(k) for k in shape_key))
        if g is None:
            out = self._trace_and_run(tkey, trace, shape_key, call_args, call_kwargs, inputs)
            trace = self._traces.get(tkey)
            g = trace.shapes.get(shape_key) if trace is not None and not trace.eager else None
            self._maybe_generic(tkey, trace, g, shape_key)
        else:
            try:
                out = self._replay(trace, g, inputs)
            except Exception:
                if not g.value_shape_miss:
                    raise
                g, out = self._value_shape_variant(trace, g, shape_key, call_args, call_kwargs,
                                                   inputs)
        if g is not None and not kwargs:
            ts = []
            key = _fast_key(args, ts)
            if key is not None and len(ts) == len(inputs) and all(
                    a is b for a, b in zip(ts, inputs)):
                self._fast[key] = (trace, g)
        return out

    def _value_shape_variant(self, trace, g, shape_key, call_args, call_kwargs, inputs):
        """A replay of g stopped (before any state change) because a tensor-bound slice
        (``x[i:j]`` of traced bounds) took another shape than traced, and g holds sizes
        taken from it (a gradient's broadcast, a reshape). Replays another graph recorded
        for this signature that fits, or records one more by running the Python function
        again (not counted as a trace). When two such graphs are the same up to those
        sizes, nothing was baked: the graph then replays every bound. (graph, outputs)."""
        variants = trace.gvariants.setdefault(shape_key, [g])
        for h in variants:
            if h is g:
                continue
            try:
                out = self._replay(trace, h, inputs)
            except Exception:
                if h.value_shape_miss:
                    continue
                raise
            trace.shapes[shape_key] = h
            return h, out
        call_vars = list(getattr(self._tls, "vars", ()))
        h, out = self._trace_once(trace, call_args, call_kwargs, inputs, count=False, dry=False)
        if h is None:  # the graph broke: this call ran eagerly, and so will later ones
            trace.eager = True
            return None, out
        trace.gvars[id(h)] = call_vars
        if h.same_structure(g):
            h.value_baked = False
            variants[:] = [h]
        else:
            variants.append(h)
            del variants[:-_MAX_VALUE_VARIANTS]
        trace.shapes[shape_key] = h
        return h, out

    def _maybe_generic(self, tkey, trace, g, shape_key):
        """A relaxed signature records a graph per concrete shape; when two of them (this
        one and one at another shape, of this trace or of the exact trace before it under
        reduce_retracing) are the same graph up to shapes, with the same Python outputs, no
        shape was baked in: this graph then replays every shape (docs/function.md)."""
        ranks = tuple(len(k) for k in shape_key)
        if g is None or trace is None or ranks in trace.generic or not any(
                k[0] == "T" and (k[2] is None or None in k[2]) for k in tkey[1]):
            return
        from mixprec._loops import shape_free
        if shape_free(g):
            # TensorFlow traces once for the relaxed signature: a graph in which no shape
            # was baked replays every shape from the first trace on
            g.polymorphic = True
            trace.generic[ranks] = g
            return
        others = [(h, trace) for h in trace.shapes.values() if h is not g]
        if self.reduce_retracing and self.input_signature is None:
            first = self._seen.get(tkey[1])
            t0 = self._traces.get((tkey[0], first)) if first is not None else None
            if t0 is not None and not t0.eager:
                others += [(h, t0) for h in t0.shapes.values()]
        mine = trace.gkeep.get(id(g))
        for h, t in others:
            theirs = t.gkeep.get(id(h))
            if mine is None or theirs is None or len(mine) != len(theirs) or not all(
                    isinstance(a, _OutSlot) and isinstance(b, _OutSlot) or
                    not isinstance(a, _OutSlot) and not isinstance(b, _OutSlot) and
                    _same_value(a, b) for a, b in zip(mine, theirs)):
                continue
            if g.same_structure(h):
                g.polymorphic = True
                trace.generic[ranks] = g
                return

    def _trace_key(self, exact, struct=None):
        """The key traces are kept under: exact shapes, or relaxed ones (input_signature,
        reduce_retracing after a second shape)."""
        if self.input_signature is not None:
            return tuple(("T", k[1], None) if k[0] == "T" else k for k in exact)
        if not self.reduce_retracing:
            return exact
        # TensorFlow's reduce_retracing: a call that fits a trace uses the most specific
        # one; a miss traces the most specific common supertype of its signature and every
        # signature traced so far ((2, 2) then (2, 3) traces (2, None); (3, 3) next traces
        # (None, None); another rank traces an unknown rank)
        keys = self._rr_keys.setdefault(struct, [])
        fits = [k for k in keys if _key_fits(k, exact)]
        if fits:
            return min(fits, key=_generality)
        relaxed, base = exact, None
        if self._relax_batch and not keys:
            relaxed = tuple(("T", k[1], (None,) + tuple(k[2][1:]))
                            if k[0] == "T" and k[2] else k for k in exact)
        for k in keys:
            sup = _key_supertype(relaxed, k)
            if sup is not None:
                relaxed, base = sup, k
        keys.append(relaxed)
        if base is not None:
            self._seen[relaxed] = base  # a trace made before: _maybe_generic compares
        return relaxed

    def _replay(self, trace, g, inputs):
        if g.python_grads and _core.graph_tape_recording():
            # a recording tape would take the replayed ops' own gradients where the function
            # has Python ones (tf.custom_gradient, tf.py_function): this call runs the Python
            # function, its ops and custom gradients on the tape (docs/function.md)
            args, kwargs = getattr(self._tls, "call", ((), {}))
            return self._run_eagerly(args, kwargs)
        for k, src in trace.gsources.get(id(g), ()):
            src.rebind(self._tls.iters[k])
        traced_vars = trace.gvars.get(id(g))
        now = getattr(self._tls, "vars", ())
        if traced_vars and any(a is not b for a, b in zip(traced_vars, now)):
            outs = g.run(inputs, list(traced_vars), list(now))
        else:
            outs = g.run(inputs)
        return self._pack(trace, outs)

    def _pack(self, trace, outs):
        it = iter(outs)
        leaves = [next(it) if isinstance(x, _OutSlot) else x.build(it) if isinstance(
            x, _DistSlot) else x for x in trace.keepalive]
        return _nest.pack_sequence_as(trace.outputs, leaves)

    def _trace_and_run(self, tkey, trace, shape_key, call_args, call_kwargs, inputs):
        new_trace = trace is None
        if new_trace:
            trace = _Trace()
            trace.key = tkey
        call_vars = list(getattr(self._tls, "vars", ()))  # (a nested call prepares its own)
        first_ever = not self._variables_traced
        # the call itself is the trace: it runs for real (side effects once) while recording;
        # or, when a registered predicate asks (a pass whose results must show from the first
        # call on), it traces dry and the call's results come from the first replay
        dry = any(p() for p in dry_first_trace)
        # host calls (tf.py_function) of this trace: a dry trace after it takes their
        # results instead of calling the Python function again (once per call)
        log, _state.host_call_log = getattr(_state, "host_call_log", None), []
        try:
            g, result = self._trace_once(trace, call_args, call_kwargs, inputs,
                                         count=new_trace, dry=dry)
        finally:
            calls, _state.host_call_log = _state.host_call_log, log
        self._variables_traced = True
        self._traces[tkey] = trace
        if g is None:
            trace.eager = True
            if dry:  # the dry trace changed no state: run the call for real, eagerly
                return self._run_eagerly(call_args, call_kwargs)
            return result
        if g.n_created_variables:
            if not (first_ever and new_trace):
                raise ValueError(_SINGLETON)
            # TensorFlow traces a function that creates variables twice on its first call
            # (creating them again then is its ValueError); the second trace is dry: it
            # changes no state
            memo, _state.host_call_memo = getattr(_state, "host_call_memo", None), iter(calls)
            try:
                g2, _ = self._trace_once(trace, call_args, call_kwargs, inputs, count=True,
                                         dry=True)
            finally:
                _state.host_call_memo = memo
            if g2 is None:
                trace.eager = True
                return self._run_eagerly(call_args, call_kwargs) if dry else result
            if g2.n_created_variables:
                raise ValueError(_SINGLETON)
            g = g2
        trace.shapes[shape_key] = g
        trace.gvars[id(g)] = call_vars
        if dry:
            self._tls.vars = call_vars
            return self._replay(trace, g, inputs)
        return result

    def _traceable(self):
        """The Python function as traced: its autograph form (src/mixprec/_autograph.py: a
        Python `if` on a traced tensor traces both branches, the replay selects on the
        device), or itself with autograph=False."""
        if self._converted is None:
            from mixprec import _autograph
            self._converted = _autograph.convert(self._python_function) if self._autograph \
                else self._python_function
        return self._converted

    def _run_eagerly(self, call_args, call_kwargs):
        """The Python function run op by op (a signature whose graph broke); under automatic
        mixed precision as a rewritten function: autocast, float32 results (mixprec._amp)."""
        if _amp_state.active() and _core.graph_recording() is None:
            f = self._python_function
            return _amp_pass.call(getattr(f, "__func__", f), "", f, call_args, call_kwargs)
        return self._python_function(*call_args, **call_kwargs)

    def _trace_once(self, trace, call_args, call_kwargs, inputs, count, dry):
        """Runs the Python function once under a recording (dry: variable writes, optimizer
        steps and prints recorded only). (graph, result), or (None, result) when it broke:
        the rest of the call then ran eagerly (a dry trace that broke is run again, for
        real)."""
        if count:
            self._tracing_count += 1
        _amp_pass.begin_trace()
        g = _core.Graph()
        _state.break_site = None
        fn = self._traceable()
        outer, _state.graph = getattr(_state, "graph", None), g
        outer_names, _state.input_names = getattr(_state, "input_names", None), \
            self._input_names(inputs)
        iters = list(getattr(self._tls, "iters", ()))
        outer_sources, _state.arg_sources = getattr(_state, "arg_sources", None), (iters, [])
        g.begin(dry)
        try:
            for x in inputs:  # (a distributed argument's components among them)
                g.add_input(x)
            # TensorFlow's static shapes: a relaxed dimension is None while tracing
            for x, shape in zip(inputs, _input_statics(
                    trace.key if self.input_signature is None else None, inputs,
                    _state.input_names or self._signature_names(inputs))):
                if shape is not None:
                    _core.graph_set_static(x, shape)
            framed = None
            try:
                out = fn(*call_args, **call_kwargs)
            except Exception as e:
                # TensorFlow re-raises it framed: "in user code:", the user's frames
                framed = _user_errors.in_user_code(e) if self._autograph else None
                if framed is None:
                    raise
            if framed is not None:  # (raised outside the handler: no context chain)
                raise framed
            if not g.broken:
                out, keep = self._outputs(g, out)
                trace.gstatic[id(g)] = [_core.static_shape(x) for x in _nest.flatten(out)
                                        if _is_tensor(x)]
        except BaseException:
            g.abort()
            raise
        finally:
            _state.graph = outer
            _state.input_names = outer_names
            sources, _state.arg_sources = _state.arg_sources[1], outer_sources
        if g.broken:
            g.abort()
            site, reason = _state.break_site or ("<unknown>", g.break_reason)
            _state.break_site = None
            if site not in self._warned and not str(reason).startswith(_SILENT_BREAKS):
                self._warned.add(site)
                warnings.warn("mixprec.function %r: graph break at %s: %s needs a concrete value "
                              "while tracing; this input signature runs eagerly from now on "
                              "(see docs/function.md)." % (self._name, site, reason),
                              stacklevel=4)
            if dry:
                return None, None
            return None, out
        g.end()
        for p in list(graph_passes):
            p(g, self._name)
        trace.outputs = out
        trace.keepalive = keep
        trace.gkeep[id(g)] = keep
        trace.gsources[id(g)] = sources
        return g, out

    def _signature_names(self, inputs):
        """id(tensor) -> (None, its input_signature TensorSpec's shape), by position."""
        if self.input_signature is None:
            return {}
        specs = [x for x in _nest.flatten(list(self.input_signature)) if isinstance(x, TensorSpec)]
        if len(specs) != len(inputs):
            return {}
        return {id(t): (None, s.shape) for t, s in zip(inputs, specs)}

    def _input_names(self, inputs):
        """id(tensor) -> TensorFlow's placeholder name of each tensor argument: its
        parameter's (``x:0``; the next tensors of a nested argument ``x_1:0`` ...), or
        its TensorSpec's name."""
        bound, prepared = getattr(self._tls, "names", ((), ()))
        if prepared is not inputs and [id(t) for t in prepared] != [id(t) for t in inputs]:
            return {}
        params = list(self._signature.parameters) if self._signature is not None else []
        specs = list(self.input_signature) if self.input_signature is not None else None
        out, used = {}, {}
        for k, value in enumerate(bound):
            base = params[k] if k < len(params) else "args_%d" % k
            spec_leaves = _nest.flatten(specs[k]) if specs is not None and k < len(specs) \
                else []
            tensors = [x for x in _nest.flatten(value) if _is_tensor(x)]
            for j, t in enumerate(tensors):
                spec = spec_leaves[j] if j < len(spec_leaves) else None
                name = spec.name if spec is not None and spec.name else base
                n = used.get(name, 0)
                used[name] = n + 1
                # (an input_signature's shape, None dims included, as TensorFlow prints it)
                out[id(t)] = ("%s:0" % (name if n == 0 else "%s_%d" % (name, n)),
                              None if spec is None else spec.shape)
        return out

    def _outputs(self, g, out):
        """Declares the tensors of ``out`` as graph outputs (variables are read, as
        TensorFlow returns their values); returns (out with tensors, leaves template)."""
        out = _nest.map_structure(_output_value, _shapes_as_tensors(out))
        keep = []
        for x in _nest.flatten(out):
            if _is_tensor(x):
                g.add_output(x)
                keep.append(_OutSlot())
            elif _is_distributed(x):  # strategy.run's PerReplica: its components, replayed
                parts = [v.read_value() if isinstance(v, _core.Variable) else v
                         for v in x.values]
                for v in parts:
                    if _is_tensor(v):
                        g.add_output(v)
                keep.append(_DistSlot(type(x), [_OutSlot() if _is_tensor(v) else v
                                                for v in parts]))
            else:
                keep.append(x)
        return out, keep

    # ------------------------------------------------------------------ introspection

    def experimental_get_tracing_count(self):
        return self._tracing_count

    def get_concrete_function(self, *args, **kwargs):
        if not args and not kwargs and self.input_signature is not None:
            args = tuple(self.input_signature)
        requested = _nest.flatten(list(args) + [kwargs[k] for k in sorted(kwargs)])
        kw_given = dict(kwargs)
        args = tuple(_nest.map_structure(_spec_zeros, a) if isinstance(a, TensorSpec) or
                     _nest.is_nested(a) else a for a in args)
        kwargs = {k: _nest.map_structure(_spec_zeros, v) for k, v in kwargs.items()}
        # trace (without running the graph: a concrete function is not a call)
        tkey, shape_key, call_args, call_kwargs, inputs = self._prepare(args, kwargs)
        # TensorSpecs with None dims: the trace is kept under the relaxed key, and later
        # calls whose shapes fit it use it (TensorFlow's trace subtyping)
        specs = [s for s in requested if isinstance(s, TensorSpec) or _is_tensor(s) or
                 isinstance(s, np.ndarray)]
        specs = [s if isinstance(s, TensorSpec) else TensorSpec(s.shape, as_dtype(s.dtype))
                 for s in specs]
        if len(specs) != len(inputs):
            specs = [TensorSpec(x.shape, x.dtype) for x in inputs]
        elif self.input_signature is None and any(None in s.shape.as_list() for s in specs
                                                  if s.shape.rank is not None):
            it = iter(specs)
            tkey = (tkey[0], tuple(("T", k[1], tuple(next(it).shape.as_list()))
                                   if k[0] == "T" else k for k in tkey[1]))
            if tkey not in self._spec_keys:
                self._spec_keys.append(tkey)
        names = list(self._signature.parameters) if self._signature is not None else []
        specs = [TensorSpec(s.shape, s.dtype, s.name if s.name is not None or i >= len(names)
                            else names[i]) for i, s in enumerate(specs)]
        bound = call_args
        trace = self._traces.get(tkey)
        if trace is None:
            trace = _Trace()
            trace.key = tkey
            g, _ = self._trace_once(trace, call_args, call_kwargs, inputs, count=True, dry=True)
            self._variables_traced = True
            self._traces[tkey] = trace
            if g is None:
                trace.eager = True
            else:
                trace.shapes[shape_key] = g
                trace.gvars[id(g)] = list(getattr(self._tls, "vars", ()))
        ckey = (tkey, tuple(map(repr, specs)))
        cf = self._concrete.get(ckey)
        if cf is None:  # TensorFlow hands back the same object for the same signature
            cf = self._concrete[ckey] = ConcreteFunction(self, trace, bound, specs,
                                                         _kw_specs(kw_given))
        return cf

    def _dataset_supertype(self, tkey):
        """A trace whose dataset arguments' specs are supertypes of the call's (TensorFlow
        reuses a trace for a (4, 28) batch when it traced (None, 28)), or None."""
        struct, exact = tkey
        for k in self._traces:
            if k[0] == struct and len(k[1]) == len(exact) and all(
                    a == b or a[0] == "DS" == b[0] and _spec_fits(a, b)
                    for a, b in zip(k[1], exact)):
                return k
        return None

    def _spec_trace(self, tkey):
        """The key of a trace made by get_concrete_function with None dims that a call's
        exact key fits, or None."""
        struct, exact = tkey
        for k in self._spec_keys:
            if k[0] != struct or len(k[1]) != len(exact):
                continue
            if all(a == b or a[0] == "T" == b[0] and a[1] == b[1] and len(a[2]) == len(b[2])
                   and all(d is None or d == e for d, e in zip(a[2], b[2]))
                   for a, b in zip(k[1], exact)):
                return k
        return None

    def __repr__(self):
        return "<mixprec.function %s>" % self._name


def _kw_specs(kwargs):
    """get_concrete_function's keyword tensors as specs named by their keywords."""
    out = {}
    for k in sorted(kwargs):
        v = _to_tensor_leaf(kwargs[k])
        if isinstance(v, TensorSpec):
            out[k] = TensorSpec(v.shape, v.dtype, v.name if v.name is not None else k)
        elif _is_tensor(v):
            out[k] = TensorSpec(v.shape, v.dtype, k)
        else:
            out[k] = v
    return out


def _output_value(x):
    """A traced function's result leaf as TensorFlow returns it: a variable's value, a
    Python or NumPy number as a tensor (int32, float32, bool; a NumPy scalar keeps its
    dtype); anything else (None, strings, objects) as it is."""
    if isinstance(x, _core.Variable):
        return x.read_value()
    if isinstance(x, (bool, int, float)) or isinstance(x, np.generic) and x.dtype.kind in "biuf":
        return _core.convert_to_tensor(x)
    return x


def _shapes_as_tensors(x):
    """TensorShapes in a result (a leaf for TensorFlow's nest, a sequence for ours) as
    TensorFlow returns them: int32 vectors."""
    if isinstance(x, TensorShape):
        return _core.constant(x.as_list(), "int32") if x.is_fully_defined() else x
    if type(x) is dict:
        return {k: _shapes_as_tensors(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_shapes_as_tensors(v) for v in x])
    if type(x) in (list, tuple):
        return type(x)(_shapes_as_tensors(v) for v in x)
    return x


class _OutSlot:
    __slots__ = ()


class _DistSlot:
    """A distributed output (PerReplica) in a trace's output template: its type and its
    components' slots."""

    __slots__ = ("cls", "parts")

    def __init__(self, cls, parts):
        self.cls, self.parts = cls, parts

    def build(self, it):
        return self.cls([next(it) if isinstance(p, _OutSlot) else p for p in self.parts])


def _same_value(a, b):
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - values without a plain equality differ
        return False


def _spec_zeros(s):
    if isinstance(s, TensorSpec):
        dims = [1 if d is None else d for d in s.shape.as_list()] if s.shape.rank is not None \
            else []
        return _core.convert_to_tensor(np.zeros(dims, s.dtype.as_numpy_dtype))
    return s


class ConcreteFunction:
    """One trace of a Function (``tf.types.experimental.ConcreteFunction``)."""

    def __init__(self, function, trace, bound, specs, kw_specs=None):
        self._function = function
        self._trace = trace
        self._bound = bound
        self._specs = specs
        self._kw_specs = kw_specs or {}

    @property
    def structured_input_signature(self):
        it = iter(self._specs)
        sig = _nest.map_structure(lambda x: next(it, None) or TensorSpec(x.shape, x.dtype)
                                  if _is_tensor(x) else x, list(self._bound))
        return (tuple(sig), dict(self._kw_specs))

    @property
    def inputs(self):
        return list(self._specs)

    @property
    def structured_outputs(self):
        """The outputs' structure with a TensorSpec per tensor: its static shape while
        traced (None for a dimension that follows a relaxed input, as TensorFlow's)."""
        if self._trace.eager or self._trace.outputs is None:
            return None
        g = next(iter(self._trace.shapes.values()), None)
        static = iter(self._trace.gstatic.get(id(g), ()))
        return _nest.map_structure(
            lambda x: TensorSpec(next(static, x.shape), x.dtype) if _is_tensor(x) else x,
            self._trace.outputs)

    @property
    def output_shapes(self):
        """TensorFlow's ``output_shapes``: the static TensorShape of each output tensor,
        in the outputs' structure."""
        out = self.structured_outputs
        return None if out is None else _nest.map_structure(
            lambda s: s.shape if isinstance(s, TensorSpec) else s, out)

    @property
    def output_dtypes(self):
        out = self.structured_outputs
        return None if out is None else _nest.map_structure(
            lambda s: s.dtype if isinstance(s, TensorSpec) else s, out)

    @property
    def outputs(self):
        return [s for s in _nest.flatten(self.structured_outputs) if isinstance(s, TensorSpec)]

    @property
    def graph(self):
        """The recorded graph (a FuncGraph view over ``_core.Graph``), None when it broke."""
        g = next(iter(self._trace.shapes.values()), None)
        return None if g is None else FuncGraph(g)

    def __call__(self, *args, **kwargs):
        flat = [_to_tensor_leaf(x) for x in _nest.flatten(list(args) + [kwargs[k] for k in
                                                                        sorted(kwargs)])]
        tensors = [x for x in flat if _is_tensor(x) or isinstance(x, (float, int, np.ndarray))]
        if len(tensors) != len(self._specs):
            raise TypeError("%s takes %d tensor arguments, got %d" % (
                self._function._name, len(self._specs), len(tensors)))
        conv = []
        for x, s in zip(tensors, self._specs):
            if not _is_tensor(x):
                x = _core.convert_to_tensor(np.asarray(x, s.dtype.as_numpy_dtype))
            if x.dtype != s.dtype:  # TensorFlow 2.21's InvalidArgumentError
                from mixprec import errors
                raise errors.InvalidArgumentError(
                    "cannot compute __inference_%s as input #%d(zero-based) was expected to be "
                    "a %s tensor but is a %s tensor" % (self._function._name, len(conv),
                                                        s.dtype.name.replace("float32", "float"),
                                                        x.dtype.name.replace("float32", "float")))
            if not s.shape.is_compatible_with(x.shape):
                raise TypeError("ConcreteFunction %s: expected %r, got a %s tensor of shape %s" % (
                    self._function._name, s, x.dtype.name, x.shape))
            conv.append(x)
        return self._function(*args, **kwargs)


class Operation:
    """One recorded node as TensorFlow's ``tf.Operation`` names it: ``type`` is the op's
    TensorFlow name (``MatMul``, ``ReadVariableOp``, ``AssignVariableOp`` ...)."""

    _KIND_TYPES = {"Input": "Placeholder", "Const": "Const", "ReadVariable": "ReadVariableOp",
                   "AssignVariable": "AssignVariableOp", "OptimizerStep": "ResourceApplyFused",
                   "Host": "PrintV2", "Loop": "While", "LoopOutput": "Identity"}

    def __init__(self, index, node):
        self._node = node
        self.type = node["op"] if node["kind"] == "Op" else self._KIND_TYPES.get(
            node["kind"], node["kind"])
        self.name = "%s_%d" % (self.type, index)

    @property
    def inputs(self):
        return [tuple(e) for e in self._node["inputs"]]

    def __repr__(self):
        return "<mixprec.Operation %r type=%s>" % (self.name, self.type)


class FuncGraph:
    """A traced function's graph as TensorFlow shows it (``get_operations``); other
    attributes are the ``_core.Graph``'s (``nodes()``, passes' tools)."""

    def __init__(self, g):
        self._g = g

    def get_operations(self):
        return [Operation(i, n) for i, n in enumerate(self._g.nodes())]

    def __getattr__(self, name):
        return getattr(self._g, name)


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_implements=None, experimental_autograph_options=None,
             experimental_attributes=None, experimental_relax_shapes=None,
             experimental_compile=None, experimental_follow_type_hints=None):
    """Decorator usable exactly as ``@tf.function`` (with or without arguments)."""
    def decorate(f):
        return Function(f, input_signature=input_signature, jit_compile=jit_compile,
                        reduce_retracing=bool(reduce_retracing or experimental_relax_shapes),
                        autograph=autograph)
    if func is not None:
        return decorate(func)
    return decorate
