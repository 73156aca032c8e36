"""Model: the functional API, subclassed models, and training (compile/fit/evaluate/predict).

One class covers both kinds of model, as in tf-keras: ``keras.Model(inputs=..., outputs=...)``
builds a graph of Nodes from KerasTensors; a subclass with ``call`` is run as written.
``compile`` wraps the optimizer in a dynamic LossScaleOptimizer under ``mixed_float16``
(or the experimental policy's loss scale), so ``fit`` scales losses automatically.
"""

import math
import numbers
import operator
import warnings

import numpy as np

from mixprec import _core, _function, _logging, _nest
from mixprec import random as _random
from mixprec._amp import state as _amp_state
from mixprec._tape import GradientTape
from mixprec.keras import backend
from mixprec.keras import callbacks as _callbacks
from mixprec.keras import losses as _losses
from mixprec.keras import metrics as _metrics
from mixprec.keras import optimizers as _optimizers
from mixprec.keras.engine import class_weight as _class_weight
from mixprec.keras.engine import compile_utils as _compile_utils
from mixprec.keras.engine import distributed as _distributed
from mixprec.keras.engine import data_streams as _data_streams
from mixprec.keras.engine import functional_order
from mixprec.keras.engine import masking as _masking
from mixprec.keras.engine.base_layer import _shape_tuple  # noqa: F401
from mixprec.keras.engine.base_layer import _unique as _unique_weights
from mixprec.keras.engine.base_layer import Layer
from mixprec.keras.engine.input_layer import InputLayer
from mixprec.keras.engine.keras_tensor import KerasTensor
from mixprec.keras.engine import step_functions as _steps
from mixprec.keras.saving.model_methods import ModelSavingMixin

__all__ = ["Model"]

_EMPTY = ("Unexpected result of `%s` (Empty logs): not one step ran, because the %s data "
          "is empty. hint: check that the arrays hold samples, or that the dataset yields "
          "batches (not, say, a `take(0)` or a `filter` that rejects every element)")


def _is_data(x):
    return x is not None


def _match_rank(yt, yp):
    """tf-keras' match_dtype_and_rank: targets of shape (n,) against an output of rank 2
    ((n, 1), or (n, classes) under a sparse loss) get a trailing axis, so that losses and
    metrics compare element by element instead of broadcasting to (n, n)."""
    if yt is None or getattr(yt, "ndim", None) != 1 or getattr(yp, "ndim", None) != 2:
        return yt
    yt = _core.convert_to_tensor(yt)
    return _core.reshape(yt, [yt.shape[0], 1])


class Model(_steps.RunEagerlyMixin, ModelSavingMixin, Layer):
    """Groups layers into an object with training and inference features."""

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", None)
        outputs = kwargs.pop("outputs", None)
        if len(args) >= 1 and inputs is None:
            inputs = args[0]
        if len(args) >= 2 and outputs is None:
            outputs = args[1]
        name = kwargs.pop("name", None) or backend.unique_object_name(
            "model" if type(self) in (Model,) else backend._snake(type(self).__name__))
        trainable = kwargs.pop("trainable", True)
        autocast = kwargs.pop("autocast", True)
        dtype = kwargs.pop("dtype", None)
        super().__init__(name=name, trainable=trainable, dtype=dtype, autocast=autocast, **kwargs)
        self._is_graph_network = False
        from mixprec.distribute import _context as _dctx

        self._distribute_strategy = _dctx._variable_strategy()  # created in a scope
        self.optimizer = None
        self.compiled_loss = None
        self.compiled_metrics = None
        self._compiled = False
        self.stop_training = False
        self.history = None
        self._metric_objs = None
        self._loss_tracker = None
        self._output_loss_trackers = None
        self._compiled_built = False  # tf-keras lists compiled metrics once a step ran
        if inputs is not None or outputs is not None:
            if inputs is None or outputs is None:
                raise ValueError("A functional Model needs both `inputs` and `outputs`.")
            self._init_graph(inputs, outputs)

    # ---------------------------------------------------------------- functional graph

    def _init_graph(self, inputs, outputs):
        self._nested_inputs = inputs
        self._nested_outputs = outputs
        self.inputs = _nest.flatten(inputs)
        self.outputs = _nest.flatten(outputs)
        for t in self.inputs + self.outputs:
            if not isinstance(t, KerasTensor):
                raise ValueError("Input tensors to a Functional must come from `tf.keras.Input`. "
                                 "Received: %r" % (t,))
        for t in self.inputs:
            if not isinstance(t._keras_history[0], InputLayer):
                raise ValueError("Model inputs must come from `keras.Input` (got %r)" % (t,))
        # Topological order of the nodes between inputs and outputs.
        order, seen = [], set()
        input_ids = {id(t) for t in self.inputs}

        def visit(node):
            if id(node) in seen:
                return
            seen.add(id(node))
            for kt in node.keras_inputs:
                if id(kt) in input_ids:
                    continue
                layer, index, _ = kt._keras_history
                visit(layer._inbound_nodes[index])
            order.append(node)

        for out in self.outputs:
            layer, index, _ = out._keras_history
            if id(out) in input_ids:
                continue
            visit(layer._inbound_nodes[index])
        for node in order:
            for kt in node.keras_inputs:
                if id(kt) in input_ids:
                    continue
                if isinstance(kt._keras_history[0], InputLayer):
                    raise ValueError(
                        "Graph disconnected: cannot obtain value for tensor %r. The following "
                        "previous layers were accessed without issue: %s" % (
                            kt, [n.layer.name for n in order]))
        self._nodes = [n for n in order if not isinstance(n.layer, InputLayer)]
        # tf-keras' order (by depth from the outputs): summary, weights, saved files
        layers = functional_order.layers_by_depth(self.inputs, self.outputs)
        self._graph_layers = layers
        for layer in layers:
            if layer not in self._layers:
                self._layers.append(layer)
        self._is_graph_network = True
        self._autocast = False  # a functional model does not cast; its layers do
        self.supports_masking = True  # its outputs carry the masks its layers give them
        self.built = True

    @property
    def layers(self):
        if self._is_graph_network:
            return list(self._graph_layers)
        return list(self._layers)

    def get_layer(self, name=None, index=None):
        if index is not None:
            if index >= len(self.layers):
                raise ValueError("Was asked to retrieve layer at index %d but model only has %d "
                                 "layers." % (index, len(self.layers)))
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError("No such layer: %s. Existing layers are: %s."
                         % (name, [la.name for la in self.layers]))

    def _run_graph(self, inputs, training=None):
        if isinstance(inputs, dict):
            # data keyed by the names of the Inputs (or the model's input dict keys), as
            # tf-keras matches them (a plain flatten would order the values by key, not by
            # the model's inputs); keys that match no input are ignored with a warning
            keyed = isinstance(self._nested_inputs, dict)
            names = (list(self._nested_inputs) if keyed
                     else [t._keras_history[0].name for t in self.inputs])
            if set(names) <= set(inputs):
                extra = sorted(str(k) for k in inputs if k not in set(names))
                if extra:
                    warnings.warn("Input dict contained keys %s which did not match any model "
                                  "input. They will be ignored by the model." % extra,
                                  stacklevel=3)
                inputs = ({n: inputs[n] for n in names} if keyed
                          else [inputs[n] for n in names])
        flat = _nest.flatten(inputs) if isinstance(inputs, (list, tuple, dict)) else [inputs]
        if len(flat) != len(self.inputs):
            raise ValueError("Layer \"%s\" expects %d input(s), but it received %d input "
                             "tensors." % (self.name, len(self.inputs), len(flat)))
        values = {}
        for kt, x in zip(self.inputs, flat):
            if not isinstance(x, _core.Tensor):
                x = _core.convert_to_tensor(x)
            if x.dtype != kt.dtype:  # tf-keras' _conform_to_reference_input: uint8 images too
                mask = _masking.get_mask(x)
                x = _core.cast(x, kt.dtype)
                if mask is not None:
                    x._keras_mask = mask
            if x.ndim != len(kt.shape):
                raise ValueError(
                    "Input 0 of layer \"%s\" is incompatible with the layer: expected shape=%s, "
                    "found shape=%s" % (self.name, kt.shape, tuple(x.shape)))
            # (a check: the dims it compares are the spec's fixed ones, nothing is baked in)
            for a, b in zip(kt.shape, _function.checked_shape(x)):
                if a is not None and a != b:
                    raise ValueError(
                        "Input 0 of layer \"%s\" is incompatible with the layer: expected "
                        "shape=%s, found shape=%s" % (self.name, kt.shape, tuple(x.shape)))
            values[id(kt)] = x

        def fetch(v):
            return values[id(v)] if isinstance(v, KerasTensor) else v

        for node in self._nodes:
            args = _nest.map_structure(fetch, node.call_args)
            kwargs = _nest.map_structure(fetch, node.call_kwargs)
            if training is not None and "training" not in kwargs:
                kwargs["training"] = training
            out = node.layer(*args, **kwargs)
            for kt, v in zip(node.flat_outputs, _nest.flatten(out)):
                values[id(kt)] = v
        return _nest.pack_sequence_as(self._nested_outputs,
                                      [values[id(t)] for t in self.outputs])

    def compute_mask(self, inputs, mask=None):
        """A functional model's output masks (None where an output has none): those of its
        own outputs for KerasTensor inputs, else the masks of a run on ``inputs``."""
        if not self._is_graph_network:
            return super().compute_mask(inputs, mask)
        if all(isinstance(x, KerasTensor) for x in _nest.flatten(inputs)):
            outputs = self._nested_outputs
        else:
            if mask is not None:
                inputs = _masking.attach_input_masks(inputs, mask)
            outputs = self._run_graph(inputs)
        return _nest.map_structure(_masking.get_mask, outputs)

    def build(self, input_shape):
        """A subclassed model: call() once on placeholder data so that its layers create
        their weights (tf-keras); a functional model is built already."""
        if self._is_graph_network:
            self.built = True
            return
        from mixprec.keras.engine._subclass_build import build_subclassed

        build_subclassed(self, input_shape)

    build._is_default = True  # a first call builds the layers itself (tf-keras' @default)

    def _assert_weights_created(self):
        """tf-keras: a Sequential or a subclass with its own ``build`` that has not been built
        yet has no weights to list: ValueError rather than a misleading empty list."""
        if getattr(self, "dynamic", False) or self._is_graph_network:
            return
        if "build" in type(self).__dict__ and type(self) is not Model and not self.built:
            raise ValueError(
                "Weights for model '%s' have not yet been created. Weights are created when "
                "the model is first called on inputs or `build()` is called with an "
                "`input_shape`." % self.name)

    # tf-keras 2.21's Model order: each tracked layer's variables in turn, then the
    # model's own (a layer's own order is base_layer's: trainable, then non-trainable)
    @property
    def trainable_weights(self):
        self._assert_weights_created()
        if not self._trainable:
            return []
        out = []
        for layer in self._layers:
            out.extend(layer.trainable_weights)
        return _unique_weights(out + list(self._trainable_weights))

    @property
    def non_trainable_weights(self):
        self._assert_weights_created()
        out = []
        for layer in self._layers:
            out.extend(layer.non_trainable_weights)
        if not self._trainable:
            trainable = []
            for layer in self._layers:
                trainable.extend(layer.trainable_weights)
            out = trainable + list(self._trainable_weights) + out + \
                list(self._non_trainable_weights)
        else:
            out = out + list(self._non_trainable_weights)
        return _unique_weights(out)

    @property
    def weights(self):
        self._assert_weights_created()
        out = []
        for layer in self._layers:
            out.extend(layer.weights)
        return _unique_weights(out + list(self._trainable_weights) +
                               list(self._non_trainable_weights))

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    def call(self, inputs, training=None, mask=None):
        if self._is_graph_network:
            if mask is not None:
                inputs = _masking.attach_input_masks(inputs, mask)
            return self._run_graph(inputs, training)
        raise NotImplementedError("Model %s has no `call`: subclasses of keras.Model must "
                                  "implement call()" % self.name)

    def __call__(self, *args, **kwargs):
        if self._is_graph_network and not any(isinstance(x, KerasTensor)
                                              for x in _nest.flatten(list(args))):
            training = kwargs.pop("training", None)
            mask = kwargs.pop("mask", None)
            inputs = args[0] if args else kwargs.pop("inputs")
            if mask is not None:  # tf-keras: the masks ride on the input tensors
                inputs = _masking.attach_input_masks(inputs, mask)
            from mixprec.keras.engine import base_layer

            outer = getattr(base_layer._ctx, "training", None)
            base_layer._ctx.training = training if training is not None else outer
            try:
                with base_layer.CallScope(self):
                    return self._run_graph(inputs, training)
            finally:
                base_layer._ctx.training = outer
        return super().__call__(*args, **kwargs)

    @property
    def input(self):
        if self._is_graph_network:
            return self._nested_inputs
        return super().input

    @property
    def output(self):
        if self._is_graph_network:
            return self._nested_outputs
        return super().output

    @property
    def input_shape(self):
        if self._is_graph_network:
            shapes = [_shape_tuple(t.shape) for t in self.inputs]
            return shapes[0] if len(shapes) == 1 else shapes
        return super().input_shape

    @property
    def output_shape(self):
        if self._is_graph_network:
            shapes = [_shape_tuple(t.shape) for t in self.outputs]
            return shapes[0] if len(shapes) == 1 else shapes
        return super().output_shape

    # ---------------------------------------------------------------- compile

    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, run_eagerly=None, steps_per_execution=None,
                jit_compile=None, **kwargs):
        """Configures training. Under a mixed_float16 model policy the optimizer is wrapped
        in a dynamic LossScaleOptimizer (unless it already is one); with the experimental
        API, in a LossScaleOptimizer with the policy's loss scale."""
        from mixprec.keras.mixed_precision import loss_scale_optimizer as lso

        opt = _optimizers.get(optimizer)
        policy = self._dtype_policy
        is_lso = isinstance(opt, lso._LossScaleOptimizerBase)
        policy_loss_scale = getattr(policy, "loss_scale", None)
        if not is_lso:
            if hasattr(policy, "loss_scale"):  # experimental (TF 2.1-2.3) policy
                if policy_loss_scale is not None:
                    opt = lso.LossScaleOptimizerV1(opt, policy_loss_scale)
            elif policy.name == "mixed_float16" or _amp_state.env_enabled:
                # TF_ENABLE_AUTO_MIXED_PRECISION=1 scales the loss automatically (NVIDIA's builds)
                opt = lso.LossScaleOptimizer(opt)
        self.optimizer = opt
        self._compile_config = dict(  # the user's arguments: get_compile_config (saving)
            optimizer=optimizer, loss=loss, metrics=metrics, loss_weights=loss_weights,
            weighted_metrics=weighted_metrics, run_eagerly=run_eagerly,
            steps_per_execution=steps_per_execution, jit_compile=jit_compile)
        self._loss_spec = loss
        self._loss_weights = loss_weights
        self._metric_specs = metrics
        self._weighted_metric_specs = weighted_metrics
        self._metric_objs = None
        self._loss_tracker = _metrics.Mean(name="loss")
        self._output_loss_trackers = None  # '<output>_loss' per output (several outputs)
        self._compiled_built = False
        _distributed.record_strategy(self)  # compiled in a tf.distribute strategy's scope
        self._compiled = True
        # tf-keras' containers, for custom train_steps (engine/compile_utils.py)
        self.compiled_loss = _compile_utils.LossesContainer(self, loss)
        self.compiled_metrics = _compile_utils.MetricsContainer(self, metrics, weighted_metrics)
        # tf-keras: steps are traced unless run_eagerly (docs/function.md)
        self.__dict__["_run_eagerly_flag"] = run_eagerly
        _steps.reset(self)
        self._steps_per_execution = _positive_int(
            1 if steps_per_execution is None else steps_per_execution, "steps_per_execution")

    @property
    def input_names(self):
        """A functional model's input layer names (tf-keras)."""
        if not self._is_graph_network:
            raise AttributeError("'%s' object has no attribute 'input_names'"
                                 % type(self).__name__)
        return [t._keras_history[0].name for t in self.inputs]

    @property
    def output_names(self):
        """A functional model's output layer names (tf-keras)."""
        if not self._is_graph_network:
            raise AttributeError("'%s' object has no attribute 'output_names'"
                                 % type(self).__name__)
        return [t._keras_history[0].name for t in self.outputs]

    def _output_names(self, n_out):
        if self._is_graph_network and len(self.outputs) == n_out:
            return [t._keras_history[0].name for t in self.outputs]
        return ["output_%d" % (i + 1) for i in range(n_out)]  # tf-keras' pseudo names

    def _per_output(self, spec, n_out, what):
        """``spec`` (compile's loss or loss_weights) as one entry per output, as tf-keras
        conforms it: a list has one entry per output, a dict is keyed by output names (a
        missing name: None), anything else applies to every output."""
        if isinstance(spec, dict):
            names = self._output_names(n_out)
            unknown = [k for k in spec if k not in names]
            if unknown:
                raise ValueError("Found unexpected keys that do not correspond to any Model "
                                 "output in `%s`: %s. Expected: %s (the names of the output "
                                 "layers)" % (what, unknown, names))
            return [spec.get(n) for n in names]
        if isinstance(spec, (list, tuple)):
            if len(spec) != n_out:
                raise ValueError("When passing a list as `%s`, it should have one entry per "
                                 "model output. The model has %d output(s), but you passed "
                                 "%s=%r. hint: a dict keyed by output names may name only "
                                 "some outputs (the others %s)" % (
                                     what, n_out, what, spec,
                                     {"loss": "have no loss", "metrics": "have no metrics"}.get(
                                         what, "are weighted 1")))
            return list(spec)
        return [spec] * n_out

    def _loss_fns(self, n_out):
        if self._loss_spec is None:
            return [None] * n_out
        fns = [_losses.get(s) for s in self._per_output(self._loss_spec, n_out, "loss")]
        out = []
        for fn in fns:
            if fn is not None and not isinstance(fn, _losses.Loss):
                fn = _losses.LossFunctionWrapper(fn, name=getattr(fn, "__name__", None))
            if fn is not None:  # compiled losses may average per batch under a strategy
                fn._allow_sum_over_batch_size = True
            out.append(fn)
        return out

    def _targets(self, y):
        """The targets as a flat list in the order of the model's outputs: a dict keyed by
        output layer names is matched by name when the outputs are a list (as tf-keras)."""
        if (isinstance(y, dict) and self._is_graph_network
                and not isinstance(self._nested_outputs, dict)):
            names = [t._keras_history[0].name for t in self.outputs]
            if set(names) <= set(y):
                return [y[n] for n in names]
        return _nest.flatten(y)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
        """The compiled loss (summed over outputs, weighted) plus the layers' losses."""
        return self._compiled_loss_value(y, y_pred, sample_weight, self.losses)

    def _compiled_loss_value(self, y, y_pred, sample_weight, extra_losses):
        """compile's losses over the outputs (weighted, summed) plus ``extra_losses``."""
        ys = self._targets(y)
        yps = _nest.flatten(y_pred)
        fns = self._loss_fns(len(yps))
        weights = [None] * len(yps) if self._loss_weights is None else \
            self._per_output(self._loss_weights, len(yps), "loss_weights")
        total = None
        missing = False
        self._output_losses = []  # (output, unweighted loss): logged as '<output>_loss'
        for i, (fn, yt, yp) in enumerate(zip(fns, ys, yps)):
            if fn is None:
                continue
            if yt is None:  # tf-keras skips a compiled loss without targets
                missing = True
                continue
            yt = _match_rank(yt, yp)
            # a masked output: masked entries get weight 0 (tf-keras' LossesContainer)
            value = fn(yt, yp, _masking.apply_mask(yp, sample_weight, _masking.get_mask(yp)))
            self._output_losses.append((i, value))
            if weights[i] is not None:
                value = value * weights[i]
            total = value if total is None else total + value
        for extra in extra_losses:
            extra = _core.convert_to_tensor(extra)
            total = extra if total is None else total + _core.cast(extra, total.dtype)
        if total is None and missing:
            raise ValueError(
                "No loss to compute: the model was compiled with a loss, which compares "
                "predictions with targets, but no targets `y` were given. Pass `y` (or a "
                "dataset yielding `(x, y)` pairs), or add losses in the model with "
                "`add_loss()`.")
        if total is None:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        return total

    def _resolve_metrics(self, y, y_pred):
        """compile's metrics as (metric, output index) pairs, as tf-keras' MetricsContainer:
        a flat list applies to every output, a list of lists or a dict keyed by output names
        gives each output its own; with several outputs the names get the output's name
        as a prefix ('dense_1_accuracy')."""
        yps = _nest.flatten(y_pred)
        ys = self._targets(y) if y is not None else [None] * len(yps)
        n_out = len(yps)

        def per_output(specs, what):
            specs = specs or []
            if isinstance(specs, dict) or (n_out > 1 and isinstance(specs, (list, tuple)) and
                                           any(isinstance(s, (list, tuple)) for s in specs)):
                out = self._per_output(specs, n_out, what)
            else:
                out = [list(specs) if isinstance(specs, (list, tuple)) else [specs]] * n_out
            return [[] if s is None else (s if isinstance(s, (list, tuple)) else [s])
                    for s in out]

        plain = per_output(self._metric_specs, "metrics")
        weighted = per_output(self.__dict__.get("_weighted_metric_specs"), "weighted_metrics")
        losses = ([None] * n_out if self._loss_spec is None else
                  self._per_output(self._loss_spec, n_out, "loss"))
        names = self._output_names(n_out)
        objs, outputs, weighs = [], [], []
        seen = set()
        # tf-keras' order and names: per output its metrics, then its weighted metrics; a
        # weighted metric whose name is taken gets 'weighted_' (after the output's name)
        for i in range(n_out):
            yt = ys[i] if i < len(ys) else None
            for spec in plain[i]:
                m = self._make_metric(spec, yt, yps[i], losses[i])
                if n_out > 1:
                    m.name = "%s_%s" % (names[i], m.name)
                if m.name in seen:
                    raise ValueError("Found two metrics with the same name: %s. All the "
                                     "metrics added to the model need to have unique names."
                                     % m.name)
                seen.add(m.name)
                objs.append(m)
                outputs.append(i)
                weighs.append(False)
            for spec in weighted[i]:
                m = self._make_metric(spec, yt, yps[i], losses[i])
                if n_out > 1:
                    taken = "%s_%s" % (names[i], m.name) in seen
                    m.name = "%s_%s%s" % (names[i], "weighted_" if taken else "", m.name)
                elif m.name in seen:
                    m.name = "weighted_" + m.name
                if m.name in seen:
                    raise ValueError("Found two weighted metrics with the same name: %s.All the "
                                     "metrics added to the model need to have unique names."
                                     % m.name)
                seen.add(m.name)
                objs.append(m)
                outputs.append(i)
                weighs.append(True)
        self._metric_outputs = outputs
        self._metric_weighted = weighs
        self._metric_objs = objs  # last: other replica threads test it without the lock

    @staticmethod
    def _make_metric(spec, yt, yp, loss):
        if spec in ("crossentropy", "ce"):
            # as tf-keras: the crossentropy that fits the shapes, logged under the given name
            p_last = yp.shape[-1] if yp.ndim else 1
            if p_last == 1:
                fn = _metrics.binary_crossentropy
            elif yt is not None and (yt.ndim < yp.ndim or
                                     (yt.ndim == yp.ndim and yt.shape[-1] == 1)):
                fn = _metrics.sparse_categorical_crossentropy
            else:
                fn = _metrics.categorical_crossentropy
            return _metrics.MeanMetricWrapper(fn, name=spec)
        if spec not in ("accuracy", "acc"):
            m = _metrics.get(spec)
            if not isinstance(m, _metrics.Metric):  # a function ('mae'): a mean, named as written
                m = _metrics.MeanMetricWrapper(
                    m, name=spec if isinstance(spec, str) else getattr(m, "__name__", None))
            return m
        # 'accuracy' picks its kind from the loss and the shapes, as tf-keras
        name = "accuracy" if spec == "accuracy" else "acc"
        p_last = yp.shape[-1] if yp.ndim else 1
        loss_name = loss if isinstance(loss, str) else getattr(loss, "name", None) or \
            getattr(loss, "__name__", "")
        # tf-keras 2.21: a MeanMetricWrapper of the accuracy function that fits
        if loss_name in ("binary_crossentropy",) or p_last == 1:
            fn = _metrics.binary_accuracy
        elif (loss_name == "sparse_categorical_crossentropy" or
                (yt is not None and (yt.ndim < yp.ndim or
                                     (yt.ndim == yp.ndim and yt.shape[-1] == 1)))):
            fn = _metrics.sparse_categorical_accuracy
        else:
            fn = _metrics.categorical_accuracy
        return _metrics.MeanMetricWrapper(fn, name=name)

    @property
    def metrics(self):
        """tf-keras 2.21: the compiled loss and metrics appear once a train/test step has
        run (empty right after compile)."""
        out = []
        if not (self.__dict__.get("_compiled_built") or self._metric_objs is not None):
            return out
        if self._loss_tracker is not None:
            out.append(self._loss_tracker)
        out.extend(self._output_loss_trackers or [])
        out.extend(self._metric_objs or [])
        return out

    @property
    def metrics_names(self):
        return [m.name for m in self.metrics]

    def reset_metrics(self):
        for m in self.metrics:
            m.reset_state()

    def compute_metrics(self, x, y, y_pred, sample_weight):
        self._update_compiled_metrics(y, y_pred, sample_weight)
        return {m.name: m.result() for m in self.metrics}

    def _update_compiled_metrics(self, y, y_pred, sample_weight):
        self._compiled_built = True
        if self._metric_objs is None:
            from mixprec.keras.engine.base_layer import _BUILD_LOCK

            with _BUILD_LOCK:  # replica threads: one resolves, the others use its metrics
                if self._metric_objs is None:
                    self._resolve_metrics(y, y_pred)
        yps = _nest.flatten(y_pred)
        ys = self._targets(y) if y is not None else [None] * len(yps)
        # tf-keras: compile's metrics ignore sample weights (and class weights); its
        # weighted_metrics use them
        for m, i, w in zip(self._metric_objs, self._metric_outputs, self._metric_weighted):
            # a masked output: its mask weighs the metrics (times the sample weights for
            # weighted_metrics), as tf-keras' MetricsContainer
            mask = _masking.get_mask(yps[i])
            sw = _masking.apply_mask(yps[i], sample_weight, mask) if w else mask
            m.update_state(_match_rank(ys[i], yps[i]) if i < len(ys) else None, yps[i], sw)

    # ---------------------------------------------------------------- steps

    def train_step(self, data):
        x, y, sample_weight = _unpack(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
            # divided by the replica count under a strategy (summed gradients = global mean)
            replica_loss = _distributed.scale_loss_for_distribution(loss)
        self.optimizer.minimize(replica_loss, self.trainable_variables, tape=tape)
        self._track_losses(loss, y, y_pred)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data):
        x, y, sample_weight = _unpack(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x, y, y_pred, sample_weight)
        self._track_losses(loss, y, y_pred)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def _track_losses(self, loss, y, y_pred):
        """The step's loss, and with several outputs each output's own (unweighted) loss,
        as tf-keras logs them: 'loss', 'a_loss', 'b_loss'."""
        batch = _batch_dim(y, y_pred)
        self._compiled_built = True
        self._loss_tracker.update_state(loss, sample_weight=batch)
        n_out = len(_nest.flatten(y_pred))
        per_output = getattr(self, "_output_losses", None)
        if n_out < 2 or not per_output:
            return
        if self._output_loss_trackers is None:
            names = self._output_names(n_out)
            self._output_loss_trackers = [_metrics.Mean(name="%s_loss" % names[i])
                                          for i, _ in per_output]
            self._output_loss_index = [i for i, _ in per_output]
        values = dict(per_output)
        for i, tracker in zip(self._output_loss_index, self._output_loss_trackers):
            if i in values:
                tracker.update_state(values[i], sample_weight=batch)

    def predict_step(self, data):
        x, _, _ = _unpack(data)
        return self(x, training=False)

    def _check_compiled(self, what):
        if not self._compiled:
            raise RuntimeError("You must compile your model before %s. Call `model.compile("
                               "optimizer, loss)`." % what)

    # ---------------------------------------------------------------- loops

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1, max_queue_size=10, workers=1,
            use_multiprocessing=False):
        """Trains for ``epochs`` epochs; returns a History (also ``model.history``)."""
        self._check_compiled("training/testing")
        weights = _class_weight.table(class_weight) if class_weight is not None else None
        verbose = 1 if verbose == "auto" else int(verbose)
        validate = _validation_epochs(validation_freq)
        x, y, sample_weight = (_lists_as_array(v) for v in (x, y, sample_weight))
        if validation_split and validation_data is None:
            if not 0.0 < validation_split < 1.0:
                raise ValueError("`validation_split` must be in [0, 1), got %s" % validation_split)
            (x, y, sample_weight), validation_data = _split(x, y, sample_weight, validation_split)
        data = _DataHandler(x, y, sample_weight, batch_size, shuffle=shuffle,
                            steps=steps_per_epoch, steps_arg="steps_per_epoch",
                            class_weights=weights)
        data.epochs = epochs - initial_epoch
        val = None
        if validation_data is not None:
            vx, vy, vsw = _unpack_tuple(validation_data)
            val = _DataHandler(vx, vy, vsw, validation_batch_size or batch_size, shuffle=False,
                               steps=validation_steps, steps_arg="validation_steps")
        history = _callbacks.History()
        cbs = _user_callbacks(callbacks)
        if verbose:
            cbs.insert(0, _callbacks.ProgbarLogger(stateful_metrics=None))
        cbs.append(history)
        params = {"verbose": verbose, "epochs": epochs, "steps": data.steps}
        cb = _callbacks.CallbackList(cbs, model=self, **params)
        self.stop_training = False
        from mixprec.keras.mixed_precision import loss_scale_optimizer as lso
        cb.on_train_begin()
        # a BackupAndRestore callback that restored a backup resumes after its epoch
        resume = self.__dict__.pop("_backup_resume_epoch", None)
        if resume is not None:
            initial_epoch = max(initial_epoch, resume)
        # the step's metrics are read to the host per step only for callbacks that look at
        # them (the verbose=1 bar, a user's on_train_batch_end); otherwise once per epoch
        batch_logs = cb.wants_batch_logs("train")
        logs = {}
        stepped = False
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cb.on_epoch_begin(epoch)
            ran = 0
            # steps_per_execution = N: batch callbacks see one begin and one end per N steps
            # (tf-keras: on_train_batch_end gets the execution's last step)
            per_exec = getattr(self, "_steps_per_execution", 1)
            for step, batch in enumerate(data.batches(epoch)):
                ran += 1
                stepped = True
                if step % per_exec == 0:
                    cb.on_train_batch_begin(step)
                # NOTE: looked up per step: a callback may compile the model again, with
                # another optimizer (with or without loss scaling)
                opt = self.optimizer
                scaled = isinstance(opt, lso._LossScaleOptimizerBase)
                scale = opt._scale_tensor() if scaled else None  # no wait
                # per step: see `opt` above (under a strategy: split over the replicas)
                logs = _steps.train_function(self)(batch)
                if scaled:
                    history._record_step(epoch, scale, opt._last_applied)
                last = (step + 1) % per_exec == 0 or step + 1 == data.steps
                if not last:
                    continue
                if batch_logs:
                    logs = _to_floats(logs)
                cb.on_train_batch_end(step, logs)
                if self.stop_training:
                    break
            if ran and per_exec > 1 and ran % per_exec and data.steps != ran:
                # an epoch of unknown length ended inside an execution
                cb.on_train_batch_end(ran - 1, _to_floats(logs) if batch_logs else logs)
            if not stepped:  # as tf-keras: an epoch without a step, before any step ran
                raise ValueError(_EMPTY % ("train_function", "training"))
            if getattr(data, "ran_out", False):
                self.stop_training = True  # as tf-keras: the epoch ends early, then training
                if not ran:  # tf-keras still ends this epoch, with the reset metrics' results
                    logs = {m.name: m.result() for m in self.metrics}
            epoch_logs = _to_floats(logs)
            if val is not None and validate(epoch + 1):
                # as tf-keras (fit calls evaluate with its callbacks): on_test_begin,
                # on_test_batch_* and on_test_end run during validation
                val_logs = self._evaluate_loop(val, cb)
                epoch_logs.update({"val_" + k: v for k, v in val_logs.items()})
            cb.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        cb.on_train_end(logs)
        self.history = history
        return history

    def _evaluate_loop(self, data, cb):
        self.reset_metrics()
        if cb is not None:
            cb.on_test_begin()
        batch_logs = cb is not None and cb.wants_batch_logs("test")
        logs = {}
        ran = False
        test_fn = _steps.test_function(self)
        for step, batch in enumerate(data.batches(0)):
            ran = True
            if cb is not None:
                cb.on_test_batch_begin(step)
            logs = test_fn(batch)  # (under a strategy: split over the replicas)
            if batch_logs:  # read back per step only when a callback looks (as in fit)
                logs = _to_floats(logs)
            if cb is not None:
                cb.on_test_batch_end(step, logs)
        if not ran:  # rather than [] for a loss (predict raises too)
            raise ValueError(_EMPTY % ("test_function", "evaluation"))
        logs = _to_floats(logs)
        if cb is not None:
            cb.on_test_end(logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, max_queue_size=10, workers=1,
                 use_multiprocessing=False, return_dict=False):
        """The loss and metrics on the data: a scalar, a list [loss, metric...] or a dict."""
        self._check_compiled("training/testing")
        verbose = 1 if verbose == "auto" else int(verbose)
        data = _DataHandler(x, y, sample_weight, batch_size, shuffle=False, steps=steps)
        cbs = _user_callbacks(callbacks)
        if verbose:
            cbs.insert(0, _callbacks.ProgbarLogger())
        cb = _callbacks.CallbackList(cbs, model=self, verbose=verbose, epochs=1, steps=data.steps,
                                     _evaluating=True)
        logs = self._evaluate_loop(data, cb)
        if return_dict:
            return logs
        values = [logs[m.name] for m in self.metrics if m.name in logs]
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None,
                max_queue_size=10, workers=1, use_multiprocessing=False):
        """Outputs for every input sample, as NumPy arrays (concatenated over batches)."""
        verbose = 1 if verbose == "auto" else int(verbose)
        data = _DataHandler(x, None, None, batch_size, shuffle=False, steps=steps)
        cbs = _user_callbacks(callbacks)
        if verbose:
            cbs.insert(0, _callbacks.ProgbarLogger())
        cb = _callbacks.CallbackList(cbs, model=self, verbose=verbose, epochs=1, steps=data.steps)
        cb.on_predict_begin()
        outs = []
        predict_fn = _steps.predict_function(self)
        for step, batch in enumerate(data.batches(0)):
            cb.on_predict_batch_begin(step)
            out = predict_fn(batch)  # (under a strategy: split over the replicas)
            outs.append([np.asarray(o) for o in _nest.flatten(out)])
            cb.on_predict_batch_end(step, {"outputs": out})
        cb.on_predict_end()
        if not outs:
            raise ValueError("Unexpected result of `predict_function` (Empty batch_outputs). "
                             "Please use `Model.compile(..., run_eagerly=True)`, or check that "
                             "your input data is not empty.")
        merged = [np.concatenate([o[i] for o in outs]) for i in range(len(outs[0]))]
        if self._is_graph_network:
            return _nest.pack_sequence_as(self._nested_outputs, merged)
        return merged[0] if len(merged) == 1 else merged

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       reset_metrics=True, return_dict=False):
        self._check_compiled("training/testing")
        if class_weight is not None:
            sample_weight = _class_weight.apply(_class_weight.table(class_weight), y,
                                                sample_weight)
        if reset_metrics:
            self.reset_metrics()
        logs = _to_floats(_steps.train_function(self)(_as_tensors((x, y, sample_weight))))
        if return_dict:
            return logs
        values = [logs[m.name] for m in self.metrics]
        return values[0] if len(values) == 1 else values

    def test_on_batch(self, x, y=None, sample_weight=None, reset_metrics=True, return_dict=False):
        self._check_compiled("training/testing")
        if reset_metrics:
            self.reset_metrics()
        logs = _to_floats(_steps.test_function(self)(_as_tensors((x, y, sample_weight))))
        if return_dict:
            return logs
        values = [logs[m.name] for m in self.metrics]
        return values[0] if len(values) == 1 else values

    def predict_on_batch(self, x):
        out = _steps.predict_function(self)(_as_tensors((x, None, None)))
        return _nest.map_structure(np.asarray, out)

    # ---------------------------------------------------------------- summary, weights

    @property
    def distribute_strategy(self):
        """The tf.distribute.Strategy the model was created or compiled under, else the
        current one (tf-keras)."""
        from mixprec.distribute import _context as _dctx

        return self.__dict__.get("_distribute_strategy") or _dctx.get_strategy()

    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False,
                show_trainable=False, layer_range=None):
        """Prints the layers, output shapes and parameter counts (tf-keras' table)."""
        from mixprec.keras.utils.summary import print_summary

        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by "
                             "calling `build()` or by calling the model on a batch of data.")
        print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn,
                      expand_nested=expand_nested, show_trainable=show_trainable,
                      layer_range=layer_range)

    def save_weights(self, filepath, overwrite=True, save_format=None, options=None):
        """Saves the weights (and optimizer state); see src/mixprec/keras/saving/."""
        from mixprec.keras.saving import weights_io

        return weights_io.save_weights(self, filepath, overwrite=overwrite,
                                       save_format=save_format, options=options)

    def load_weights(self, filepath, by_name=False, skip_mismatch=False, options=None):
        """Loads weights saved by ``save_weights``; see src/mixprec/keras/saving/."""
        from mixprec.keras.saving import weights_io

        return weights_io.load_weights(self, filepath, by_name=by_name,
                                       skip_mismatch=skip_mismatch, options=options)


# -------------------------------------------------------------------- data


def _unpack(data):
    if isinstance(data, tuple):
        if len(data) == 1:
            return data[0], None, None
        if len(data) == 2:
            return data[0], data[1], None
        if len(data) == 3:
            return data
    return data, None, None


def _batch_dim(y, y_pred):
    """The batch size the loss tracker weights a batch's mean loss by (tf-keras does the
    same), so an epoch's loss is the mean over samples even with a smaller last batch."""
    for t in _nest.flatten(y) + _nest.flatten(y_pred):
        shape = getattr(t, "shape", None)
        if shape is not None and len(shape):
            return float(shape[0])
    return None


def _unpack_tuple(data):
    if _data_streams.is_stream(data):
        return data, None, None
    if isinstance(data, (tuple, list)):
        if len(data) == 2:
            return data[0], data[1], None
        if len(data) == 3:
            return tuple(data)
    return data, None, None


def _positive_int(value, name):
    """Any integral (np.int64 from an array's shape too), as tf-keras takes it."""
    try:
        if isinstance(value, bool):
            raise TypeError
        value = operator.index(value)
    except TypeError:
        raise ValueError("%s must be a positive integer, got %r" % (name, value)) from None
    if value < 1:
        raise ValueError("%s must be a positive integer, got %r" % (name, value))
    return value


def _validation_epochs(freq):
    """fit's ``validation_freq`` as a test of the (1-based) epoch number: every ``freq``
    epochs, or the epochs a container names (tf-keras takes an int or a list)."""
    if isinstance(freq, (list, tuple, set, frozenset, range)):
        epochs = set()
        for e in freq:
            if isinstance(e, bool) or not isinstance(e, numbers.Integral) or e < 1:
                raise ValueError("`validation_freq` names the epochs to validate after, "
                                 "counted from 1; got %r in validation_freq=%r" % (e, freq))
            epochs.add(int(e))
        return epochs.__contains__
    if isinstance(freq, bool) or not isinstance(freq, numbers.Integral):
        raise ValueError("Expected `validation_freq` to be a list or int. Received: "
                         "validation_freq=%r of the type %s." % (freq, type(freq)))
    if freq < 1:
        raise ValueError("`validation_freq` must be at least 1 (validate every n epochs), got "
                         "%r. hint: to never validate, pass no validation_data" % (freq,))
    freq = int(freq)
    return lambda epoch: epoch % freq == 0


def _user_callbacks(callbacks):
    """``callbacks=`` of fit/evaluate/predict as a list: a list or tuple, a CallbackList,
    or one callback (tf-keras flattens the argument)."""
    if callbacks is None:
        return []
    if isinstance(callbacks, _callbacks.CallbackList):
        return list(callbacks.callbacks)
    if isinstance(callbacks, _callbacks.Callback):
        return [callbacks]
    out = list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
    for cb in out:
        if not (hasattr(cb, "set_model") and hasattr(cb, "set_params")):
            raise TypeError("callbacks must be keras.callbacks.Callback instances (a list of "
                            "them, or one), got %r of type %s" % (cb, type(cb).__name__))
    return out


def _lists_as_array(data):
    """Nested Python lists of numbers are one array (tf-keras' ListsOfScalarsDataAdapter),
    not a structure of one input per number; a list of arrays stays a list of inputs."""
    first = data
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if first is not data and isinstance(first, (numbers.Number, np.generic)):
        return np.asarray(data)
    return data


def _as_tensors(batch):
    def conv(v):
        if v is None or isinstance(v, _core.Tensor):
            return v
        return _core.convert_to_tensor(np.asarray(v) if not isinstance(v, _core.Variable) else v)
    x, y, sw = (_lists_as_array(v) for v in batch)
    return (_nest.map_structure(conv, x) if x is not None else None,
            _nest.map_structure(conv, y) if y is not None else None,
            conv(sw))


def _to_floats(results):
    out = {}
    for k, v in results.items():
        try:
            out[k] = float(v)
        except (TypeError, ValueError):
            out[k] = v
    return out


def _np(v):
    if isinstance(v, _core.Tensor):
        return v.numpy()
    if isinstance(v, _core.Variable):
        return v.numpy()
    return np.asarray(v)


def _split(x, y, sw, fraction):
    from mixprec.data import Dataset

    if isinstance(x, Dataset):
        raise ValueError("`validation_split` is only supported for Tensors or NumPy arrays, "
                         "found following types in the input: %s" % type(x))
    xs = _nest.map_structure(_np, x)
    n = len(_nest.flatten(xs)[0])
    cut = int(math.floor(n * (1.0 - fraction)))
    if cut == 0 or cut == n:
        raise ValueError("Training data contains %d samples, which is not sufficient to split it "
                         "into a validation and training set as specified by "
                         "`validation_split=%s`. Either provide more data, or a different value "
                         "for the `validation_split` argument." % (n, fraction))

    def head(a):
        return a[:cut]

    def tail(a):
        return a[cut:]

    ys = _nest.map_structure(_np, y) if y is not None else None
    sws = _np(sw) if sw is not None else None
    train = (_nest.map_structure(head, xs), _nest.map_structure(head, ys) if ys is not None else
             None, head(sws) if sws is not None else None)
    val = (_nest.map_structure(tail, xs), _nest.map_structure(tail, ys) if ys is not None else
           None, tail(sws) if sws is not None else None)
    return train, val


class _DataHandler:
    """Batches of (x, y, sample_weight) from arrays/tensors (sliced on the host, shuffled
    per epoch) or from a mixprec.data.Dataset (used as it is)."""

    def __init__(self, x, y, sw, batch_size, shuffle, steps, steps_arg="steps",
                 class_weights=None):
        from mixprec.data import Dataset

        self._class_weights = class_weights  # fit's class_weight as a table, or None
        self._dataset = None
        stream = _data_streams.is_stream(x)
        if stream:  # a Python generator or a keras.utils.Sequence, read like a Dataset
            x = _data_streams.Stream(x, y, sw, shuffle)
            y = sw = None
        if stream or isinstance(x, Dataset):
            if y is not None:
                raise ValueError("`y` argument is not supported when using dataset as input.")
            self._dataset = x
            self.epochs = 1  # set by fit, for the ran-out-of-data message
            self._iter = None
            self.ran_out = False
            n = x._cardinality()
            # tf-keras' rule (DatasetAdapter.should_recreate_iterator): a fresh pass per epoch
            # unless steps_per_epoch is given and differs from the dataset's length; then
            # one iterator runs on across epochs. A generator is never restarted; a
            # Sequence always is.
            self._recreate = x.recreate if stream else (
                steps is None or (n is not None and n >= 0 and n == steps))
            if steps is None:
                if n is not None and n < 0:
                    raise ValueError("When passing an infinitely repeating dataset, please "
                                     "specify a `%s` value so that epoch level callbacks "
                                     "continue to work." % steps_arg)
                # None: a finite dataset of unknown length (filter, unbatch); the first
                # pass runs to its end and sets the length, as tf-keras' DataHandler
                steps = n
            self.steps = steps
            return
        if x is None:
            raise ValueError("Model.fit/evaluate/predict needs input data `x`.")
        if batch_size is not None:
            batch_size = _positive_int(batch_size, "batch_size")
        self._x = _nest.map_structure(_np, _lists_as_array(x))
        self._y = _nest.map_structure(_np, _lists_as_array(y)) if y is not None else None
        self._sw = _np(sw) if sw is not None else None
        lengths = set()
        for what, data in (("x", self._x), ("y", self._y), ("sample_weight", self._sw)):
            for a in _nest.flatten(data) if data is not None else ():
                if a.ndim == 0:
                    raise ValueError("`%s` holds a scalar (%r): the data are arrays whose "
                                     "first dimension counts the samples" % (what, a.item()))
                lengths.add(len(a))
        if len(lengths) != 1:
            raise ValueError("Data cardinality is ambiguous: make sure all arrays contain the same "
                             "number of samples. Sizes: %s" % sorted(lengths))
        self._n = lengths.pop()
        self._bs = batch_size or 32
        self._shuffle = shuffle
        full = int(math.ceil(self._n / self._bs)) if self._n else 0
        self.steps = min(steps, full) if steps is not None else full

    def batches(self, epoch):
        if self._dataset is not None:
            if self._iter is None or self._recreate:
                self._iter = iter(self._dataset)
            counting = self.steps is None
            done = 0
            while counting or done < self.steps:
                try:
                    elem = next(self._iter)
                except StopIteration:
                    if counting:
                        self.steps = done
                    else:
                        self.ran_out = True
                        _logging.get_logger().warning(
                            "Your input ran out of data; interrupting training. Make sure "
                            "that your dataset or generator can generate at least "
                            "`steps_per_epoch * epochs` batches (in this case, %d batches). "
                            "You may need to use the repeat() function when building your "
                            "dataset.", self.steps * self.epochs)
                    return
                done += 1
                yield self._weighted(_unpack(elem) if isinstance(elem, tuple)
                                     else (elem, None, None))
            if isinstance(self._dataset, _data_streams.Stream):
                self._dataset.on_epoch_end()
            return
        if self._shuffle and self._shuffle != "batch":
            key, stream = _random.get_seed(None)
            order = np.random.default_rng([key, stream]).permutation(self._n)
        else:
            order = None
        for s in range(self.steps):
            lo, hi = s * self._bs, min((s + 1) * self._bs, self._n)
            if order is None:
                def take(a):
                    return a[lo:hi]
            else:
                idx = order[lo:hi]

                def take(a):
                    return a[idx]
            x = _nest.map_structure(take, self._x)
            y = _nest.map_structure(take, self._y) if self._y is not None else None
            sw = take(self._sw) if self._sw is not None else None
            yield self._weighted((x, y, sw))

    def _weighted(self, batch):
        """The batch as tensors, its sample weights including fit's class weights."""
        if self._class_weights is not None:
            x, y, sw = batch
            batch = (x, y, _class_weight.apply(self._class_weights, y, sw))
        return _as_tensors(batch)
