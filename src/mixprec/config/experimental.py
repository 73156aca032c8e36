"""``tf.config.experimental``: TF32, memory growth, logical devices."""

import collections

__all__ = ["enable_tensor_float_32_execution", "tensor_float_32_execution_enabled",
           "set_memory_growth", "get_memory_growth", "set_logical_device_configuration",
           "get_logical_device_configuration", "LogicalDeviceConfiguration",
           "set_virtual_device_configuration", "get_virtual_device_configuration",
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


# The runtime counts as initialized ("devices used") once a tensor or variable was created
# after `import mixprec` (the core's id counter moved), or list_logical_devices was called,
# or a distribution strategy was built: logical devices are fixed from then on, as in
# TensorFlow, which fixes them when its eager context initializes.
_ids_at_import = None
_initialized = False


def _mark_import_done():
    global _ids_at_import
    from mixprec import _core

    _ids_at_import = _core.ids_issued()


def _runtime_initialized():
    from mixprec import _core

    return _initialized or (_ids_at_import is not None and _core.ids_issued() > _ids_at_import)


def _initialize_runtime():
    global _initialized
    _initialized = True


def _physical_by_name(device):
    from mixprec import config

    if not hasattr(device, "name") or not hasattr(device, "device_type"):
        raise ValueError("Unrecognized device: %r (pass an element of "
                         "tf.config.list_physical_devices())" % (device,))
    for d in config.list_physical_devices():
        if d.name == device.name:
            return d
    raise ValueError("Unrecognized device: %s" % (device,))


def set_logical_device_configuration(device, logical_devices):
    """Splits a physical device into logical ones: ``logical_devices`` is a list of
    ``LogicalDeviceConfiguration`` (several logical CPUs are how multi-replica code is tested
    on one CPU; a GPU's entries take ``memory_limit`` in MiB). Only before the runtime is
    initialized (RuntimeError after, unless the configuration is unchanged)."""
    dev = _physical_by_name(device)
    if logical_devices is None:
        configs = None
    else:
        if isinstance(logical_devices, LogicalDeviceConfiguration):
            logical_devices = [logical_devices]
        configs = list(logical_devices)
        for c in configs:
            if not isinstance(c, LogicalDeviceConfiguration):
                raise ValueError("Expected a list of tf.config.LogicalDeviceConfiguration, got %r"
                                 % (c,))
            if dev.device_type == "CPU" and c.memory_limit is not None:
                raise ValueError("Setting memory limit on CPU virtual devices is currently not "
                                 "supported")
            if dev.device_type == "GPU" and c.memory_limit is None and len(configs) > 1:
                raise ValueError("Setting memory limit is required for GPU virtual devices")
        if not configs:
            raise ValueError("logical_devices must contain at least one "
                             "LogicalDeviceConfiguration")
    if _logical_configs.get(dev.name) == configs:
        return
    if _runtime_initialized():
        raise RuntimeError("Virtual devices cannot be modified after being initialized")
    if configs is None:
        _logical_configs.pop(dev.name, None)
        _logical_counts.pop(dev.name, None)
    else:
        _logical_configs[dev.name] = configs
        _logical_counts[dev.name] = len(configs)


def get_logical_device_configuration(device):
    """The list given to set_logical_device_configuration for ``device``, or None."""
    dev = _physical_by_name(device)
    configs = _logical_configs.get(dev.name)
    return None if configs is None else list(configs)


set_virtual_device_configuration = set_logical_device_configuration
get_virtual_device_configuration = get_logical_device_configuration


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
    """(current, peak) from the device's backend table (its memory_stats slot)."""
    from mixprec import _core
    from mixprec._ops import _parse_device

    spec = _parse_device(getattr(device, "name", device))
    if spec is None:
        raise ValueError("A device is required: 'CPU:0' or 'GPU:0', got None")
    kind, index = spec
    if not 0 <= index < _core.device_count(kind):
        if kind == 0:
            raise ValueError("Unknown device %r: there is one CPU, 'CPU:0'" % (device,))
        raise ValueError("No GPU %d on this machine (list_physical_devices('GPU') is empty or "
                         "shorter): cannot read its memory" % index)
    return _core.memory_stats(kind, index, bool(reset_peak))


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
