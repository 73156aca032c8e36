"""``mixprec.testing``: numeric-stability checks for your pytest suite.

- ``assert_trains_like(build_model, data, policies=('float32', 'mixed_float16'))`` — does
  the model train as well under each policy as under the first? Fails with a table.
- ``gradient_underflow_report(model, x, y)`` — per variable, the fraction of gradient
  elements that become zero or subnormal in float16, without and with loss scaling.
- ``check_numerics()`` — a context manager: the first op producing inf/NaN raises, naming
  the op, the layer and the dtype.
- ``assert_all_finite(tensors)``, ``assert_allclose_dtype(a, b, dtype)`` (tolerances from
  the one table, ``mixprec.testing.tolerances``).

The pytest plugin (registered automatically when mixprec is installed) adds the fixtures
``mixprec_policy`` (parametrised by ``@pytest.mark.mixprec_policies(...)``; float32 and
mixed_float16 without the marker) and ``mixprec_seed`` (docs/testing.md).
"""

from mixprec.testing._numerics import (  # noqa: F401
    assert_all_finite, assert_allclose_dtype, check_numerics)
from mixprec.testing._stability import (  # noqa: F401
    TrainingComparison, UnderflowReport, assert_trains_like, gradient_underflow_report)
from mixprec.testing.tolerances import TOLERANCE, tolerance  # noqa: F401

__all__ = ["assert_trains_like", "gradient_underflow_report", "check_numerics",
           "assert_all_finite", "assert_allclose_dtype", "tolerance", "TOLERANCE",
           "UnderflowReport", "TrainingComparison"]
