"""``tf.keras.backend``: floatx, epsilon, unique layer names, clear_session."""

import collections
import re
import threading

__all__ = ["floatx", "set_floatx", "epsilon", "set_epsilon", "clear_session",
           "unique_object_name", "is_keras_tensor", "learning_phase", "image_data_format",
           "set_image_data_format", "int_shape", "get_value", "set_value", "cast_to_floatx",
           "count_params"]

_FLOATX = "float32"
_EPSILON = 1e-7
_IMAGE_DATA_FORMAT = "channels_last"
_names = collections.defaultdict(int)
_names_lock = threading.Lock()
# tf-keras' _SEED_GENERATOR: keras.utils.set_random_seed puts a random.Random(seed) here, and
# unseeded initializers take their seed from it (else from Python's random module)
_SEED_GENERATOR = threading.local()


def floatx():
    """The default float dtype name ('float32')."""
    return _FLOATX


def set_floatx(value):
    global _FLOATX
    if value not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError("Unknown floatx type: %s" % (value,))
    _FLOATX = str(value)


def epsilon():
    """The fuzz factor used in numeric expressions (1e-7)."""
    return _EPSILON


def set_epsilon(value):
    global _EPSILON
    _EPSILON = float(value)


def image_data_format():
    """The default data_format of convolution and pooling layers ('channels_last')."""
    return _IMAGE_DATA_FORMAT


def set_image_data_format(data_format):
    global _IMAGE_DATA_FORMAT
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("The `data_format` argument must be one of \"channels_first\", "
                         "\"channels_last\". Received: %s" % (data_format,))
    _IMAGE_DATA_FORMAT = str(data_format)


def _snake(name):
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    s = re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()
    return s


def unique_object_name(base, zero_based=True):
    """'dense', then 'dense_1', 'dense_2' ... per process (until clear_session); with
    ``zero_based=False`` the first is 'base_1' (tf-keras names inputs 'input_1', 'input_2')."""
    with _names_lock:
        n = _names[base]
        _names[base] += 1
    if not zero_based:
        n += 1
    return base if n == 0 else "%s_%d" % (base, n)


def clear_session():
    """Resets layer-name counters (Keras' clear_session for naming purposes)."""
    with _names_lock:
        _names.clear()


def is_keras_tensor(x):
    from mixprec.keras.engine.keras_tensor import KerasTensor

    return isinstance(x, KerasTensor)


def learning_phase():
    """0 (inference) unless set_learning_phase / learning_phase_scope set it."""
    phase = globals().get("_LEARNING_PHASE")
    return 0 if phase is None else phase

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error


def int_shape(x):
    """The shape as a tuple of ints (None where unknown), as tf-keras."""
    shape = x.shape
    as_list = getattr(shape, "as_list", None)
    try:
        return tuple(as_list()) if as_list is not None else tuple(shape)
    except ValueError:  # unknown rank
        return None


def get_value(x):
    """A variable's or tensor's value as NumPy (a NumPy value is returned as it is)."""
    return x.numpy() if hasattr(x, "numpy") else x


def set_value(x, value):
    """Assigns ``value`` (NumPy or a number) to the variable ``x``."""
    import numpy as np

    x.assign(np.asarray(value, dtype=getattr(x, "true_dtype", x.dtype).name))


def cast_to_floatx(x):
    """``x`` as a NumPy value of floatx (float32 by default)."""
    import numpy as np

    return np.asarray(x, dtype=floatx())


def count_params(x):
    """The number of elements of a variable or tensor (a NumPy int64, as tf-keras)."""
    import numpy as np

    n = 1
    for d in int_shape(x):
        n *= d
    return np.int64(n)


from mixprec.keras import _backend_ops  # noqa: E402
from mixprec.keras._backend_ops import *  # noqa: E402,F401,F403

from mixprec.keras import _backend_more  # noqa: E402
from mixprec.keras._backend_more import *  # noqa: E402,F401,F403

__all__ = __all__ + _backend_ops.__all__ + _backend_more.__all__
