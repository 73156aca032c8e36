"""The order of a functional model's layers, as tf-keras computes it: by depth from the
outputs (deepest first), ties broken by the order a depth-first walk from the outputs
first meets the layers. ``model.layers``, ``summary()``, ``weights``, configs and the
saved files' layer numbering (``layers/dense_1``) all follow it, so they match
tf-keras for branching models too. Owns the ordering only; running the graph is
training.py's (``_nodes``, topological)."""

__all__ = ["layers_by_depth"]


def layers_by_depth(inputs, outputs):
    """The layers between ``inputs`` and ``outputs`` (KerasTensors), tf-keras' order."""
    layer_index = {}  # id(layer) -> first visit (pre-order)
    layers = {}
    post = []  # nodes, post-order: parents before children
    done, active = set(), set()

    def visit(kt):
        layer, node_index, _ = kt._keras_history
        node = layer._inbound_nodes[node_index]
        if id(node) in done:
            return
        if id(node) in active:
            raise ValueError("The tensor %r at layer %r is part of a cycle." % (kt, layer.name))
        if id(layer) not in layer_index:
            layer_index[id(layer)] = len(layer_index)
            layers[id(layer)] = layer
        active.add(id(node))
        for parent in node.keras_inputs:
            visit(parent)
        active.discard(id(node))
        done.add(id(node))
        post.append(node)

    for kt in outputs:
        visit(kt)
    node_depth, layer_depth = {}, {}
    for node in reversed(post):
        depth = max(node_depth.get(id(node), 0), layer_depth.get(id(node.layer), 0))
        layer_depth[id(node.layer)] = depth
        node_depth[id(node)] = depth
        for kt in node.keras_inputs:
            layer, index, _ = kt._keras_history
            parent = layer._inbound_nodes[index]
            node_depth[id(parent)] = max(depth + 1, node_depth.get(id(parent), 0))
    for kt in inputs:  # an input no output depends on still belongs to the model
        layer = kt._keras_history[0]
        if id(layer) not in layer_depth:
            layer_depth[id(layer)] = 0
            layer_index[id(layer)] = -1
            layers[id(layer)] = layer
    order = sorted(layers, key=lambda k: (-layer_depth[k], layer_index[k]))
    return [layers[k] for k in order]
