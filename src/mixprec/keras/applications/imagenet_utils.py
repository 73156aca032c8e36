"""``keras.applications.imagenet_utils``: what every application family shares — the input
shape rules, the ``weights`` argument (no downloads here: a local .h5 or the Keras cache),
``preprocess_input`` in tf-keras' caffe/tf/torch modes and ``decode_predictions``.
It builds no architecture; numbers on tensors go through core ops (numpy arrays stay numpy,
as tf-keras treats them)."""

import json
import os
import warnings

import numpy as np

__all__ = ["preprocess_input", "decode_predictions"]

CLASS_INDEX = None
CLASS_INDEX_FILE = "imagenet_class_index.json"
_CAFFE_MEAN = [103.939, 116.779, 123.68]
_TORCH_MEAN = [0.485, 0.456, 0.406]
_TORCH_STD = [0.229, 0.224, 0.225]


def _backend():
    from mixprec.keras import backend

    return backend


def _data_format(data_format):
    if data_format is None:
        return _backend().image_data_format()
    if data_format not in {"channels_first", "channels_last"}:
        raise ValueError("Expected data_format to be one of `channels_first` or "
                         "`channels_last`. Received: data_format=%s" % (data_format,))
    return data_format


def preprocess_input(x, data_format=None, mode="caffe"):
    """tf-keras' ImageNet preprocessing: ``caffe`` (RGB->BGR, minus the BGR means),
    ``tf`` (scaled to [-1, 1]) or ``torch`` (scaled to [0, 1], normalised per channel).
    A float numpy array is changed in place and returned, as tf-keras does."""
    if mode not in {"caffe", "tf", "torch"}:
        raise ValueError("Expected mode to be one of `caffe`, `tf` or `torch`. "
                         "Received: mode=%s" % (mode,))
    data_format = _data_format(data_format)
    if isinstance(x, np.ndarray):
        return _preprocess_numpy(x, data_format, mode)
    return _preprocess_tensor(x, data_format, mode)


def _channel_view(x, data_format, c):
    if data_format == "channels_last":
        return x[..., c]
    return x[c] if x.ndim == 3 else x[:, c]


def _preprocess_numpy(x, data_format, mode):
    if not issubclass(x.dtype.type, np.floating):
        x = x.astype(_backend().floatx(), copy=False)
    if mode == "tf":
        x /= 127.5
        x -= 1.0
        return x
    if mode == "torch":
        x /= 255.0
        mean, std = _TORCH_MEAN, _TORCH_STD
    else:
        if data_format == "channels_last":
            x = x[..., ::-1]
        else:
            x = x[::-1, ...] if x.ndim == 3 else x[:, ::-1, ...]
        mean, std = _CAFFE_MEAN, None
    for c in range(3):  # three whole-channel numpy operations, not an element loop
        ch = _channel_view(x, data_format, c)
        ch -= mean[c]
        if std is not None:
            ch /= std[c]
    return x


def _preprocess_tensor(x, data_format, mode):
    import mixprec as tf

    x = tf.convert_to_tensor(x)
    if mode == "tf":
        return x / 127.5 - 1.0
    if mode == "torch":
        x = x / 255.0
        mean, std = _TORCH_MEAN, _TORCH_STD
    else:
        axis = -1 if data_format == "channels_last" else (0 if x.shape.rank == 3 else 1)
        x = tf.reverse(x, [axis])
        mean, std = _CAFFE_MEAN, None
    neg_mean = tf.constant([-m for m in mean], dtype=x.dtype)
    if data_format == "channels_first" and x.shape.rank == 3:
        x = x + tf.reshape(neg_mean, (3, 1, 1))
    else:
        x = tf.nn.bias_add(x, neg_mean, data_format="NHWC" if data_format == "channels_last"
                           else "NCHW")
    if std is not None:
        s = tf.constant(std, dtype=x.dtype)
        x = x / (tf.reshape(s, (-1, 1, 1)) if data_format == "channels_first" else s)
    return x


def _load_class_index(class_index):
    if isinstance(class_index, dict):
        return class_index
    path = class_index
    if path is None:
        from mixprec.keras.utils.data_prep import _cache_dir

        path = os.path.join(_cache_dir(None, "models"), CLASS_INDEX_FILE)
        if not os.path.exists(path):
            raise ValueError(
                "decode_predictions needs ImageNet's class index file (%s), which mixprec "
                "cannot download here; it was not found at %s. Put the file there or pass "
                "`class_index='/path/to/%s'`" % (CLASS_INDEX_FILE, path, CLASS_INDEX_FILE))
    with open(path) as f:
        return json.load(f)


def decode_predictions(preds, top=5, class_index=None):
    """Per sample, the ``top`` (class id, class name, score) tuples, best first.
    ``class_index`` (mixprec's addition): a path to imagenet_class_index.json or its dict;
    by default the file in the Keras cache (~/.keras/models) as tf-keras uses it."""
    global CLASS_INDEX
    preds = np.asarray(preds.numpy() if hasattr(preds, "numpy") else preds)
    if len(preds.shape) != 2 or preds.shape[1] != 1000:
        raise ValueError("`decode_predictions` expects a batch of predictions (i.e. a 2D "
                         "array of shape (samples, 1000)). Found array with shape: "
                         + str(preds.shape))
    if class_index is not None:
        index = _load_class_index(class_index)
    else:
        if CLASS_INDEX is None:
            CLASS_INDEX = _load_class_index(None)
        index = CLASS_INDEX
    results = []
    for pred in preds:
        top_ids = pred.argsort()[-top:][::-1]
        result = [tuple(index[str(i)]) + (pred[i],) for i in top_ids]
        result.sort(key=lambda r: r[2], reverse=True)
        results.append(result)
    return results


# --- shared by the builders (private) -------------------------------------------------------

def obtain_input_shape(input_shape, default_size, min_size, data_format, require_flatten,
                       weights=None):
    """The model's input shape from the user's ``input_shape`` (tf-keras' rules)."""
    last = data_format != "channels_first"
    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        ch = input_shape[-1] if last else input_shape[0]
        if ch not in {1, 3}:
            warnings.warn("This model usually expects 1 or 3 input channels. However, it was "
                          "passed an input_shape with %s input channels." % ch, stacklevel=3)
        default_shape = (default_size, default_size, ch) if last else (ch, default_size,
                                                                       default_size)
    else:
        default_shape = (default_size, default_size, 3) if last else (3, default_size,
                                                                      default_size)
    if weights == "imagenet" and require_flatten:
        if input_shape is not None and tuple(input_shape) != default_shape:
            raise ValueError("When setting `include_top=True` and loading `imagenet` weights, "
                             "`input_shape` should be %s.  Received: input_shape=%s"
                             % (default_shape, input_shape))
        return default_shape
    if input_shape:
        if len(input_shape) != 3:
            raise ValueError("`input_shape` must be a tuple of three integers.")
        ch = input_shape[-1] if last else input_shape[0]
        if ch != 3 and weights == "imagenet":
            raise ValueError("The input must have 3 channels; Received `input_shape=%s`"
                             % (input_shape,))
        rows, cols = (input_shape[0], input_shape[1]) if last else (input_shape[1],
                                                                    input_shape[2])
        if (rows is not None and rows < min_size) or (cols is not None and cols < min_size):
            raise ValueError("Input size must be at least %dx%d; Received: input_shape=%s"
                             % (min_size, min_size, input_shape))
    elif require_flatten:
        input_shape = default_shape
    else:
        input_shape = (None, None, 3) if last else (3, None, None)
    if require_flatten and None in tuple(input_shape):
        raise ValueError("If `include_top` is True, you should specify a static "
                         "`input_shape`. Received: input_shape=%s" % (input_shape,))
    return tuple(input_shape)


def correct_pad(inputs, kernel_size):
    """Zero padding ((top, bottom), (left, right)) before a stride-2 'valid' convolution."""
    first = _backend().image_data_format() == "channels_first"
    shape = tuple(inputs.shape)
    size = shape[2:4] if first else shape[1:3]
    if isinstance(kernel_size, int):
        kernel_size = (kernel_size, kernel_size)
    adjust = (1, 1) if size[0] is None else (1 - size[0] % 2, 1 - size[1] % 2)
    correct = (kernel_size[0] // 2, kernel_size[1] // 2)
    return ((correct[0] - adjust[0], correct[0]), (correct[1] - adjust[1], correct[1]))


def validate_activation(classifier_activation, weights):
    if weights is None:
        return
    from mixprec.keras import activations

    act = activations.get(classifier_activation)
    if act not in {activations.get("softmax"), activations.get(None)}:
        raise ValueError("Only `None` and `softmax` activations are allowed for the "
                         "`classifier_activation` argument when using pretrained weights, with "
                         "`include_top=True`; Received: classifier_activation=%s"
                         % (classifier_activation,))


def check_weights(weights, include_top, classes):
    """tf-keras' checks of ``weights`` and ``classes`` before a build."""
    if not (weights in {"imagenet", None} or (isinstance(weights, (str, os.PathLike))
                                              and os.path.exists(weights))):
        raise ValueError("The `weights` argument should be either `None` (random "
                         "initialization), `imagenet` (pre-training on ImageNet), or the path "
                         "to the weights file to be loaded.  Received: weights=%s" % (weights,))
    if weights == "imagenet" and include_top and classes != 1000:
        raise ValueError('If using `weights` as `"imagenet"` with `include_top` as true, '
                         "`classes` should be 1000.  Received: classes=%s" % (classes,))


def image_input(input_tensor, input_shape):
    """The model's image input: ``input_tensor`` when it is a Keras tensor, else an Input."""
    from mixprec.keras import backend
    from mixprec.keras.engine.input_layer import Input

    if input_tensor is None:
        return Input(shape=input_shape)
    if not backend.is_keras_tensor(input_tensor):
        raise ValueError("`input_tensor` must be a Keras tensor (e.g. `keras.Input(...)` or a "
                         "layer's output) in mixprec; Received: %r" % (input_tensor,))
    return input_tensor


def finish_model(input_tensor, img_input, outputs, name, weights, imagenet_file):
    """The Model from the graph, with ``weights`` loaded: a local file path, or for
    'imagenet' the file tf-keras would have downloaded (``imagenet_file``) if it is already
    in the Keras cache (~/.keras/models); mixprec downloads nothing."""
    from mixprec.keras.engine.training import Model
    from mixprec.keras.utils.data_prep import get_source_inputs

    inputs = get_source_inputs(input_tensor) if input_tensor is not None else img_input
    model = Model(inputs, outputs, name=name)
    if weights == "imagenet":
        from mixprec.keras.utils.data_prep import _cache_dir

        path = os.path.join(_cache_dir(None, "models"), imagenet_file)
        if not os.path.exists(path):
            raise ValueError(
                "Pre-trained ImageNet weights cannot be downloaded by mixprec (no network "
                "access for weights): '%s' is not in the Keras cache (%s). Pass `weights=None` "
                "for a randomly initialised model, or `weights='/path/to/%s'` (the .h5 file "
                "tf-keras publishes) to load it." % (imagenet_file, path, imagenet_file))
        model.load_weights(path)
    elif weights is not None:
        model.load_weights(weights)
    return model
