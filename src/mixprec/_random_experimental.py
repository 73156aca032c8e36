"""``tf.random.experimental``: TensorFlow's older spellings of the stateless and Generator
APIs (the same objects as ``tf.random``'s). Names only."""

from mixprec._random_generator import (  # noqa: F401
    Generator, create_rng_state, get_global_generator, set_global_generator)
from mixprec._random_stateless import (  # noqa: F401
    Algorithm, fold_in as stateless_fold_in, split as stateless_split)

__all__ = ["Generator", "create_rng_state", "get_global_generator", "set_global_generator",
           "Algorithm", "stateless_fold_in", "stateless_split"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
