"""``tf.keras.optimizers.experimental``: in tf-keras 2.21 the same classes as
``tf.keras.optimizers`` (the new-style optimizers); names only, no behaviour of its own."""

from mixprec.keras.optimizers.adaptive import (  # noqa: F401
    Adadelta, Adagrad, Adamax, AdamW, Ftrl, Nadam)
from mixprec.keras.optimizers.adafactor import Adafactor  # noqa: F401
from mixprec.keras.optimizers.optimizer import SGD, Adam, Optimizer, RMSprop  # noqa: F401

# tf-keras 2.21's experimental module: no Lion
__all__ = ["Optimizer", "SGD", "RMSprop", "Adam", "Adagrad", "Adadelta", "Adamax", "Nadam",
           "AdamW", "Ftrl", "Adafactor"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
