"""GPU facts from the CUDA plugin (mixprec._cuda) when it was built; none otherwise."""

try:
    from mixprec import _cuda
except ImportError:  # CPU-only build, or no CUDA runtime on this machine
    _cuda = None


def devices():
    """[{'name', 'compute_capability', 'memory_bytes'}] for every visible GPU."""
    if _cuda is None:
        return []
    return _cuda.devices()


def cuda_compiled():
    return _cuda is not None
