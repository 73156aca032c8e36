"""``tf.config.experimental``: TF32, memory growth, logical devices."""

import collections

__all__ = ["enable_tensor_float_32_execution", "tensor_float_32_execution_enabled",
           "set_memory_growth", "get_memory_growth", "set_logical_device_configuration",
           "get_logical_device_configuration", "LogicalDeviceConfiguration",
           "VirtualDeviceConfiguration", "get_device_details", "get_memory_info",
           "reset_memory_stats", "get_memory_usage"]

_tf32 = True
_memory_growth = {}
_logical_counts = {}
_logical_configs = {}

LogicalDeviceConfiguration = collections.namedtuple(
    "LogicalDeviceConfiguration", ["memory_limit", "experimental_priority",
                                   "experimental_device_ordinal"],
    defaults=(None, None, None))
VirtualDeviceConfiguration = LogicalDeviceConfiguration


def enable_tensor_float_32_execution(enabled):
    """TF32 for float32 matmuls on Ampere+ GPUs (on by default, as TensorFlow)."""
    global _tf32
    from mixprec import _gpu_info

    _tf32 = bool(enabled)
    _gpu_info.set_tf32(_tf32)


def tensor_float_32_execution_enabled():
    return _tf32


def set_memory_growth(device, enable):
    _memory_growth[getattr(device, "name", device)] = bool(enable)


def get_memory_growth(device):
    return _memory_growth.get(getattr(device, "name", device), False)


def set_logical_device_configuration(device, logical_devices):
    """Splits a physical device into several logical ones (used to test multi-replica
    code on one CPU, as TensorFlow's virtual CPU devices)."""
    name = getattr(device, "name", device)
    configs = list(logical_devices or [])
    _logical_configs[name] = configs
    _logical_counts[name] = max(1, len(configs))


def get_logical_device_configuration(device):
    return _logical_configs.get(getattr(device, "name", device))


def get_device_details(device):
    """{'device_name', 'compute_capability'} for a GPU (empty for a CPU)."""
    if getattr(device, "device_type", "") != "GPU":
        return {}
    from mixprec import _gpu_info

    index = int(device.name.rsplit(":", 1)[1])
    info = _gpu_info.devices()
    if index < len(info):
        return {"device_name": info[index]["name"],
                "compute_capability": tuple(info[index]["compute_capability"])}
    return {}


def _memory(device, reset_peak):
    from mixprec import _core, _gpu_info
    from mixprec._ops import _parse_device

    spec = _parse_device(getattr(device, "name", device))
    if spec is None:
        raise ValueError("A device is required: 'CPU:0' or 'GPU:0', got None")
    kind, index = spec
    if kind == 0 or _gpu_info.emulated:  # the emulated GPU allocates from the host
        if index != 0:
            raise ValueError("Unknown device %r: there is one CPU, 'CPU:0'" % (device,))
        return _core.cpu_memory(reset_peak)
    if _gpu_info._cuda is None or index >= len(_gpu_info.devices()):
        raise ValueError("No GPU %d on this machine (list_physical_devices('GPU') is empty or "
                         "shorter): cannot read its memory" % index)
    return _gpu_info._cuda.memory_stats(index, reset_peak)


def get_memory_info(device):
    """``{'current': bytes, 'peak': bytes}`` of memory that ``device`` ('GPU:0', 'CPU:0')
    holds for tensors now, and at most since the process started or since
    ``reset_memory_stats``. On a GPU these are the bytes in use in mixprec's memory pool; on
    the CPU (which TensorFlow does not report) the bytes of tensors and GEMM scratch, not
    the block cache kept for reuse."""
    current, peak = _memory(device, False)
    return {"current": int(current), "peak": int(peak)}


def reset_memory_stats(device):
    """Restarts the ``peak`` of ``get_memory_info(device)`` from the current usage."""
    _memory(device, True)


def get_memory_usage(device):
    """The ``current`` of ``get_memory_info`` (TensorFlow's deprecated spelling)."""
    return get_memory_info(device)["current"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
