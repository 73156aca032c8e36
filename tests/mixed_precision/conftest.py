"""Every test here leaves automatic mixed precision switched off, as it found it."""

import pytest

from mixprec import _core
from mixprec._amp import state
from mixprec.keras.mixed_precision import policy as _policy


@pytest.fixture(autouse=True)
def _amp_off():
    yield
    state.options.clear()
    state.graph_rewrite_enabled = False
    state.refresh()
    _core.amp_set_classes(None)
    _policy._global_policy = None
