"""``tf.config``: the devices mixprec can see and runtime knobs.

A GPU appears in ``list_physical_devices('GPU')`` only when the CUDA backend is built and
loaded and a GPU is present; otherwise the CPU backend runs everything.
"""

import collections

from mixprec import _core
from mixprec.config import experimental, optimizer, threading  # noqa: F401
from mixprec.config.experimental import (  # noqa: F401
    LogicalDeviceConfiguration, get_logical_device_configuration,
    set_logical_device_configuration)
from mixprec._function import functions_run_eagerly, run_functions_eagerly  # noqa: F401
from mixprec.config._placement import (  # noqa: F401
    experimental_functions_run_eagerly, experimental_run_functions_eagerly,
    get_soft_device_placement, set_soft_device_placement)

__all__ = ["run_functions_eagerly", "functions_run_eagerly", "PhysicalDevice", "LogicalDevice",
           "list_physical_devices", "list_logical_devices", "get_visible_devices",
           "set_visible_devices", "experimental", "optimizer", "threading",
           "LogicalDeviceConfiguration", "set_logical_device_configuration",
           "get_logical_device_configuration", "experimental_functions_run_eagerly",
           "experimental_run_functions_eagerly", "get_soft_device_placement",
           "set_soft_device_placement"]

PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])


def _physical():
    devs = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
    for i in range(_core.device_count(1)):
        devs.append(PhysicalDevice("/physical_device:GPU:%d" % i, "GPU"))
    return devs


def list_physical_devices(device_type=None):
    """Physical devices, optionally only those of ``device_type`` ('CPU' or 'GPU')."""
    devs = _physical()
    if device_type is None:
        return devs
    return [d for d in devs if d.device_type == str(device_type).upper()]


def get_visible_devices(device_type=None):
    return list_physical_devices(device_type)


def set_visible_devices(devices, device_type=None):
    """Accepted for compatibility; mixprec always sees every device."""
    return None


def list_logical_devices(device_type=None):
    """Logical devices ('/device:CPU:0', '/device:CPU:1', ... when the CPU was split with
    ``set_logical_device_configuration``); initializes the runtime, as TensorFlow's does,
    so the logical configuration is fixed from then on."""
    experimental._initialize_runtime()
    out = []
    for d in list_physical_devices(device_type):
        n = experimental._logical_counts.get(d.name, 1)
        first = sum(experimental._logical_counts.get(p.name, 1)
                    for p in _physical() if p.device_type == d.device_type
                    and int(p.name.rsplit(":", 1)[1]) < int(d.name.rsplit(":", 1)[1]))
        for i in range(n):
            out.append(LogicalDevice("/device:%s:%d" % (d.device_type, first + i), d.device_type))
    return out

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
