"""Model.summary(): tf-keras 2.21's table. A chain of layers (Sequential, a subclassed model,
or a functional model whose every depth holds one single-input node) prints three columns
in 65 characters; any other functional model adds 'Connected to' in 98. Totals show the
weights' memory; ``expand_nested`` lists nested models' layers inside bar-and-macron
frames. Printing only."""

import re

__all__ = ["print_summary"]

_BREAKS = ("),", "},", "],", "',")  # a wrapped field breaks after one of these


def _unique(weights):
    return list({id(w): w for w in weights}.values())


def _numel(w):
    n = 1
    for d in w.shape:
        n *= 0 if d is None else d
    return n


def _count(weights):
    return int(sum(_numel(w) for w in _unique(weights)))


def _memory(weights):
    from mixprec._dtypes import as_dtype

    total = 0
    for w in _unique(weights):
        if any(d is None for d in w.shape):
            continue
        total += _numel(w) * as_dtype(w.dtype).size
    return total


def _readable(size):
    for unit in ("Byte", "KB", "MB", "GB", "TB"):
        if size / 1024 < 1:
            return "{:.2f} {}".format(size, unit)
        size /= 1024
    return "{:.2f} {}".format(size, "PB")


def _output_shape(layer):
    """The output shape of the layer's calls; 'multiple' when it was never called
    symbolically or its calls gave different shapes (tf-keras' output_shape)."""
    shapes = []
    for node in layer._inbound_nodes:
        outs = node.flat_outputs
        if type(layer).__name__ == "InputLayer" or len(outs) != 1:
            shapes.append([tuple(o.shape) for o in outs])
        else:
            shapes.append(tuple(outs[0].shape))
    if not shapes or any(str(s) != str(shapes[0]) for s in shapes):
        return "multiple"
    return shapes[0]


def _class_name(layer):
    """tf-keras' class name: keras.Model(inputs, outputs) makes a 'Functional'."""
    from mixprec.keras.engine.training import Model

    if type(layer) is Model and getattr(layer, "_is_graph_network", False):
        return "Functional"
    return type(layer).__name__


def _model_nodes(model):
    """The nodes of a functional model (input layers' included) and their depth from the
    outputs (tf-keras' _nodes_by_depth)."""
    depth = {}
    stack = [(kt._keras_history[0]._inbound_nodes[kt._keras_history[1]], 0)
             for kt in model.outputs]
    while stack:
        node, d = stack.pop()
        if depth.get(id(node), (None, -1))[1] >= d:
            continue
        depth[id(node)] = (node, d)
        for kt in node.keras_inputs:
            layer, index, _ = kt._keras_history
            stack.append((layer._inbound_nodes[index], d + 1))
    return list(depth.values())


def _sequential_like(model):
    if type(model).__name__ == "Sequential" or not getattr(model, "_is_graph_network", False):
        return True, []
    nodes = _model_nodes(model)
    by_depth = {}
    for node, d in nodes:
        by_depth.setdefault(d, []).append(node)
    for group in by_depth.values():
        if len(group) > 1 or len(group[0].keras_inputs) > 1:
            return False, [n for n, _ in nodes]
    ids = {id(n) for n, _ in nodes}
    for layer in model.layers:
        if sum(id(n) in ids for n in layer._inbound_nodes) > 1:
            return False, [n for n, _ in nodes]
    return True, [n for n, _ in nodes]


def _layer_range(model, layer_range):
    layers = model.layers
    if layer_range is None:
        return 0, len(layers)
    if len(layer_range) != 2:
        raise ValueError("layer_range must be a list or tuple of length 2. Received: "
                         "layer_range = %s of length %d" % (layer_range, len(layer_range)))
    if not isinstance(layer_range[0], str) or not isinstance(layer_range[1], str):
        raise ValueError("layer_range should contain string type only. Received: %s"
                         % (layer_range,))
    first = [i for i, lyr in enumerate(layers) if re.match(layer_range[0], lyr.name)]
    last = [i for i, lyr in enumerate(layers) if re.match(layer_range[1], lyr.name)]
    if not first or not last:
        raise ValueError("Passed layer_names do not match the layer names in the model. "
                         "Received: %s" % (layer_range,))
    if first[0] > last[-1]:
        raise ValueError("layer_range[1] should be after layer_range[0]. Received: %s"
                         % (layer_range,))
    return first[0], last[-1] + 1


def print_summary(model, line_length=None, positions=None, print_fn=None, expand_nested=False,
                  show_trainable=False, layer_range=None):
    print_fn = print_fn or print
    sequential_like, nodes = _sequential_like(model)
    if sequential_like:
        line_length = line_length or 65
        positions = list(positions or [0.45, 0.85, 1.0])
        header = ["Layer (type)", "Output Shape", "Param #"]
    else:
        line_length = line_length or 98
        positions = list(positions or [0.3, 0.6, 0.70, 1.0])
        header = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    if show_trainable:
        line_length += 11
        positions.append(line_length)
        header.append("Trainable")
    node_ids = {id(n) for n in nodes}

    def row(fields, level=0):
        # fields wrap onto continuation lines, preferring to break after '),' '],' ...;
        # a layer nested ``level`` models deep is framed by ``level`` bars on each side
        left = [str(f) for f in fields]
        while any(left):
            line = ""
            for col in range(len(left)):
                start = positions[col - 1] if col else 0
                last = col == len(positions) - 1
                space = 0 if last else 2
                cutoff = positions[col] - start - space - (0 if last else 1)
                if col == 0:
                    cutoff -= level
                cutoff = max(cutoff, 1)  # however cramped: every pass consumes something
                chunk = left[col][:cutoff]
                breaks = [chunk.find(b) + len(b) for b in _BREAKS if chunk.find(b) >= 0]
                if breaks:
                    cutoff = min(breaks)
                    chunk = chunk[:cutoff]
                if col == 0:
                    line += "|" * level + " "
                line += chunk + " " * space
                left[col] = left[col][cutoff:]
                line += " " * (positions[col] - len(line) - (level if last else 0))
            print_fn(line + "|" * level)

    print_fn('Model: "%s"' % model.name)
    print_fn("_" * line_length)
    row(header)
    print_fn("=" * line_length)
    begin, end = _layer_range(model, layer_range)

    def print_layer(layer, level=0, last_nested=False):
        if not layer.built and not getattr(layer, "_is_graph_network", False):
            params = "0 (unused)"
        else:
            params = _count(layer.weights)
        fields = ["%s (%s)" % (layer.name, _class_name(layer)), _output_shape(layer), params]
        if not sequential_like:
            # only the connections inside the summarized model (a nested model's own
            # layers have none there)
            connections = []
            for index, node in enumerate(layer._inbound_nodes):
                if node_ids and id(node) not in node_ids:
                    continue
                for kt in node.keras_inputs:
                    inbound, node_index, tensor_index = kt._keras_history
                    connections.append("%s[%d][%d]" % (inbound.name, node_index, tensor_index))
            fields.append(connections)
        if show_trainable:
            fields.append("Y" if layer.trainable else "N")
        row(fields, level)
        inner = getattr(layer, "layers", None) if expand_nested else None
        if inner:
            # tf-keras frames a nested model's rows between lines of macrons; after the
            # closing frame no blank line follows
            print_fn("|" * (level + 1) + "\u00af" * (line_length - 2 * level - 2)
                     + "|" * (level + 1))
            for i, sub in enumerate(inner):
                print_layer(sub, level + 1, i == len(inner) - 1)
            print_fn("|" * level + "\u00af" * (line_length - 2 * level) + "|" * level)
            last_nested = True
        if not last_nested:
            print_fn("|" * level + " " * (line_length - 2 * level) + "|" * level)

    for layer in model.layers[begin:end]:
        print_layer(layer)
    print_fn("=" * line_length)
    trainable, non_trainable = model.trainable_weights, model.non_trainable_weights
    t_mem, n_mem = _memory(trainable), _memory(non_trainable)
    print_fn("Total params: %d (%s)" % (_count(trainable) + _count(non_trainable),
                                        _readable(t_mem + n_mem)))
    print_fn("Trainable params: %d (%s)" % (_count(trainable), _readable(t_mem)))
    print_fn("Non-trainable params: %d (%s)" % (_count(non_trainable), _readable(n_mem)))
    print_fn("_" * line_length)
