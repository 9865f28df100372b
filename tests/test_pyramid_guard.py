"""The test pyramid's guard (tests/conftest.py): a test without an integration marker may not load a model, also
while a module's or the session's fixture is built for it (pytest builds those before any function fixture)."""

from __future__ import annotations

import pytest
from conftest import _RUNNING, _models_only_for_model_tests

from memory.embed import embedders


class _Item:
    """What the guard asks of a test: its id and its markers."""

    nodeid = "tests/test_x.py::test_y"

    def __init__(self, integration: bool) -> None:
        self.integration = integration

    def get_closest_marker(self, name: str):
        return object() if self.integration and name == "integration" else None


def test_a_load_for_an_unmarked_test_is_refused_naming_the_marker(monkeypatch):
    calls: list[int] = []
    guarded = _models_only_for_model_tests(lambda: calls.append(1))
    monkeypatch.setitem(_RUNNING, "item", _Item(integration=False))
    with pytest.raises(AssertionError, match=r"tests/test_x.py::test_y .*mark it @pytest.mark.model"):
        guarded()
    assert calls == []
    monkeypatch.setitem(_RUNNING, "item", _Item(integration=True))
    guarded()
    monkeypatch.setitem(_RUNNING, "item", None)  # between tests (a worker's own start): not a test's load
    guarded()
    assert calls == [1, 1]


@pytest.fixture(scope="module")
def e5_from_a_module_fixture():
    """e5 loaded by a module's fixture, as tests/test_calibration.py's comparison once did for unmarked tests: the
    guard's message, or None if the model loaded."""
    try:
        embedders.E5Embedder()
    except AssertionError as exc:
        return str(exc)
    return None


def test_a_module_fixture_loading_a_model_for_an_unmarked_test_is_refused(e5_from_a_module_fixture):
    assert e5_from_a_module_fixture is not None, "e5 loaded for a test without the model marker"
    assert "test_a_module_fixture_loading_a_model_for_an_unmarked_test_is_refused" in e5_from_a_module_fixture
    assert "mark it @pytest.mark.model" in e5_from_a_module_fixture
