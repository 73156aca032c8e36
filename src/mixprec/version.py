"""``tf.version``: the TensorFlow API version mixprec mirrors, and its own.

``VERSION`` is the TensorFlow release whose behaviour mixprec reproduces ("2.21.0"), so code
that branches on ``tf.version.VERSION`` takes its TF 2.21 path; ``mixprec.__version__`` stays
the package's own version (what pip reports). Constants only; nothing here may import TF.
"""

VERSION = "2.21.0"
GIT_VERSION = "mixprec-0.1.0"
COMPILER_VERSION = "mixprec"
GRAPH_DEF_VERSION = 2474  # TensorFlow 2.21's (GraphDef producer version)
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0
MIXPREC_VERSION = "0.1.0"

__all__ = ["VERSION", "GIT_VERSION", "COMPILER_VERSION", "GRAPH_DEF_VERSION",
           "GRAPH_DEF_VERSION_MIN_CONSUMER", "GRAPH_DEF_VERSION_MIN_PRODUCER"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
