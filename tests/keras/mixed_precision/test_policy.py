"""Dtype policies, both API generations: names -> dtypes, errors, reprs, configs, the global
policy, and the "Mixed precision compatibility check" log. Expected texts are TensorFlow's
(docs: /work/shared/reference/semantics.md sections 1 and 2), written out in full here."""

import logging
import threading

import pytest

import mixprec
from mixprec import keras
from mixprec.keras import mixed_precision
from mixprec.keras.mixed_precision import device_compatibility_check as dcc
from mixprec.keras.mixed_precision import experimental
from mixprec.keras.mixed_precision import policy as policy_module
from mixprec.keras.mixed_precision.policy import Policy, policy_scope

ExpPolicy = experimental.Policy
BOTH = pytest.mark.parametrize("cls", [Policy, ExpPolicy], ids=["stable", "experimental"])


def raises_exactly(exc_type, message, fn, *args, **kwargs):
    with pytest.raises(exc_type) as info:
        fn(*args, **kwargs)
    assert type(info.value) is exc_type
    assert str(info.value) == message
    return info.value


# --------------------------------------------------------------------------- names


NAMES = [
    ("float32", "float32", "float32"),
    ("float16", "float16", "float16"),
    ("bfloat16", "bfloat16", "bfloat16"),
    ("float64", "float64", "float64"),
    ("mixed_float16", "float16", "float32"),
    ("mixed_bfloat16", "bfloat16", "float32"),
    ("_infer", None, None),
    ("int32", "int32", "int32"),
    ("int64", "int64", "int64"),
    ("int8", "int8", "int8"),
    ("uint8", "uint8", "uint8"),
    ("bool", "bool", "bool"),
    # Aliases as_dtype accepts: the name stays, the dtypes are canonical.
    ("half", "float16", "float16"),
    ("float", "float32", "float32"),
    ("double", "float64", "float64"),
]


@BOTH
@pytest.mark.parametrize("name,compute,variable", NAMES)
def test_name_to_dtypes(cls, name, compute, variable):
    p = cls(name)
    assert p.name == name
    assert p.compute_dtype == compute
    assert p.variable_dtype == variable
    assert p.get_config()["name"] == name


def test_str_subclass_accepted():
    class Name(str):
        pass

    p = Policy(Name("mixed_float16"))
    assert p.compute_dtype == "float16" and p.variable_dtype == "float32"


def test_experimental_should_cast_variables():
    assert ExpPolicy("mixed_float16").should_cast_variables
    assert ExpPolicy("mixed_bfloat16").should_cast_variables
    assert not ExpPolicy("float32").should_cast_variables
    assert not ExpPolicy("_infer").should_cast_variables


def test_experimental_policy_is_a_policy():
    # As TF 2.4-2.8's PolicyV1: anything that takes a Policy takes an experimental one.
    assert isinstance(ExpPolicy("float32"), Policy)


# --------------------------------------------------------------------------- errors

BAD_NAME = ("Cannot convert value {} to a mixed precision Policy. Valid policies include "
            "'mixed_float16', 'mixed_bfloat16', and the name of any dtype such as 'float32'.")


@BOTH
@pytest.mark.parametrize("name", ["abc", "", "Float32", "mixed_float32", "float16 ",
                                  # a TensorFlow dtype mixprec does not have:
                                  "complex64"])
def test_bad_name(cls, name):
    err = raises_exactly(ValueError, BAD_NAME.format(name), cls, name)
    assert err.__suppress_context__  # as TF's raise_from(..., None): no as_dtype traceback


@BOTH
def test_string_policy_constructs_as_tensorflow(cls):
    p = cls("string")  # TF 2.21: <Policy "string"> with string compute and variable dtypes
    assert (p.name, p.compute_dtype, p.variable_dtype) == ("string", "string", "string")


@BOTH
@pytest.mark.parametrize("dtype", [mixprec.float16, mixprec.float32, mixprec.bfloat16,
                                   mixprec.int32])
def test_dtype_object_rejected(cls, dtype):
    raises_exactly(TypeError, "'name' must be a string, not a DType. Instead, pass DType.name. "
                   "Received: name=%s" % dtype.name, cls, dtype)


@BOTH
@pytest.mark.parametrize("value,shown", [(5, "5"), (None, "None"), (1.5, "1.5"),
                                         (b"float32", "b'float32'"),
                                         (["float32"], "['float32']")])
def test_non_string_rejected(cls, value, shown):
    raises_exactly(TypeError, "'name' must be a string, but got: %s" % shown, cls, value)


REMOVED = "Policies ending in '_float32_vars' have been removed from TensorFlow."


@BOTH
@pytest.mark.parametrize("name,hint", [
    ("infer_float32_vars", " Please use the 'mixed_float16' or 'mixed_bfloat16' policy instead."),
    ("infer_with_float32_vars",
     " Please use the 'mixed_float16' or 'mixed_bfloat16' policy instead."),
    ("float16_with_float32_vars", " Please use the 'mixed_float16' policy instead."),
    ("bfloat16_with_float32_vars", " Please use the 'mixed_bfloat16' policy instead."),
    ("int8_with_float32_vars", ""),
    ("_float32_vars", ""),
])
def test_float32_vars_removed(cls, name, hint):
    raises_exactly(ValueError, REMOVED + hint + " Got policy name: '%s'" % name, cls, name)


# --------------------------------------------------------------------------- reprs


@pytest.mark.parametrize("name", ["float32", "mixed_float16", "mixed_bfloat16", "int8",
                                  "_infer", "half"])
def test_stable_repr(name):
    p = Policy(name)
    assert repr(p) == '<Policy "%s">' % name
    assert str(p) == repr(p)


@pytest.mark.parametrize("name", ["float32", "int8", "mixed_bfloat16", "_infer", "float16"])
def test_experimental_repr_without_loss_scale(name):
    assert repr(ExpPolicy(name)) == '<Policy "%s", loss_scale=None>' % name


def test_experimental_repr_with_explicit_none():
    p = ExpPolicy("mixed_float16", loss_scale=None)
    assert p.loss_scale is None
    assert repr(p) == '<Policy "mixed_float16", loss_scale=None>'


def test_experimental_repr_uses_repr_of_loss_scale():
    assert repr(ExpPolicy("float16", loss_scale=2.0)) == (
        '<Policy "float16", loss_scale=FixedLossScale(2.0)>')


def test_no_eq():
    # tf-keras defines no __eq__: equal names are still different policies.
    assert Policy.__eq__ is object.__eq__
    assert Policy("float32") != Policy("float32")
    assert str(Policy("float32")) == str(Policy("float32"))
    p = Policy("float32")
    assert p == p
    assert len({Policy("float32"), Policy("float32")}) == 2


# --------------------------------------------------------------------------- configs


@pytest.mark.parametrize("name", ["float32", "mixed_float16", "mixed_bfloat16", "int32",
                                  "_infer", "half"])
def test_stable_config_round_trip(name):
    p = Policy(name)
    assert p.get_config() == {"name": name}
    q = Policy.from_config(p.get_config())
    assert type(q) is Policy
    assert (q.name, q.compute_dtype, q.variable_dtype) == (
        p.name, p.compute_dtype, p.variable_dtype)


@pytest.mark.parametrize("loss_scale", [
    None, "dynamic", 128,
    {"class_name": "FixedLossScale", "config": {"loss_scale_value": 2.0}},
])
def test_stable_from_config_drops_loss_scale(loss_scale):
    # Configs written by TF 2.3's experimental Policy carry a loss scale; tf-keras drops it.
    config = {"name": "mixed_float16", "loss_scale": loss_scale}
    p = Policy.from_config(config)
    assert type(p) is Policy
    assert repr(p) == '<Policy "mixed_float16">'
    assert not hasattr(p, "loss_scale")
    assert config == {"name": "mixed_float16", "loss_scale": loss_scale}  # not mutated


def test_stable_from_config_accepts_custom_objects():
    assert Policy.from_config({"name": "float16"}, custom_objects={"x": 1}).name == "float16"


def test_stable_from_config_rejects_unknown_keys():
    with pytest.raises(TypeError):
        Policy.from_config({"name": "float32", "bogus": 1})


@pytest.mark.parametrize("name", ["float32", "mixed_float16", "mixed_bfloat16", "_infer"])
def test_experimental_config_with_default_loss_scale(name):
    p = ExpPolicy(name)
    assert p.get_config() == {"name": name}
    q = ExpPolicy.from_config(p.get_config())
    assert type(q) is ExpPolicy and repr(q) == repr(p)


def test_experimental_config_with_explicit_none():
    p = ExpPolicy("mixed_float16", loss_scale=None)
    assert p.get_config() == {"name": "mixed_float16", "loss_scale": None}
    q = ExpPolicy.from_config(p.get_config())
    assert q.loss_scale is None
    assert q.get_config() == p.get_config()


def test_serialize_loss_scale():
    class FakeLossScale:
        def get_config(self):
            return {"loss_scale_value": 2.0}

    assert experimental._serialize_loss_scale(None) is None
    assert experimental._serialize_loss_scale(FakeLossScale()) == {
        "class_name": "FakeLossScale", "config": {"loss_scale_value": 2.0}}
    assert experimental._serialize_loss_scale("dynamic") == "dynamic"  # unconverted


# --------------------------------------------------------------------------- loss_scale
# Only the storage and the hand-off to the loss-scale module; converting values is that
# module's job (and its tests').


@pytest.mark.parametrize("name", ["float32", "float16", "mixed_bfloat16", "bfloat16", "_infer",
                                  "int32"])
def test_default_loss_scale_is_none(name):
    assert ExpPolicy(name).loss_scale is None


def test_loss_scale_conversions():
    from mixprec.mixed_precision.experimental import DynamicLossScale, FixedLossScale

    assert isinstance(ExpPolicy("mixed_float16").loss_scale, DynamicLossScale)
    assert ExpPolicy("mixed_float16", loss_scale=None).loss_scale is None
    fixed = ExpPolicy("mixed_float16", loss_scale=1024).loss_scale
    assert isinstance(fixed, FixedLossScale) and repr(fixed) == "FixedLossScale(1024.0)"
    assert isinstance(ExpPolicy("float16", loss_scale="dynamic").loss_scale, DynamicLossScale)
    ls = DynamicLossScale(initial_loss_scale=8)
    assert ExpPolicy("mixed_float16", loss_scale=ls).loss_scale is ls
    cfg = {"class_name": "FixedLossScale", "config": {"loss_scale_value": 2.0}}
    assert repr(ExpPolicy("float16", loss_scale=cfg).loss_scale) == "FixedLossScale(2.0)"
    with pytest.raises(ValueError, match="Could not interpret loss scale identifier"):
        ExpPolicy("mixed_float16", loss_scale="static")


def test_mixed_float16_repr_shows_dynamic_state():
    assert repr(ExpPolicy("mixed_float16")) == (
        '<Policy "mixed_float16", loss_scale=DynamicLossScale(current_loss_scale=32768.0, '
        'num_good_steps=0, initial_loss_scale=32768.0, increment_period=2000, '
        'multiplier=2.0)>')


def test_loss_scale_is_default_uses_value_not_identity():
    assert ExpPolicy("mixed_float16", loss_scale="USE_" + "DEFAULT").loss_scale is not None
    assert ExpPolicy("mixed_float16", experimental.USE_DEFAULT).get_config() == {
        "name": "mixed_float16"}


LOSS_SCALE_WARNING = ("Creating a Policy with a loss scale is only useful for float16 "
                      "policies. You passed loss_scale={} for policy {}. Consider not passing "
                      "any loss_scale instead.")


@pytest.mark.parametrize("name,loss_scale,shown", [
    ("float32", 2.0, "2.0"), ("mixed_bfloat16", "dynamic", "'dynamic'"),
    ("float64", 128, "128"), ("bfloat16", 4.0, "4.0")])
def test_loss_scale_on_non_float16_policy_warns(caplog, name, loss_scale, shown):
    caplog.set_level(logging.INFO, logger="mixprec")
    p = ExpPolicy(name, loss_scale=loss_scale)
    assert p.loss_scale is not None
    msgs = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert msgs == [("mixprec", logging.WARNING, LOSS_SCALE_WARNING.format(shown, name))]


@pytest.mark.parametrize("name,loss_scale", [
    ("float16", 2.0), ("mixed_float16", 2.0), ("_infer", 2.0), ("float32", None),
    ("float32", experimental.USE_DEFAULT), ("mixed_float16", experimental.USE_DEFAULT)])
def test_loss_scale_no_warning(caplog, monkeypatch, name, loss_scale):
    monkeypatch.setattr(dcc, "_logged_compatibility_check", True)
    caplog.set_level(logging.INFO, logger="mixprec")
    ExpPolicy(name, loss_scale=loss_scale)
    assert caplog.records == []


# --------------------------------------------------------------------------- global policy


def test_default_global_policy_is_fresh_float32():
    a, b = mixed_precision.global_policy(), mixed_precision.global_policy()
    assert type(a) is Policy and repr(a) == '<Policy "float32">'
    assert a is not b


def test_set_global_policy_by_name():
    mixed_precision.set_global_policy("mixed_float16")
    p = mixed_precision.global_policy()
    assert type(p) is Policy and repr(p) == '<Policy "mixed_float16">'
    assert mixed_precision.global_policy() is p


def test_set_global_policy_keeps_the_object():
    p = Policy("mixed_bfloat16")
    mixed_precision.set_global_policy(p)
    assert mixed_precision.global_policy() is p
    assert mixed_precision.global_policy() is p


def test_set_global_policy_none_resets():
    mixed_precision.set_global_policy("float16")
    mixed_precision.set_global_policy(None)
    a, b = mixed_precision.global_policy(), mixed_precision.global_policy()
    assert repr(a) == '<Policy "float32">' and a is not b


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "float64", "mixed_float16",
                                  "mixed_bfloat16", "half", "_infer"])
def test_set_global_policy_floating_ok(name):
    mixed_precision.set_global_policy(name)
    assert mixed_precision.global_policy().name == name


NOT_FLOAT = ('{} can only be used to set the global policy to floating-point policies, such '
             'as "float32" and "mixed_float16", but got policy: {}')


@pytest.mark.parametrize("value", ["int32", "int64", "int8", "uint8", "bool", Policy("int32"),
                                   ExpPolicy("bool")], ids=str)
def test_set_global_policy_rejects_non_floating(value):
    before = Policy("float64")
    mixed_precision.set_global_policy(before)
    name = value if isinstance(value, str) else value.name
    raises_exactly(ValueError, NOT_FLOAT.format("set_global_policy", name),
                   mixed_precision.set_global_policy, value)
    assert mixed_precision.global_policy() is before
    # Still fine for a single layer.
    assert Policy(name).compute_dtype == mixprec.as_dtype(name).name


def test_set_global_policy_passes_on_policy_errors():
    raises_exactly(ValueError, BAD_NAME.format("abc"), mixed_precision.set_global_policy, "abc")
    raises_exactly(TypeError, "'name' must be a string, but got: 5",
                   mixed_precision.set_global_policy, 5)
    raises_exactly(TypeError, "'name' must be a string, not a DType. Instead, pass DType.name. "
                   "Received: name=float16", mixed_precision.set_global_policy, mixprec.float16)
    assert repr(mixed_precision.global_policy()) == '<Policy "float32">'


def test_global_policy_is_process_global():
    seen = []
    t = threading.Thread(target=lambda: mixed_precision.set_global_policy("mixed_float16"))
    t.start()
    t.join()
    assert mixed_precision.global_policy().name == "mixed_float16"
    p = Policy("float64")
    mixed_precision.set_global_policy(p)
    t = threading.Thread(target=lambda: seen.append(mixed_precision.global_policy()))
    t.start()
    t.join()
    assert seen == [p] and seen[0] is p


def test_policy_scope_sets_and_restores():
    with policy_scope("mixed_float16"):
        assert mixed_precision.global_policy().name == "mixed_float16"
    p = mixed_precision.global_policy()
    assert repr(p) == '<Policy "float32">' and p is not mixed_precision.global_policy()


def test_policy_scope_nests_and_keeps_objects():
    outer, inner = Policy("float16"), Policy("mixed_bfloat16")
    mixed_precision.set_global_policy("float64")
    base = mixed_precision.global_policy()
    with policy_scope(outer):
        assert mixed_precision.global_policy() is outer
        with policy_scope(inner):
            assert mixed_precision.global_policy() is inner
            with policy_scope(None):
                assert repr(mixed_precision.global_policy()) == '<Policy "float32">'
            assert mixed_precision.global_policy() is inner
        assert mixed_precision.global_policy() is outer
    assert mixed_precision.global_policy() is base


def test_policy_scope_restores_on_exception():
    p = Policy("float16")
    mixed_precision.set_global_policy(p)
    with pytest.raises(RuntimeError):
        with policy_scope("mixed_float16"):
            raise RuntimeError("boom")
    assert mixed_precision.global_policy() is p


def test_policy_scope_rejects_non_floating():
    p = Policy("float16")
    mixed_precision.set_global_policy(p)
    with pytest.raises(ValueError, match="set_global_policy can only be used"):
        with policy_scope("int32"):
            pytest.fail("the body must not run")
    assert mixed_precision.global_policy() is p


# --------------------------------------------------------------------------- experimental API


def test_experimental_default_global_policy_is_fresh():
    a, b = experimental.global_policy(), experimental.global_policy()
    assert type(a) is ExpPolicy and repr(a) == '<Policy "float32", loss_scale=None>'
    assert a is not b


def test_experimental_set_policy_by_name():
    experimental.set_policy("mixed_bfloat16")
    p = experimental.global_policy()
    assert type(p) is ExpPolicy
    assert repr(p) == '<Policy "mixed_bfloat16", loss_scale=None>'
    assert experimental.global_policy() is p


def test_experimental_set_policy_keeps_the_object_and_none_resets():
    p = ExpPolicy("float16", loss_scale=None)
    experimental.set_policy(p)
    assert experimental.global_policy() is p
    experimental.set_policy(None)
    assert repr(experimental.global_policy()) == '<Policy "float32", loss_scale=None>'


@pytest.mark.parametrize("value", ["int32", "bool", ExpPolicy("int8"), Policy("uint8")], ids=str)
def test_experimental_set_policy_rejects_non_floating(value):
    name = value if isinstance(value, str) else value.name
    raises_exactly(ValueError, NOT_FLOAT.format("set_policy", name), experimental.set_policy,
                   value)
    assert repr(experimental.global_policy()) == '<Policy "float32", loss_scale=None>'


def test_both_generations_share_the_global_policy():
    p = ExpPolicy("mixed_float16", loss_scale=None)
    experimental.set_policy(p)
    assert mixed_precision.global_policy() is p
    q = Policy("bfloat16")
    mixed_precision.set_global_policy(q)
    assert experimental.global_policy() is q
    with policy_scope("float16"):
        assert experimental.global_policy().name == "float16"
    assert experimental.global_policy() is q


def test_get_layer_policy():
    class FakeLayer:
        def __init__(self, policy):
            self.dtype_policy = policy

    p = Policy("mixed_float16")
    assert experimental.get_layer_policy(FakeLayer(p)) is p


@pytest.mark.parametrize("value,shown", [
    (1, "1"), ("float32", "float32"), (None, "None"), (Policy("float32"), '<Policy "float32">'),
])
def test_get_layer_policy_rejects_non_layers(value, shown):
    raises_exactly(ValueError, "get_policy can only be called on a layer, but got: " + shown,
                   experimental.get_layer_policy, value)


def test_get_layer_policy_rejects_layer_classes():
    class FakeLayer:
        dtype_policy = Policy("float32")

    with pytest.raises(ValueError, match="get_policy can only be called on a layer"):
        experimental.get_layer_policy(FakeLayer)


# --------------------------------------------------------------------------- public surface


def test_public_names():
    assert keras.mixed_precision is mixed_precision
    assert mixed_precision.Policy is Policy
    assert mixed_precision.set_global_policy is policy_module.set_global_policy
    assert mixed_precision.global_policy is policy_module.global_policy
    assert mixed_precision.experimental is experimental
    for name in ("Policy", "set_policy", "global_policy", "get_layer_policy"):
        assert callable(getattr(experimental, name))
    assert not hasattr(mixed_precision, "set_policy")  # experimental spelling only


def test_guide_import_spellings():
    from mixprec.keras.mixed_precision import experimental as old_mp
    from mixprec.keras import mixed_precision as mp

    assert mp.Policy("mixed_float16").compute_dtype == "float16"
    assert old_mp.Policy("mixed_float16").variable_dtype == "float32"


# --------------------------------------------------------------------------- compatibility check

OK = "Mixed precision compatibility check (mixed_float16): OK\n"
WARN = "Mixed precision compatibility check (mixed_float16): WARNING\n"
SEE = ("See https://developer.nvidia.com/cuda-gpus for a list of GPUs and their compute "
       "capabilities.\n")
SUFFIX = ("If you will use compatible GPU(s) not attached to this host, e.g. by running a "
          "multi-worker model, you can ignore this warning. This message will only be logged "
          "once")


def gpu(name, cc=None):
    d = {}
    if name is not None:
        d["name"] = name
    if cc is not None:
        d["compute_capability"] = cc
    return d


COMPAT_CASES = {
    "one_supported": (
        [gpu("GPU 1", (7, 1))], logging.INFO,
        OK + "Your GPU will likely run quickly with dtype policy mixed_float16 as it has "
        "compute capability of at least 7.0. Your GPU: GPU 1, compute capability 7.1"),
    "one_at_7_0": (
        [gpu("Tesla V100-SXM2-16GB", (7, 0))], logging.INFO,
        OK + "Your GPU will likely run quickly with dtype policy mixed_float16 as it has "
        "compute capability of at least 7.0. Your GPU: Tesla V100-SXM2-16GB, compute "
        "capability 7.0"),
    "several_supported": (
        [gpu("GPU 1", (7, 0)), gpu("GPU 2", (7, 1)), gpu("GPU 3", (8, 0))], logging.INFO,
        OK + "Your GPUs will likely run quickly with dtype policy mixed_float16 as they all "
        "have compute capability of at least 7.0"),
    "identical_supported": (
        [gpu("NVIDIA H100", [9, 0]), gpu("NVIDIA H100", [9, 0])], logging.INFO,
        OK + "Your GPUs will likely run quickly with dtype policy mixed_float16 as they all "
        "have compute capability of at least 7.0"),
    "one_old": (
        [gpu("GPU 1", (6, 0))], logging.WARNING,
        WARN + "Your GPU may run slowly with dtype policy mixed_float16 because it does not "
        "have compute capability of at least 7.0. Your GPU:\n"
        "  GPU 1, compute capability 6.0\n" + SEE + SUFFIX),
    "no_name_no_cc": (
        [gpu(None)], logging.WARNING,
        WARN + "Your GPU may run slowly with dtype policy mixed_float16 because it does not "
        "have compute capability of at least 7.0. Your GPU:\n"
        "  Unknown GPU, no compute capability (probably not an Nvidia GPU)\n" + SEE + SUFFIX),
    "empty_name_none_cc": (
        [{"name": "", "compute_capability": None}], logging.WARNING,
        WARN + "Your GPU may run slowly with dtype policy mixed_float16 because it does not "
        "have compute capability of at least 7.0. Your GPU:\n"
        "  Unknown GPU, no compute capability (probably not an Nvidia GPU)\n" + SEE + SUFFIX),
    "several_old": (
        [gpu("GPU 1", (6, 0)), gpu("GPU 2", (3, 10))], logging.WARNING,
        WARN + "Your GPUs may run slowly with dtype policy mixed_float16 because they do not "
        "have compute capability of at least 7.0. Your GPUs:\n"
        "  GPU 1, compute capability 6.0\n"
        "  GPU 2, compute capability 3.10\n" + SEE + SUFFIX),
    "identical_old_merged": (
        [gpu("GPU 1", (6, 0)), gpu("GPU 1", (6, 0)), gpu("GPU 1", (6, 0)), gpu("GPU 2", (3, 10))],
        logging.WARNING,
        WARN + "Your GPUs may run slowly with dtype policy mixed_float16 because they do not "
        "have compute capability of at least 7.0. Your GPUs:\n"
        "  GPU 1, compute capability 6.0 (x3)\n"
        "  GPU 2, compute capability 3.10\n" + SEE + SUFFIX),
    "mixed": (
        [gpu("GPU 1", (7, 0)), gpu("GPU 1", (7, 0)), gpu("GPU 2", (6, 0))], logging.WARNING,
        WARN + "Some of your GPUs may run slowly with dtype policy mixed_float16 because they "
        "do not all have compute capability of at least 7.0. Your GPUs:\n"
        "  GPU 1, compute capability 7.0 (x2)\n"
        "  GPU 2, compute capability 6.0\n" + SEE + SUFFIX),
    "mixed_supported_listed_first": (
        [gpu("Old", (5, 2)), gpu("New", (8, 6)), gpu("Old", (5, 2))], logging.WARNING,
        WARN + "Some of your GPUs may run slowly with dtype policy mixed_float16 because they "
        "do not all have compute capability of at least 7.0. Your GPUs:\n"
        "  New, compute capability 8.6\n"
        "  Old, compute capability 5.2 (x2)\n" + SEE + SUFFIX),
    "no_gpu": (
        [], logging.WARNING,
        WARN + "The dtype policy mixed_float16 may run slowly because this machine does not "
        "have a GPU. Only Nvidia GPUs with compute capability of at least 7.0 run quickly with "
        "mixed_float16.\n" + SUFFIX),
}


@pytest.mark.parametrize("case", sorted(COMPAT_CASES))
def test_compatibility_message(case):
    devices, level, text = COMPAT_CASES[case]
    assert dcc._compatibility_message("mixed_float16", devices) == (level, text)


@pytest.mark.parametrize("name", ["mixed_bfloat16", "float16", "float32"])
def test_compatibility_message_only_for_mixed_float16(name):
    assert dcc._compatibility_message(name, []) is None
    assert dcc._compatibility_message(name, [gpu("GPU 1", (6, 0))]) is None


@pytest.mark.parametrize("case", ["one_supported", "several_old", "no_gpu"])
def test_compatibility_check_logs_on_mixprec_logger(caplog, case):
    devices, level, text = COMPAT_CASES[case]
    caplog.set_level(logging.INFO, logger="mixprec")
    dcc._log_device_compatibility_check("mixed_float16", devices)
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("mixprec", level, text)]


@pytest.fixture
def fresh_check(monkeypatch, caplog):
    """The check not yet logged in this process, fake GPUs; returns the device-query count."""
    monkeypatch.setattr(dcc, "_logged_compatibility_check", False)
    queries = []

    def devices():
        queries.append(1)
        return [gpu("GPU 1", (7, 1))]

    monkeypatch.setattr(dcc._gpu_info, "devices", devices)
    caplog.set_level(logging.INFO, logger="mixprec")
    return queries


def _check_records(caplog):
    return [r for r in caplog.records if r.getMessage().startswith(
        "Mixed precision compatibility check")]


@BOTH
def test_compatibility_check_logged_once(fresh_check, caplog, cls):
    cls("mixed_float16")
    cls("mixed_float16")
    Policy("mixed_float16")
    ExpPolicy("mixed_float16", loss_scale=None)
    records = _check_records(caplog)
    assert len(records) == 1 and len(fresh_check) == 1
    assert (records[0].levelno, records[0].getMessage()) == COMPAT_CASES["one_supported"][1:]


@pytest.mark.parametrize("name", ["mixed_bfloat16", "float16", "float32", "_infer"])
def test_compatibility_check_not_used_up_by_other_policies(fresh_check, caplog, name):
    Policy(name)
    ExpPolicy(name)
    assert _check_records(caplog) == [] and fresh_check == []
    Policy("mixed_float16")
    assert len(_check_records(caplog)) == 1


def test_compatibility_check_not_run_for_invalid_names(fresh_check, caplog):
    with pytest.raises(ValueError):
        Policy("mixed_float16_with_float32_vars")
    assert fresh_check == [] and not dcc._logged_compatibility_check


def test_compatibility_check_silenced_by_flag(fresh_check, caplog, monkeypatch):
    # Scripts written for TensorFlow set this flag to skip the check.
    monkeypatch.setattr(dcc, "_logged_compatibility_check", True)
    Policy("mixed_float16")
    assert _check_records(caplog) == [] and fresh_check == []


def test_compatibility_check_via_set_global_policy(fresh_check, caplog):
    mixed_precision.set_global_policy("mixed_float16")
    assert len(_check_records(caplog)) == 1


def test_compatibility_check_uses_this_machines_gpus(monkeypatch, caplog):
    # Whatever this machine has (no GPU, one, several), the logged text is the pure
    # function's answer for mixprec._gpu_info.devices().
    monkeypatch.setattr(dcc, "_logged_compatibility_check", False)
    caplog.set_level(logging.INFO, logger="mixprec")
    Policy("mixed_float16")
    level, text = dcc._compatibility_message("mixed_float16", mixprec._gpu_info.devices())
    assert [(r.levelno, r.getMessage()) for r in _check_records(caplog)] == [(level, text)]
