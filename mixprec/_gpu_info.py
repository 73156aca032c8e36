"""The CUDA plugin (``mixprec._cuda``): loading, registration with the core, GPU facts.

``mixprec/__init__.py`` calls ``load()`` right after importing ``_core``. When the plugin
was built and imports (it needs the CUDA libraries), its ``register()`` installs the CUDA
backend table in the core if the CUDA runtime sees a GPU; otherwise nothing changes and every
tensor lives on the CPU. ``MIXPREC_EMULATE_GPU=1`` (a test aid, see docs/cuda.md) registers
the CPU kernels as one "GPU" instead when there is no real one, so the device plumbing can be
tested on any machine.
"""

import importlib.util
import os
import warnings

from mixprec import _core

_cuda = None        # the plugin module, when it imported
load_error = None   # why a plugin that exists did not import
registered = 0      # GPUs the plugin registered with the core
emulated = False    # the CPU kernels stand in for one GPU (tests)


def load():
    global _cuda, load_error, registered, emulated
    try:
        from mixprec import _cuda as mod
    except ImportError as e:
        mod = None
        if importlib.util.find_spec("mixprec._cuda") is not None:
            # built, but its libraries (cuBLASLt, the driver's) are missing here
            load_error = str(e)
            if os.path.exists("/dev/nvidiactl"):
                warnings.warn("mixprec: the CUDA plugin did not load (%s); running on the CPU."
                              % load_error, RuntimeWarning, stacklevel=3)
    _cuda = mod
    if mod is not None:
        registered = mod.register(_core._C_API)
    if not registered and os.environ.get("MIXPREC_EMULATE_GPU") == "1":
        emulated = _core._emulate_gpu(True) > 0


def devices():
    """[{'name', 'compute_capability', 'memory_bytes'}] for every visible GPU."""
    if _cuda is None:
        return []
    return _cuda.devices()


def cuda_compiled():
    return _cuda is not None


def set_tf32(enabled):
    """TF32 for float32 matmuls (the plugin reads it at every GEMM)."""
    if _cuda is not None:
        _cuda.set_tf32(bool(enabled))


def host_sync_count():
    """How many times the host has waited for the GPU so far (copies to the host, stream
    synchronisations): the backend's debug counter. 0 without a GPU."""
    name = _core.backend_name(1)
    if name == "cuda":
        return _cuda.sync_count()
    if name == "emulated-gpu":
        return _core._emulated_d2h_copies()
    return 0


def synchronize():
    """Waits for every GPU's queued work (benchmarks; never needed for correctness)."""
    if registered:
        _cuda.synchronize()
