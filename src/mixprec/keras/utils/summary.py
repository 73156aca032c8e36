"""Model.summary(): tf-keras' table, with a dtype-policy column."""

__all__ = ["print_summary"]


def _count(layer):
    n = 0
    for w in layer.weights:
        k = 1
        for d in w.shape:
            k *= d
        n += k
    return n


def _shape_str(layer):
    try:
        shape = layer.output_shape
    except AttributeError:
        return "multiple"
    if isinstance(shape, list):
        return str([tuple(s) for s in shape])
    if type(layer).__name__ == "InputLayer":
        return "[%s]" % (tuple(shape),)
    return str(tuple(shape))


def print_summary(model, line_length=None, positions=None, print_fn=None):
    print_fn = print_fn or print
    line_length = line_length or 90
    positions = positions or [0.31, 0.56, 0.70, 1.0]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    header = ["Layer (type)", "Output Shape", "Param #", "Dtype policy"]

    def row(fields):
        # a field too long for its column continues on the next line (as tf-keras wraps),
        # rather than being cut: 'activation_12 (Activation' + ')'
        left = [str(f) for f in fields]
        while any(left):
            line = ""
            for i, f in enumerate(left):
                start = positions[i - 1] if i else 0
                # at least one character a pass, however cramped the positions: the
                # loop always ends
                width = max(1, positions[i] - start - (1 if i < len(left) - 1 else 0))
                line += f[:width]
                left[i] = f[width:]
                line += " " * (positions[i] - len(line))
            print_fn(line)

    print_fn('Model: "%s"' % model.name)
    print_fn("_" * line_length)
    row([" " + h for h in header])
    print_fn("=" * line_length)
    layers = model.layers
    if getattr(model, "_is_graph_network", False):
        layers = model._graph_layers
    for i, layer in enumerate(layers):
        row([" %s (%s)" % (layer.name, type(layer).__name__), " " + _shape_str(layer),
             " %d" % _count(layer), " " + layer.dtype_policy.name])
        if i != len(layers) - 1:
            print_fn(" " * line_length)
    print_fn("=" * line_length)
    trainable = sum(_numel(w) for w in model.trainable_weights)
    total = sum(_numel(w) for w in model.weights)
    print_fn("Total params: {:,}".format(total))
    print_fn("Trainable params: {:,}".format(trainable))
    print_fn("Non-trainable params: {:,}".format(total - trainable))
    print_fn("_" * line_length)


def _numel(w):
    n = 1
    for d in w.shape:
        n *= d
    return n
