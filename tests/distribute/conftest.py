"""Two logical CPUs for the distribute tests. TensorFlow fixes logical devices when its
runtime starts; in one pytest process the runtime has long been used by other tests, so
this fixture sets the configuration directly (what set_logical_device_configuration records
in a fresh process: tests/distribute/test_devices.py checks that path in a subprocess)."""

import pytest

from mixprec.config import experimental as _cfg


def _set_cpus(n):
    name = "/physical_device:CPU:0"
    saved = (_cfg._logical_configs.get(name), _cfg._logical_counts.get(name))
    _cfg._logical_configs[name] = [_cfg.LogicalDeviceConfiguration()] * n
    _cfg._logical_counts[name] = n
    return name, saved


def _restore(name, saved):
    configs, count = saved
    if configs is None:
        _cfg._logical_configs.pop(name, None)
        _cfg._logical_counts.pop(name, None)
    else:
        _cfg._logical_configs[name] = configs
        _cfg._logical_counts[name] = count


@pytest.fixture
def two_cpus():
    """The two logical CPUs' names (pass them to MirroredStrategy: with a GPU, even the
    emulated one of CI's second pass, MirroredStrategy() would pick the GPU, as TF's)."""
    name, saved = _set_cpus(2)
    yield ["/cpu:0", "/cpu:1"]
    _restore(name, saved)


@pytest.fixture
def three_cpus():
    name, saved = _set_cpus(3)
    yield ["/cpu:0", "/cpu:1", "/cpu:2"]
    _restore(name, saved)
