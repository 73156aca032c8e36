"""The CUDA plugin (``mixprec._cuda``): loading, registration with the core, GPU facts.

``src/mixprec/__init__.py`` calls ``load()`` right after importing ``_core``. Without an NVIDIA
device node (``gpu_present()``) the plugin is not even imported. When the plugin was built and
imports (it needs the CUDA libraries), its ``register()`` installs the CUDA backend table in
the core if the CUDA runtime sees a GPU; otherwise nothing changes and every tensor lives on
the CPU. ``MIXPREC_EMULATE_GPU=1`` (a test aid, see docs/cuda.md) registers
the CPU kernels as one "GPU" instead when there is no real one, so the device plumbing can be
tested on any machine.
"""

import glob
import importlib.util
import os
import sys
import warnings

from mixprec import _core

_cuda = None        # the plugin module, when it imported
load_error = None   # why a plugin that exists did not import
registered = 0      # GPUs the plugin registered with the core
emulated = False    # the CPU kernels stand in for one GPU (tests)
skipped = False     # load() did not import the plugin: no GPU device here


def gpu_present():
    """Cheap: could an NVIDIA GPU be here? Device nodes only, no CUDA call (a context costs
    memory and time). NOTE: the CUDA plugin (~100 ms of imports: cuBLASLt, the runtime) is
    imported only when this says yes; on Linux the driver always creates /dev/nvidiactl and
    /dev/nvidiaN, WSL2 /dev/dxg. Elsewhere we cannot tell cheaply and try the import."""
    if not sys.platform.startswith("linux"):
        return True
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False  # every GPU hidden: the runtime would see none
    return (os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/dxg")
            or bool(glob.glob("/dev/nvidia[0-9]*")))


def plugin():
    """The plugin module, imported on first use (never registers it); None when it was not
    built or its libraries are missing (``load_error`` says why)."""
    global _cuda, load_error
    if _cuda is None and load_error is None:
        try:
            from mixprec import _cuda as mod
        except ImportError as e:
            if importlib.util.find_spec("mixprec._cuda") is not None:
                # built, but its libraries (cuBLASLt, the driver's) are missing here
                load_error = str(e)
            return None
        _cuda = mod
    return _cuda


def load():
    global registered, emulated, skipped
    skipped = not gpu_present()
    mod = None if skipped else plugin()
    if load_error is not None and os.path.exists("/dev/nvidiactl"):
        warnings.warn("mixprec: the CUDA plugin did not load (%s); running on the CPU."
                      % load_error, RuntimeWarning, stacklevel=3)
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
    """The plugin was built with this package (whether or not it was loaded)."""
    return _cuda is not None or importlib.util.find_spec("mixprec._cuda") is not None


def set_tf32(enabled):
    """TF32 for float32 matmuls (the plugin reads it at every GEMM)."""
    if _cuda is not None:
        _cuda.set_tf32(bool(enabled))


def host_sync_count():
    """How many times the host has waited for the GPU so far (copies to the host, stream
    synchronisations): the backend's debug counter. 0 without a GPU."""
    if not _core.device_count(1):
        return 0
    return _core.host_syncs(1, 0)  # the backend's host_syncs slot


def synchronize():
    """Waits for every GPU's queued work (benchmarks; never needed for correctness)."""
    for index in range(_core.device_count(1)):  # the backend's synchronize slot
        _core.synchronize(1, index)
