"""``tf.nn``: activations and (later) losses' building blocks."""

from mixprec import _core

relu = _core.relu
sigmoid = _core.sigmoid
tanh = _core.tanh
softplus = _core.softplus
softmax = _core.softmax
log_softmax = _core.log_softmax


def elu(features, name=None):
    return _core.elu(features, alpha=1.0)


def leaky_relu(features, alpha=0.2, name=None):
    return _core.leaky_relu(features, alpha=float(alpha))


def gelu(features, approximate=False, name=None):
    return _core.gelu(features, approximate=bool(approximate))


def relu6(features, name=None):
    return _core.minimum(_core.relu(features), 6)


def silu(features, beta=1.0, name=None):
    x = _core.convert_to_tensor(features)
    return x * _core.sigmoid(x * beta if beta != 1.0 else x)


swish = silu
