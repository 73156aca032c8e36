"""mixprec's pytest plugin (entry point ``pytest11``): the ``mixprec_policy`` and
``mixprec_seed`` fixtures and the ``mixprec_policies`` marker.

    @pytest.mark.mixprec_policies("float32", "mixed_float16", "mixed_bfloat16")
    def test_my_model_trains(mixprec_policy, mixprec_seed):
        model = build()          # layers pick up the policy (set as the global policy)
        ...

NOTE: the plugin is loaded into every pytest run of an environment where mixprec is
installed, so it must not change tests that do not ask for it: every name it adds starts
with ``mixprec_``. A project's own fixture called ``policy`` or ``seed`` is untouched.
Without the marker, ``mixprec_policy`` runs the test under float32 and mixed_float16.
"""

import pytest

DEFAULT_POLICIES = ("float32", "mixed_float16")
FIXTURE = "mixprec_policy"
MARKER = "mixprec_policies"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "%s(*names): run the test once per dtype policy through the `%s` "
        "fixture (default: float32 and mixed_float16)" % (MARKER, FIXTURE))


def pytest_generate_tests(metafunc):
    if FIXTURE in metafunc.fixturenames and not _parametrized_by_test(metafunc, FIXTURE):
        marker = metafunc.definition.get_closest_marker(MARKER)
        names = tuple(marker.args) if marker and marker.args else DEFAULT_POLICIES
        metafunc.parametrize(FIXTURE, names, indirect=True, ids=list(names))


def _parametrized_by_test(metafunc, name):
    """True when the test's own ``@pytest.mark.parametrize`` names ``name``: then it, not
    the plugin, chooses the values."""
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if name in names:
            return True
    return False


@pytest.fixture
def mixprec_policy(request):
    """The test's dtype policy, set as the global policy for the test and restored after."""
    from mixprec.keras.mixed_precision import policy as _policy

    name = getattr(request, "param", "float32")
    p = _policy.Policy(name)
    with _policy.policy_scope(p):
        yield p


@pytest.fixture
def mixprec_seed():
    """Seeds Python's, NumPy's and mixprec's random generators with 0; yields the seed."""
    from mixprec.keras import utils

    utils.set_random_seed(0)
    yield 0
