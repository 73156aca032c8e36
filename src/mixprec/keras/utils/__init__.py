"""``tf.keras.utils``: Progbar, to_categorical, set_random_seed, and the serialization
names tf-keras also exports here (their code is in keras/saving/)."""

import numpy as np

from mixprec.keras.saving.object_registration import (  # noqa: F401
    CustomObjectScope, custom_object_scope, get_custom_objects, get_registered_name,
    get_registered_object, register_keras_serializable)
from mixprec.keras.saving.serialization_lib import (  # noqa: F401
    deserialize_keras_object, serialize_keras_object)
from mixprec.keras.utils.data_utils import (  # noqa: F401
    Sequence, pack_x_y_sample_weight, unpack_x_y_sample_weight)
from mixprec.keras.utils.data_prep import *  # noqa: F401,F403
from mixprec.keras.utils.data_prep import __all__ as _prep_names
from mixprec.keras.utils.progbar import Progbar  # noqa: F401
from mixprec.keras.utils.image_dataset import image_dataset_from_directory  # noqa: F401

__all__ = ["Progbar", "to_categorical", "set_random_seed", "CustomObjectScope",
           "custom_object_scope", "get_custom_objects", "get_registered_name",
           "get_registered_object", "register_keras_serializable", "deserialize_keras_object",
           "serialize_keras_object", "pack_x_y_sample_weight", "unpack_x_y_sample_weight",
           "Sequence", "image_dataset_from_directory"] + list(_prep_names)


def to_categorical(y, num_classes=None, dtype="float32"):
    """One-hot NumPy encoding of integer class vectors (host data preparation)."""
    y = np.asarray(y, dtype="int64")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.reshape(-1)
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 0
    out = np.zeros((y.shape[0], num_classes), dtype=dtype)
    out[np.arange(y.shape[0]), y] = 1
    return out.reshape(shape + (num_classes,))


def set_random_seed(seed):
    """Seeds Python's, NumPy's and mixprec's generators (``tf.keras.utils.set_random_seed``)."""
    import random

    from mixprec import random as mp_random

    from mixprec.keras import backend

    if not isinstance(seed, int):
        raise ValueError("Expected `seed` argument to be an integer. Received: seed=%s (of type "
                         "%s)" % (seed, type(seed)))
    random.seed(seed)
    np.random.seed(seed)
    mp_random.set_seed(seed)
    backend._SEED_GENERATOR.generator = random.Random(seed)

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
