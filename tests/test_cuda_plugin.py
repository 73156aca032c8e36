"""The CUDA plugin (mixprec._cuda) on any machine: it imports wherever it was built (every
symbol it needs resolves: it reaches the core only through the _core._C_API capsule), it
agrees with the core on the C API version, and without a GPU it registers nothing, so every
tensor stays on the CPU. Skipped when the build had no CUDA toolkit."""

import os
import subprocess
import sys

import pytest

import mixprec
from mixprec import _core, _gpu_info

pytestmark = pytest.mark.skipif(not _gpu_info.cuda_compiled(), reason="the CUDA plugin was not built here (no toolkit)"
                                if _gpu_info.load_error is None else "the CUDA plugin did not load: %s"
                                % _gpu_info.load_error)


def test_the_plugin_speaks_the_cores_c_api():
    cuda = _gpu_info._cuda
    assert cuda.C_API_VERSION == _core.C_API_VERSION
    assert _core.CUDA_COMPILED == 1
    assert cuda.runtime_version() >= 12000


def test_register_refuses_a_foreign_capsule():
    import datetime  # any capsule of another name will do

    capsule = datetime.datetime_CAPI
    with pytest.raises(ValueError):
        _gpu_info._cuda.register(capsule)


@pytest.mark.skipif(_core.backend_name(1) == "cuda", reason="a GPU is registered here")
def test_without_a_gpu_nothing_is_registered():
    cuda = _gpu_info._cuda
    assert cuda.devices() == []
    assert cuda.register(_core._C_API) == 0
    assert _gpu_info.registered == 0
    assert _core.backend_name(1) in (None, "emulated-gpu")
    if _core.backend_name(1) is None:
        assert mixprec.config.list_physical_devices("GPU") == []
        assert mixprec.constant(1.0).device.endswith("device:CPU:0")
    assert cuda.sync_count() == 0
    cuda.synchronize()  # nothing registered: a no-op
    with pytest.raises(ValueError, match="no GPU 0 is registered"):
        cuda.memory_info(0)


def test_tf32_switch_reaches_the_plugin():
    cuda = _gpu_info._cuda
    from mixprec.config import experimental

    assert experimental.tensor_float_32_execution_enabled()
    try:
        experimental.enable_tensor_float_32_execution(False)
        assert cuda.set_tf32(False) is False  # it was already off
        experimental.enable_tensor_float_32_execution(True)
        assert cuda.set_tf32(True) is True
    finally:
        experimental.enable_tensor_float_32_execution(True)


def test_a_fresh_process_imports_with_the_plugin():
    """import mixprec loads and registers the plugin before any tensor exists."""
    code = ("import mixprec, mixprec._gpu_info as g; assert g.cuda_compiled(); "
            "print(g.registered, len(mixprec.config.list_physical_devices('GPU')))")
    env = dict(os.environ)
    env.pop("MIXPREC_EMULATE_GPU", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/",
                         timeout=120)
    assert out.returncode == 0, out.stderr
    registered, listed = map(int, out.stdout.split())
    assert registered == listed
