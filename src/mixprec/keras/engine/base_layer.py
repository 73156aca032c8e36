"""Layer: the base of every Keras layer and model.

A layer takes its dtype policy at construction (the global policy, or ``dtype=``: a name,
a Policy or a config dict), casts floating tensors in its first argument to the compute
dtype, keeps its variables in the variable dtype (marked autocast when the two differ)
and runs ``call`` inside an autocast scope, so variables read as the compute dtype there
and as themselves everywhere else (semantics.md §1.6, §2). Called on KerasTensors, a layer
records a Node of the functional graph instead of computing.
"""

import inspect
import threading

from mixprec import _core, _nest
from mixprec._autograph import call as _ag_call
from mixprec import debugging as _debugging
from mixprec._dtypes import as_dtype
from mixprec._shape import TensorShape
from mixprec._variable import Variable
from mixprec.keras import backend
from mixprec.keras import initializers as _initializers
from mixprec.keras import regularizers as _regularizers
from mixprec.keras.engine import masking as _masking
from mixprec.keras.engine.input_spec import assert_input_compatibility
from mixprec.keras.engine.keras_tensor import KerasTensor
from mixprec.keras.mixed_precision import policy as _policy
from mixprec.train import _checkpoint

__all__ = ["Layer", "Node"]

_BUILD_LOCK = threading.RLock()  # one build at a time (replica threads share layers)
_ctx = threading.local()  # .training: the training flag of the outermost model call



def _shape_tuple(shape):
    """A shape as tf-keras reports it from input_shape/output_shape: a tuple of ints and
    None (None for an unknown rank)."""
    dims = getattr(shape, "as_list", None)
    if dims is not None:
        try:
            return tuple(dims())
        except ValueError:  # unknown rank
            return None
    return tuple(shape)

class _NameScope:
    """tf-keras' layer name scope: a layer's __call__ (build and call) runs inside a scope
    named after it, so the weights it creates are '<outer>/<layer>/kernel:0' ('m/dense/…'
    for layers of a subclassed model), and a layer built directly (layer.build(shape))
    names them 'kernel:0'. Per thread (replicas build in their own threads)."""

    def __init__(self, layer):
        self.layer = layer

    def __enter__(self):
        stack = _ctx.__dict__.setdefault("scopes", [])
        self.pushed = not stack or stack[-1] is not self.layer
        if self.pushed:
            stack.append(self.layer)

    def __exit__(self, *exc):
        if self.pushed:
            _ctx.scopes.pop()


def _scoped_name(name):
    stack = getattr(_ctx, "scopes", None)
    return "/".join([layer._name for layer in stack] + [name]) if stack else name


def _call_training():
    return getattr(_ctx, "training", None)


def _get_policy(dtype):
    """tf-keras' get_policy: None -> the global policy; Policy -> itself; dict -> config;
    'mixed_*' -> Policy; any other dtype spelling -> Policy(as_dtype(x).name)."""
    if dtype is None:
        return _policy.global_policy()
    if isinstance(dtype, _policy.Policy):
        return dtype
    if isinstance(dtype, dict):
        cfg = dtype.get("config", dtype)
        return _policy.Policy.from_config(cfg)
    if isinstance(dtype, str) and dtype in ("mixed_float16", "mixed_bfloat16", "_infer"):
        return _policy.Policy(dtype)
    return _policy.Policy(as_dtype(dtype).name)


def in_symbolic_call():
    """True while a layer runs on placeholder data to build a functional graph: stateful
    updates (BatchNormalization's moving statistics) are skipped then."""
    return getattr(_ctx, "symbolic", False)


def _any_keras_tensor(args, kwargs):
    for x in _nest.flatten((list(args), kwargs)):
        if isinstance(x, KerasTensor):
            return True
    return False


class Node:
    """One call of a layer in the functional graph: its arguments (KerasTensors and
    constants) and its output KerasTensors."""

    def __init__(self, layer, call_args, call_kwargs, outputs):
        self.layer = layer
        self.call_args = call_args
        self.call_kwargs = call_kwargs
        self.outputs = outputs
        self.flat_outputs = _nest.flatten(outputs)
        self.keras_inputs = [x for x in _nest.flatten((list(call_args), call_kwargs))
                             if isinstance(x, KerasTensor)]

    @property
    def parent_nodes(self):
        out = []
        for kt in self.keras_inputs:
            layer, index, _ = kt._keras_history
            out.append(layer._inbound_nodes[index])
        return out


class Layer:
    """Base class of Keras layers (``tf.keras.layers.Layer``)."""

    _CALL_ACCEPTS = {}  # class -> (accepts training, accepts mask)

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        if not cls.__module__.startswith("mixprec."):  # a user's class: its auto-config
            from mixprec.keras.saving import model_config

            model_config.record_init_args(self, cls, args, kwargs)
        return self

    def __init__(self, trainable=True, name=None, dtype=None, dynamic=False, autocast=True,
                 input_shape=None, batch_input_shape=None, batch_size=None, input_dim=None,
                 activity_regularizer=None, **kwargs):
        if kwargs:
            raise TypeError("Keyword argument not understood: %s" % ", ".join(sorted(kwargs)))
        self._trainable = bool(trainable)
        self._name = name or backend.unique_object_name(backend._snake(type(self).__name__))
        self._dtype_policy = _get_policy(dtype)
        self._autocast = bool(autocast)
        self._trainable_weights = []
        self._non_trainable_weights = []
        self._layers = []
        self._inbound_nodes = []
        self.built = False
        self.supports_masking = False
        self._losses = []  # tensors added during the last outermost call (activity, add_loss)
        self._callable_losses = []  # zero-argument callables: weight regularizers
        self._activity_regularizer = _regularizers.get(activity_regularizer)
        self.input_spec = None  # an InputSpec checked before every call (engine/input_spec.py)
        if input_dim is not None and input_shape is None:
            input_shape = (input_dim,)
        if batch_input_shape is None and input_shape is not None:
            batch_input_shape = (batch_size,) + tuple(input_shape)
        self._batch_input_shape = tuple(batch_input_shape) if batch_input_shape else None
        cls = type(self)
        if cls not in Layer._CALL_ACCEPTS:
            try:
                params = inspect.signature(cls.call).parameters
            except (TypeError, ValueError):
                params = {}
            Layer._CALL_ACCEPTS[cls] = ("training" in params, "mask" in params)

    # ---------------------------------------------------------------- attributes

    def __setattr__(self, name, value):
        # track sub-layers assigned as attributes (also in lists/tuples), as Keras does
        if not name.startswith("__") and "_layers" in self.__dict__:
            for v in _nest.flatten(value) if isinstance(value, (list, tuple)) else [value]:
                if isinstance(v, Layer) and v is not self and v not in self._layers:
                    self._layers.append(v)
        object.__setattr__(self, name, value)

    @property
    def name(self):
        return self._name

    @property
    def dtype_policy(self):
        return self._dtype_policy

    @property
    def compute_dtype(self):
        return self._dtype_policy.compute_dtype

    @property
    def variable_dtype(self):
        return self._dtype_policy.variable_dtype

    @property
    def dtype(self):
        """The variable dtype (so a mixed_float16 layer's dtype is 'float32')."""
        return self._dtype_policy.variable_dtype

    @property
    def _compute_dtype(self):
        return self._dtype_policy.compute_dtype

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)
        for layer in self._layers:
            layer.trainable = value

    @property
    def input_shape(self):
        """tf-keras 2.21: tuples such as (None, 784) (a list for several inputs)."""
        if self._inbound_nodes:
            ins = self._inbound_nodes[0].keras_inputs
            if len(ins) == 1:
                return _shape_tuple(ins[0].shape)
            return [_shape_tuple(k.shape) for k in ins]
        if self._batch_input_shape is not None:
            return tuple(self._batch_input_shape)
        raise AttributeError("The layer %s has never been called and thus has no defined "
                             "input shape." % self.name)

    @property
    def output_shape(self):
        if not self._inbound_nodes:
            raise AttributeError("The layer %s has never been called and thus has no defined "
                                 "output shape." % self.name)
        outs = self._inbound_nodes[0].flat_outputs
        if len(outs) == 1:
            return _shape_tuple(outs[0].shape)
        return [_shape_tuple(o.shape) for o in outs]

    @property
    def output(self):
        if not self._inbound_nodes:
            raise AttributeError("Layer %s has no inbound nodes." % self.name)
        return self._inbound_nodes[0].outputs

    @property
    def input(self):
        if not self._inbound_nodes:
            raise AttributeError("Layer %s is not connected, no input to return." % self.name)
        ins = self._inbound_nodes[0].keras_inputs
        return ins[0] if len(ins) == 1 else ins

    @property
    def losses(self):
        """The losses of this layer and its sub-layers, as tf-keras: the tensors added by
        the last outermost call (``add_loss``, activity regularizers) and the weight
        regularization losses, recomputed from the (float32) variables on every access."""
        out = []
        for layer in [self] + self._flatten_layers():
            out.extend(layer._losses)
            for fn in layer._callable_losses:
                prev = _core.autocast(None)  # read variables as themselves: float32 losses
                try:
                    value = fn()
                finally:
                    _core.autocast(prev)
                if value is not None:
                    if not isinstance(value, _core.Tensor):
                        value = _core.convert_to_tensor(value, backend.floatx())
                    out.append(value)
        return out

    def add_loss(self, losses, **kwargs):
        """A loss tensor (kept until the next outermost call) or a zero-argument callable
        (evaluated on every access of ``losses``), or a list of them."""
        for loss in losses if isinstance(losses, (list, tuple)) else [losses]:
            if loss is None:
                continue
            if callable(loss) and not isinstance(loss, (_core.Tensor, Variable)):
                self._callable_losses.append(loss)
                continue
            if isinstance(loss, Variable):
                loss = loss.value()
            if not isinstance(loss, _core.Tensor):
                loss = _core.convert_to_tensor(loss, backend.floatx())
            self._losses.append(loss)

    def _clear_losses(self):
        for layer in [self] + self._flatten_layers():
            layer._losses = []

    @property
    def activity_regularizer(self):
        return self._activity_regularizer

    @activity_regularizer.setter
    def activity_regularizer(self, value):
        self._activity_regularizer = _regularizers.get(value)

    def _handle_activity_regularization(self, outputs):
        # as tf-keras: regularizer(output) / batch size, per output, in the output's dtype
        for out in _nest.flatten(outputs):
            if not isinstance(out, _core.Tensor):
                continue
            loss = self._activity_regularizer(out)
            if not isinstance(loss, _core.Tensor):
                loss = _core.convert_to_tensor(loss, out.dtype)
            batch = out.shape[0] if out.ndim else 1
            self.add_loss(loss / _core.cast(_core.fill([], batch, "float32"), loss.dtype))

    # ---------------------------------------------------------------- weights

    def add_weight(self, name=None, shape=None, dtype=None, initializer=None, regularizer=None,
                   trainable=None, constraint=None, use_resource=None, synchronization=None,
                   aggregation=None, experimental_autocast=True, **kwargs):
        """Creates a variable of this layer (in the variable dtype unless ``dtype``)."""
        shape = () if shape is None else tuple(shape)
        dtype = as_dtype(dtype or self._dtype_policy.variable_dtype or backend.floatx())
        if initializer is None:
            initializer = "glorot_uniform" if dtype.is_floating else "zeros"
        init = _initializers.get(initializer)
        trainable = True if trainable is None else bool(trainable)
        value = init(shape, dtype=dtype)
        if not isinstance(value, (_core.Tensor, Variable)):
            value = _core.convert_to_tensor(value, dtype)
        if value.dtype != dtype:
            value = _core.cast(value, dtype)
        v = Variable(value, trainable=trainable, name=_scoped_name(name or "Variable"),
                     constraint=constraint)
        compute = self._dtype_policy.compute_dtype
        if (experimental_autocast and dtype.is_floating and compute is not None
                and as_dtype(compute) != dtype):
            v._autocast = True
        regularizer = _regularizers.get(regularizer)
        v._regularizer = regularizer
        if regularizer is not None:
            self._callable_losses.append(_WeightLoss(regularizer, v))
        if trainable:
            self._trainable_weights.append(v)
        else:
            self._non_trainable_weights.append(v)
        _checkpoint.notify_created()  # a checkpoint restored earlier may hold its value
        return v

    def _flatten_layers(self):
        seen, out = set(), []
        stack = list(self._layers)
        while stack:
            layer = stack.pop(0)
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            out.append(layer)
            stack = list(layer._layers) + stack
        return out

    # NOTE: tf-keras 2.21's order: a layer's weights are all its trainable weights (its
    # own, then each sublayer's, recursively) followed by all its non-trainable ones; a
    # Model lists each tracked layer's weights in turn (engine/training.py)
    @property
    def trainable_weights(self):
        if not self._trainable:
            return []
        out = list(self._trainable_weights)
        for layer in self._layers:
            out.extend(layer.trainable_weights)
        return _unique(out)

    @property
    def non_trainable_weights(self):
        if self._trainable:
            out = list(self._non_trainable_weights)
            for layer in self._layers:
                out.extend(layer.non_trainable_weights)
        else:
            out = list(self._trainable_weights) + list(self._non_trainable_weights)
            for layer in self._layers:
                out.extend(layer.weights)
        return _unique(out)

    @property
    def weights(self):
        # (this class's rules, not a subclass's: Layer.weights.fget(model) lists an
        # unbuilt model's weights without its not-built check)
        return _unique(Layer.trainable_weights.fget(self) +
                       Layer.non_trainable_weights.fget(self))

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    def get_weights(self):
        """The weights as NumPy arrays (in their variable dtype)."""
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(
                "You called `set_weights(weights)` on layer \"%s\" with a weight list of length "
                "%d, but the layer was expecting %d weights." % (self.name, len(weights),
                                                                 len(params)))
        for p, w in zip(params, weights):
            w_shape = tuple(getattr(w, "shape", ()))
            if tuple(p.shape) != w_shape:
                raise ValueError("Layer %s weight shape %s is not compatible with provided weight "
                                 "shape %s." % (self.name, tuple(p.shape), w_shape))
        for p, w in zip(params, weights):
            p.assign(w)

    def count_params(self):
        if not self.built:
            raise ValueError("You tried to call `count_params` on layer %s, but the layer isn't "
                             "built. You can build it manually via: `%s.build(batch_input_shape)`."
                             % (self.name, self.name))
        total = 0
        for w in self.weights:
            n = 1
            for d in w.shape:
                n *= d
            total += n
        return total

    # ---------------------------------------------------------------- calling

    def build(self, input_shape):
        self.built = True

    def call(self, inputs, *args, **kwargs):
        return inputs

    def compute_output_shape(self, input_shape):
        """The output shape for ``input_shape`` (tf-keras semantics: a TensorShape, or a list
        of them for several inputs; ``None`` for unknown dimensions). NOTE: a layer that
        defines it is called on KerasTensors without computing anything (the functional
        API infers shapes from it); one that does not is run once on small placeholder data
        (unknown dimensions as 1). See docs/architecture.md."""
        raise NotImplementedError

    def compute_mask(self, inputs, mask=None):
        """The output mask (tf-keras): ``mask`` passed on by a layer that supports masking,
        None from one that does not."""
        if not self.supports_masking:
            if any(m is not None for m in _nest.flatten(mask)):
                raise TypeError("Layer %s does not support masking, but was passed an "
                                "input_mask: %s" % (self.name, mask))
            return None
        return mask

    def _symbolic_dtype(self, input_dtype):
        """The output dtype on an input of ``input_dtype``: the compute dtype when the layer
        casts that input (floating inputs of an autocasting layer), else the input's."""
        compute = self._dtype_policy.compute_dtype
        if compute is None or not self._autocast or not as_dtype(input_dtype).is_floating:
            return as_dtype(input_dtype)
        return as_dtype(compute)

    def _maybe_build(self, inputs):
        if self.built:
            return
        # replicas run as threads (tf.distribute): the first one to arrive builds
        with _BUILD_LOCK:
            if not self.built:
                self._maybe_build_locked(inputs)

    def _maybe_build_locked(self, inputs):
        flat = _nest.flatten(inputs)
        shapes = [getattr(x, "shape", None) for x in flat]
        input_shape = shapes[0] if len(shapes) == 1 else _nest.pack_sequence_as(inputs, shapes)
        # build outside the autocast scope: variables are created in their true dtype
        prev = _core.autocast(None)
        try:
            with _NameScope(self):
                if not getattr(self.build, "_is_default", False):
                    self.build(input_shape)
        finally:
            _core.autocast(prev)
        self.built = True
        self._build_input_shape = input_shape  # get_build_config (saving)

    def _check_input_spec(self, inputs):
        spec = self.__dict__.get("input_spec")
        if spec is None:
            return
        flat = _nest.flatten(inputs) if isinstance(inputs, (list, tuple, dict)) else [inputs]
        assert_input_compatibility(spec, [getattr(x, "shape", None) for x in flat], self.name)

    def _cast_input(self, x):
        if isinstance(x, _core.Tensor):
            if x.dtype.is_floating and x.dtype.name != self._compute_dtype:
                return _core.cast(x, self._compute_dtype)
            return x
        if isinstance(x, Variable):
            return self._cast_input(x.value())
        if hasattr(x, "__array__") or isinstance(x, (float, int, list)):
            return self._cast_input(_core.convert_to_tensor(x))  # float64 NumPy too
        return x

    def _infer_policy(self, inputs):
        """The '_infer' policy (TF1 behaviour): the layer takes the dtype of its first
        floating input (floatx without one) for its computations and variables."""
        dtype = backend.floatx()
        for x in _nest.flatten(inputs):
            dt = getattr(x, "dtype", None)
            if dt is None and hasattr(x, "__array__"):
                dt = _core.convert_to_tensor(x).dtype
            if dt is not None and as_dtype(dt).is_floating:
                dtype = as_dtype(dt).name
                break
        self._dtype_policy = _policy.Policy(dtype)

    def __call__(self, *args, **kwargs):
        if not args and "inputs" in kwargs:
            args = (kwargs.pop("inputs"),)
        if not args:
            raise TypeError("%s.__call__ needs an `inputs` argument" % type(self).__name__)
        if self._dtype_policy.compute_dtype is None:
            self._infer_policy(args[0])
        if _any_keras_tensor(args, kwargs):
            return self._functional_call(args, kwargs)
        inputs = args[0]
        input_masks = _masking.implicit_masks(self, inputs, kwargs)
        compute = self._dtype_policy.compute_dtype
        floating = compute is not None and as_dtype(compute).is_floating
        if self._autocast and floating:
            if isinstance(inputs, (_core.Tensor, Variable)) or not isinstance(inputs, (list, tuple, dict)):
                inputs = self._cast_input(inputs)
            else:
                inputs = _nest.map_structure(self._cast_input, inputs)
        elif not isinstance(inputs, (list, tuple, dict)) and not isinstance(inputs, _core.Tensor):
            inputs = _core.convert_to_tensor(inputs)
        self._check_input_spec(inputs)
        name_scope = _NameScope(self)
        name_scope.__enter__()
        try:
            outputs = self._eager_call(inputs, args, kwargs, compute, floating)
        finally:
            name_scope.__exit__(None, None, None)
        _masking.set_output_masks(self, inputs, outputs, kwargs.get("mask", input_masks))
        return outputs

    def _eager_call(self, inputs, args, kwargs, compute, floating):
        if not self.built:
            self._maybe_build(inputs)
        accepts_training, _ = Layer._CALL_ACCEPTS.get(type(self), (False, False))
        outer = getattr(_ctx, "training", None)
        if accepts_training:
            if kwargs.get("training") is None:
                kwargs["training"] = outer
            training = kwargs["training"]
        else:
            training = kwargs.pop("training", None) if "training" in kwargs else None
        _ctx.training = training if training is not None else outer
        prev = _core.autocast(compute if floating else None)
        scope = _core.set_scope(self._name) if _debugging._enabled else None
        try:
            with CallScope(self):
                # while a function traces, a user's call() gets autograph (its Python `if`
                # on a tensor traces both branches), as tf-keras converts call
                outputs = _ag_call(self.call, inputs, *args[1:], **kwargs) \
                    if _core.graph_recording() is not None else \
                    self.call(inputs, *args[1:], **kwargs)
                if self._activity_regularizer is not None:
                    self._handle_activity_regularization(outputs)
            return outputs
        finally:
            _core.autocast(prev)
            _ctx.training = outer
            if _debugging._enabled:
                _core.set_scope(scope)

    def _symbolic_outputs(self, args, kwargs):
        """Output KerasTensors from shapes alone: build from the inputs' shapes, then
        ``compute_output_shape``. None when the layer cannot say (it does not define
        compute_output_shape, or it takes tensors beyond its first argument)."""
        if type(self).compute_output_shape is Layer.compute_output_shape or len(args) != 1:
            return None
        if any(isinstance(x, KerasTensor) for x in _nest.flatten(kwargs)):
            return None
        inputs = args[0]
        flat = _nest.flatten(inputs)
        if not flat or not all(isinstance(x, KerasTensor) for x in flat):
            return None
        self._check_input_spec(inputs)
        if not self.built:
            self._maybe_build(inputs)
        shapes = _nest.map_structure(lambda x: x.shape, inputs)
        try:
            out = self.compute_output_shape(shapes)
        except NotImplementedError:
            return None
        except Exception:
            if type(self).__module__.startswith("mixprec."):
                raise  # a built-in layer's shape error is the error its call would raise
            return None  # a user's compute_output_shape that fails: run the layer instead
        dtype = self._symbolic_dtype(flat[0].dtype)

        def is_shape(o):
            return isinstance(o, TensorShape) or (
                isinstance(o, (tuple, list)) and all(d is None or isinstance(d, int) for d in o))

        if is_shape(out):
            return KerasTensor(list(out), dtype, name=self.name)
        if isinstance(out, (list, tuple)) and all(is_shape(o) for o in out):
            return [KerasTensor(list(o), dtype, name=self.name) for o in out]
        return None  # a structure we cannot read: run the layer instead

    def _functional_call(self, args, kwargs):
        """Record a node: build from the KerasTensors' shapes and infer the outputs from
        ``compute_output_shape``; a layer without one is run once on placeholder data
        (batch 1). Returns KerasTensors."""
        symbolic = self._symbolic_outputs(args, kwargs)
        if symbolic is None:
            symbolic = self._traced_outputs(args, kwargs)
        _masking.set_symbolic_masks(self, args, kwargs, symbolic)
        node = Node(self, list(args), dict(kwargs), symbolic)
        self._inbound_nodes.append(node)
        for i, kt in enumerate(node.flat_outputs):
            kt._keras_history = (self, len(self._inbound_nodes) - 1, i)
        return symbolic

    def _traced_outputs(self, args, kwargs):
        flat_in = [x for x in _nest.flatten((list(args), kwargs)) if isinstance(x, KerasTensor)]

        def placeholder(x):
            if not isinstance(x, KerasTensor):
                return x
            shape = [1 if d is None else d for d in x.shape]
            return _core.fill(shape, 0, x.dtype)

        self._check_input_spec(args[0])
        concrete_args = _nest.map_structure(placeholder, list(args))
        concrete_kwargs = _nest.map_structure(placeholder, kwargs)
        batch_unknown = any(len(x.shape) and x.shape[0] is None for x in flat_in)
        was_symbolic = getattr(_ctx, "symbolic", False)
        was_built = self.built
        _ctx.symbolic = True  # a placeholder run: layers must not update their state
        try:
            outputs = self.__call__(*concrete_args, **concrete_kwargs)
        finally:
            _ctx.symbolic = was_symbolic
        if not was_built and "_build_input_shape" in self.__dict__:
            # built on placeholders (unknown dimensions as 1): the build config records the
            # symbolic shape, None included, as tf-keras
            first = args[0]
            self._build_input_shape = _nest.map_structure(
                lambda x: x.shape if isinstance(x, KerasTensor) else getattr(x, "shape", None),
                first) if isinstance(first, (list, tuple, dict)) else getattr(first, "shape",
                                                                               None)

        def to_keras(t):
            shape = list(t.shape)
            if batch_unknown and shape:
                shape[0] = None
            return KerasTensor(shape, t.dtype, name=self.name)

        self._losses = []  # the placeholder run's activity losses are not the model's
        return _nest.map_structure(to_keras, outputs)

    # ---------------------------------------------------------------- config

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable,
                  "dtype": _policy_config(self._dtype_policy)}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        if type(self).get_config is Layer.get_config and "_auto_config" in self.__dict__:
            from mixprec.keras.saving import model_config

            return model_config.layer_auto_config(self, config)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def get_build_config(self):
        """``{'input_shape': ...}``: the shape the layer was built with (None when it was
        not built by a call), stored with the layer's config by ``model.save``."""
        from mixprec.keras.saving import model_config

        return model_config.layer_build_config(self)

    def build_from_config(self, config):
        """Builds the layer's weights from ``get_build_config()``'s dict."""
        from mixprec.keras.saving import model_config

        model_config.layer_build_from_config(self, config)

    def __repr__(self):
        return "<%s name=%s, built=%s>" % (type(self).__name__, self.name, self.built)


class CallScope:
    """Marks a layer call; the outermost one clears the losses of the previous call (as
    tf-keras' call context), so ``losses`` holds one forward pass's activity losses."""

    def __init__(self, layer):
        self.layer = layer

    def __enter__(self):
        depth = getattr(_ctx, "depth", 0)
        if depth == 0:
            self.layer._clear_losses()
        _ctx.depth = depth + 1
        return self

    def __exit__(self, *exc):
        _ctx.depth -= 1
        return False


class _WeightLoss:
    """The loss of one weight's regularizer, recomputed on each call (tf-keras'
    ``functools.partial(_loss_for_variable, v)``)."""

    def __init__(self, regularizer, variable):
        self.regularizer = regularizer
        self.variable = variable

    def __call__(self):
        return self.regularizer(self.variable)


def _policy_config(policy):
    """A layer config's dtype: the name for single-dtype policies, a dict for mixed ones."""
    if policy.name in ("mixed_float16", "mixed_bfloat16") or policy.compute_dtype != \
            policy.variable_dtype:
        return {"module": "keras.mixed_precision", "class_name": "Policy",
                "config": {"name": policy.name}, "registered_name": None}
    return policy.name


def _unique(vs):
    seen, out = set(), []
    for v in vs:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out
