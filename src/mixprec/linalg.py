"""``tf.linalg``: the linear-algebra names mixprec has (matmul, global_norm, einsum)."""

from mixprec._clip import global_norm  # noqa: F401
from mixprec._einsum import einsum  # noqa: F401
from mixprec._ops import matmul  # noqa: F401
from mixprec._array_extra import eye, norm, tensordot  # noqa: F401,E402

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
