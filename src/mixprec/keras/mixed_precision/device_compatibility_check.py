"""The one-time "Mixed precision compatibility check" log line for ``mixed_float16``.

Owns the texts and the once-per-process rule; the decision is a pure function of a device
list (``_compatibility_message``) so it can be tested with fake GPUs. It only logs: it must
never raise, change a policy or pick a device.
"""

import itertools
import logging

from mixprec import _gpu_info

__all__ = ["log_device_compatibility_check"]

_logger = logging.getLogger("mixprec")

_COMPAT_CHECK_PREFIX = "Mixed precision compatibility check (mixed_float16): "
_COMPAT_CHECK_OK_PREFIX = _COMPAT_CHECK_PREFIX + "OK"
_COMPAT_CHECK_WARNING_PREFIX = _COMPAT_CHECK_PREFIX + "WARNING"
_COMPAT_CHECK_WARNING_SUFFIX = (
    "If you will use compatible GPU(s) not attached to this host, e.g. by running a "
    "multi-worker model, you can ignore this warning. This message will only be logged once")

# NOTE: TensorFlow's name for the flag. Users (and scripts written for TensorFlow) set it
# to True to silence the check, so keep the name.
_logged_compatibility_check = False


def _dedup_strings(device_strs):
    """Merges runs of identical strings: ['a', 'b', 'b'] -> ['a', 'b (x2)']."""
    merged = []
    for device_str, run in itertools.groupby(device_strs):
        n = len(list(run))
        merged.append(device_str if n == 1 else "%s (x%d)" % (device_str, n))
    return merged


def _compatibility_message(policy_name, devices):
    """The (logging level, message) TensorFlow would log, or None when it logs nothing.

    Args:
      policy_name: the dtype policy's name; only 'mixed_float16' is checked (as in
        TensorFlow, which cannot tell yet whether bfloat16 hardware is present).
      devices: the GPUs, as ``mixprec._gpu_info.devices()`` lists them: dicts with
        'name' and 'compute_capability' ((major, minor) or None); either may be missing.
    """
    if policy_name != "mixed_float16":
        return None
    supported, unsupported = [], []
    for device in devices:
        name = device.get("name") or "Unknown GPU"
        cc = device.get("compute_capability")
        if cc:
            cc = tuple(cc)
            device_str = "%s, compute capability %s.%s" % (name, cc[0], cc[1])
            (supported if cc >= (7, 0) else unsupported).append(device_str)
        else:
            unsupported.append(name + ", no compute capability (probably not an Nvidia GPU)")

    if unsupported:
        if supported:
            head = ("Some of your GPUs may run slowly with dtype policy mixed_float16 because "
                    "they do not all have compute capability of at least 7.0. Your GPUs:\n")
        elif len(unsupported) == 1:
            head = ("Your GPU may run slowly with dtype policy mixed_float16 because it does "
                    "not have compute capability of at least 7.0. Your GPU:\n")
        else:
            head = ("Your GPUs may run slowly with dtype policy mixed_float16 because they do "
                    "not have compute capability of at least 7.0. Your GPUs:\n")
        lines = "".join("  %s\n" % s for s in _dedup_strings(supported + unsupported))
        return logging.WARNING, (
            _COMPAT_CHECK_WARNING_PREFIX + "\n" + head + lines
            + "See https://developer.nvidia.com/cuda-gpus for a list of GPUs and their "
            "compute capabilities.\n" + _COMPAT_CHECK_WARNING_SUFFIX)
    if not supported:
        return logging.WARNING, (
            _COMPAT_CHECK_WARNING_PREFIX + "\n"
            "The dtype policy mixed_float16 may run slowly because this machine does not "
            "have a GPU. Only Nvidia GPUs with compute capability of at least 7.0 run quickly "
            "with mixed_float16.\n" + _COMPAT_CHECK_WARNING_SUFFIX)
    if len(supported) == 1:
        return logging.INFO, (
            _COMPAT_CHECK_OK_PREFIX + "\n"
            "Your GPU will likely run quickly with dtype policy mixed_float16 as it has "
            "compute capability of at least 7.0. Your GPU: " + supported[0])
    return logging.INFO, (
        _COMPAT_CHECK_OK_PREFIX + "\n"
        "Your GPUs will likely run quickly with dtype policy mixed_float16 as they all have "
        "compute capability of at least 7.0")


def _log_device_compatibility_check(policy_name, devices):
    """Logs the check for ``devices`` (no once-only rule; see log_device_compatibility_check)."""
    result = _compatibility_message(policy_name, devices)
    if result is not None:
        _logger.log(*result)


def log_device_compatibility_check(policy_name):
    """Logs whether this machine's GPUs run ``policy_name`` quickly, once per process.

    TensorFlow logs on the 'tensorflow' logger (INFO when every GPU has compute capability
    >= 7.0, WARNING otherwise or without a GPU); mixprec logs the same texts on the
    'mixprec' logger. The first call sets the flag, whatever the policy name, as
    TensorFlow does; ``Policy`` calls this only for 'mixed_float16' (see policy.py).
    """
    global _logged_compatibility_check
    if _logged_compatibility_check:
        return
    _logged_compatibility_check = True
    _log_device_compatibility_check(policy_name, _gpu_info.devices())
