"""``tf.linalg``: the linear-algebra names mixprec has. Matmul, global_norm and einsum are the
core's; the diagonal/band/transpose family, trace, eye, matvec, cross, norm and tensordot are
compositions of core ops (mixprec._linalg_extra)."""

from mixprec._clip import global_norm  # noqa: F401
from mixprec._einsum import einsum  # noqa: F401
from mixprec._ops import matmul  # noqa: F401
from mixprec._linalg_extra import (  # noqa: F401
    adjoint, band_part, cross, diag, diag_part, matrix_transpose, matvec, set_diag,
    tensor_diag, tensor_diag_part, trace)
from mixprec.math import l2_normalize  # noqa: F401
from mixprec._linalg_lapack import det, inv  # noqa: F401
from mixprec._linalg_decomp import (  # noqa: F401
    cholesky, cholesky_solve, eigh, eigvalsh, expm, logdet, lstsq, lu, lu_matrix_inverse,
    lu_reconstruct, lu_solve, matrix_rank, normalize, pinv, qr, slogdet, solve, svd,
    triangular_solve)
from mixprec._linalg_decomp import expm as matrix_exponential  # noqa: F401

try:  # the top level's own (tf.eye / tf.norm / tf.tensordot) where they exist
    from mixprec._array_extra import eye, norm, tensordot  # noqa: F401
except ImportError:
    from mixprec._linalg_extra import eye, norm, tensordot  # noqa: F401

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
