"""A link's sidebar values: Streamlit drops an invalid bound value silently; the lab says which it ignored."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.test_app import APP, TIMEOUT

pytestmark = pytest.mark.app

PHRASE = "Ignored from the link"


def _open(**params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.sidebar.warning if PHRASE in w.value]


def test_invalid_link_values_are_named_once_and_the_defaults_used():
    at = _open(threshold="abc", top_k="999", embedder="nope", lang="xx", decay_rate="0.1", window_size="3")
    [warning] = _warnings(at)
    for part in ("threshold=abc", "top_k=999", "embedder=nope", "lang=xx"):
        assert part in warning
    assert "decay_rate" not in warning and "window_size" not in warning  # valid values are not reported
    config = at.session_state["lab.settings"].config
    assert (config.threshold, config.top_k, config.decay_rate, config.window_size) == (0.3, 5, 0.1, 3)
    at.run()
    assert not _warnings(at)  # said once, on the link's first run, not on every rerun


@pytest.mark.parametrize("params", [
    {"threshold": "0.3"}, {"threshold": "0.30"}, {"top_k": "5"}, {"lang": "en"}, {"embedder": "auto"},
    {"scenario": "workshop_en", "write_path": "raw"}, {"threshold": "0.45", "lang": "zh"},
])
def test_default_or_valid_values_are_not_reported(params):
    """Streamlit leaves a default out of the URL: that is not a refusal."""
    assert not _warnings(_open(**params))
