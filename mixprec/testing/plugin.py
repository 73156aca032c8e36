"""mixprec's pytest plugin (entry point ``pytest11``): the ``policy`` and ``seed`` fixtures.

    @pytest.mark.policies("float32", "mixed_float16", "mixed_bfloat16")
    def test_my_model_trains(policy, seed):
        model = build()          # layers pick up `policy` (set as the global policy)
        ...

Without the marker, ``policy`` runs the test under float32 and mixed_float16.
"""

import pytest

DEFAULT_POLICIES = ("float32", "mixed_float16")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "policies(*names): run the test once per dtype policy through the "
        "`policy` fixture (default: float32 and mixed_float16)")


def pytest_generate_tests(metafunc):
    if "policy" in metafunc.fixturenames and not _parametrized_by_test(metafunc, "policy"):
        marker = metafunc.definition.get_closest_marker("policies")
        names = tuple(marker.args) if marker and marker.args else DEFAULT_POLICIES
        metafunc.parametrize("policy", names, indirect=True, ids=list(names))


def _parametrized_by_test(metafunc, name):
    """True when the test's own ``@pytest.mark.parametrize`` names ``name``: then it, not
    the plugin, chooses the values (a user's test may have a parameter called policy)."""
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if name in names:
            return True
    return False


@pytest.fixture
def policy(request):
    """The test's dtype policy, set as the global policy for the test and restored after."""
    from mixprec.keras.mixed_precision import policy as _policy

    name = getattr(request, "param", "float32")
    p = _policy.Policy(name)
    with _policy.policy_scope(p):
        yield p


@pytest.fixture
def seed():
    """Seeds Python's, NumPy's and mixprec's random generators with 0; yields the seed."""
    from mixprec.keras import utils

    utils.set_random_seed(0)
    yield 0
