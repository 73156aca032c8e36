"""mixprec — mixed-precision training with a C/CUDA core and TensorFlow's API.

Swap ``import tensorflow as tf`` for ``import mixprec as tf`` (and ``from tensorflow
import keras`` for ``from mixprec import keras``) and the mixed precision guide runs.
"""

import os as _os

# oneDNN (convolutions, 16-bit GEMM) runs OpenMP threads next to mixprec's own pool: idle
# OpenMP workers must sleep, not spin, or they take the cores from the pool's next op (a
# training step measured 50-300x slower on 2 busy cores; docs/architecture.md). Read by
# libgomp when _core loads it, so set before; a user's own settings win.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
if _os.environ.get("MIXPREC_NUM_THREADS"):
    _os.environ.setdefault("OMP_NUM_THREADS", _os.environ["MIXPREC_NUM_THREADS"])

try:
    from mixprec import _core
except ImportError as e:  # pragma: no cover - depends on how the package was installed
    raise ImportError(
        "mixprec's C extension (mixprec._core) could not be imported: %s. Build and install "
        "the package with `pip install .` from the repository root; importing from the "
        "source tree without building does not work." % e) from e

from mixprec import _gpu_info  # noqa: E402

_gpu_info.load()  # the CUDA backend, before any tensor exists (GPU:0 becomes the default)

from mixprec import _dtypes, _shape, _tensor  # noqa: F401,E402  (registers the C side)
from mixprec._logging import get_logger  # noqa: F401
from mixprec._dtypes import (  # noqa: F401
    DType, as_dtype, bfloat16, bool, double, float16, float32, float64, half, int8, int32,
    int64, uint8, int16, uint16, uint32, uint64)
from mixprec._shape import TensorShape  # noqa: F401
from mixprec._tensor import Tensor  # noqa: F401
from mixprec._ops import *  # noqa: F401,F403
from mixprec._math_extra import (  # noqa: F401,E402 - TensorFlow's top-level math aliases
    acos, acosh, asin, asinh, atan, atan2, atanh, cosh, scalar_mul, sinh, tan, truncatediv,
    truncatemod)
from mixprec._variable import (  # noqa: F401
    Variable, VariableAggregation, VariableSynchronization)
from mixprec._tape import GradientTape, UnconnectedGradients  # noqa: F401
from mixprec._custom_gradient import custom_gradient, recompute_grad  # noqa: F401
from mixprec._clip import clip_by_global_norm, clip_by_norm  # noqa: F401
from mixprec._einsum import einsum  # noqa: F401
from mixprec._slicing import slice, strided_slice  # noqa: F401,A004
from mixprec._array_extra import *  # noqa: F401,F403,E402
from mixprec._script_ops import numpy_function, py_function  # noqa: F401
from mixprec._function import TensorSpec, function  # noqa: F401
from mixprec._execution import executing_eagerly  # noqa: F401
from mixprec._module import Module  # noqa: F401
from mixprec._tensor_array import TensorArray  # noqa: F401
from mixprec._control import cond, print, while_loop  # noqa: F401,A004
from mixprec import _nest as nest  # noqa: F401
from mixprec._scopes import (  # noqa: F401,A004
    control_dependencies, executing_eagerly, get_current_name_scope, get_static_value,
    gradients, group, hessians, init_scope, inside_function, name_scope, no_gradient, no_op,
    timestamp, tuple)
from mixprec import dtypes, version  # noqa: F401
from mixprec._asserts import (  # noqa: F401
    Assert, assert_equal, assert_greater, assert_less, assert_rank)
from mixprec import config, data, debugging, distribute, errors, linalg, math, nn, random  # noqa: F401
from mixprec import image, io, summary  # noqa: F401,E402
from mixprec import autograph, experimental  # noqa: F401
floor = math.floor  # TensorFlow's top-level aliases of tf.math names
reduce_logsumexp = math.reduce_logsumexp
from mixprec.linalg import eye, norm, tensordot  # noqa: F401,E402  (tf.eye, tf.norm, tf.tensordot)
from mixprec import keras, mixed_precision, train  # noqa: F401
from mixprec import saved_model  # noqa: F401,E402
from mixprec._initializers import (  # noqa: F401
    constant_initializer, ones_initializer, random_normal_initializer,
    random_uniform_initializer, zeros_initializer)
from mixprec.keras import initializers  # noqa: F401  (tf.initializers: Keras's, as TF 2.21)
from mixprec import compat  # noqa: F401
from mixprec import test  # noqa: F401,E402  (tf.test)
from mixprec._case import case, switch_case  # noqa: F401,E402
from mixprec._misc_ops import (  # noqa: F401,E402
    grad_pass_through, guarantee_const, histogram_fixed_width, histogram_fixed_width_bins,
    is_symbolic_tensor, parallel_stack, space_to_batch)
from mixprec._amp import state as _amp_state  # noqa: E402

if _amp_state.env_enabled:  # TF_ENABLE_AUTO_MIXED_PRECISION=1: the rewrite for every function
    _amp_state.graph_rewrite_enabled = True
    _amp_state.refresh()

__version__ = "0.1.0"
newaxis = None
config.experimental._mark_import_done()

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
