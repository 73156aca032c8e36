"""``tf.keras.datasets``: mnist and fashion_mnist, offline.

Files are looked up where Keras caches them (``$KERAS_HOME`` or ``~/.keras``, under
``datasets/``), and Fashion-MNIST also where Debian's ``dataset-fashion-mnist`` package
installs it. Nothing is downloaded; when nothing is found the error says where to put the
files. ``fashion_mnist.load_embedded()`` returns the small subset shipped with mixprec.
"""

from mixprec.keras.datasets import fashion_mnist, mnist  # noqa: F401

__all__ = ["mnist", "fashion_mnist"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
