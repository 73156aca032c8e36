"""``tf.config.experimental``: TF32, memory growth, logical devices."""

import collections

__all__ = ["enable_tensor_float_32_execution", "tensor_float_32_execution_enabled",
           "set_memory_growth", "get_memory_growth", "set_logical_device_configuration",
           "get_logical_device_configuration", "LogicalDeviceConfiguration",
           "VirtualDeviceConfiguration", "get_device_details"]

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
