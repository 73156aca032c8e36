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


@pytest.fixture(scope="session")
def fake_nccl(tmp_path_factory):
    """The path of the fake libnccl (tests/distribute/fake_nccl.c, a test double of NCCL's
    ABI over host memory for the NCCL engine's logic; not NCCL) compiled with the system C
    compiler; the test is skipped where there is none."""
    import os
    import shutil
    import subprocess

    names = [os.environ["CC"].split()[0]] if os.environ.get("CC") else ["cc", "gcc", "clang"]
    cc = next((shutil.which(n) for n in names if shutil.which(n)), None)
    if not cc:
        pytest.skip("no C compiler to build the fake libnccl")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_nccl.c")
    out = tmp_path_factory.mktemp("fake_nccl") / "libnccl_fake.so.2"
    # the sanitizer pass's CFLAGS are not wanted: the library is loaded into plain processes
    try:
        r = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-std=gnu11", "-o", str(out), src],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip("the fake libnccl did not compile: %s" % e)
    if r.returncode != 0:
        pytest.skip("the fake libnccl did not compile: %s" % r.stderr[-500:])
    return str(out)
