"""serve.py's choice of languages to warm (MEMORY_LAB_WARM): no model, no server. What warming builds is tested in
tests/test_app.py (test_warming_leaves_the_first_labs_of_both_languages_nothing_to_build), and that the port opens
only once warm in tests/test_browser.py (the browser tests' lab server is serve.py)."""

from __future__ import annotations

import pytest

from serve import WARM_ENV, warm_languages


def test_both_languages_are_warmed_unless_told_otherwise():
    assert warm_languages(None) == ["en", "zh"]
    assert warm_languages("zh") == ["zh"]
    assert warm_languages(" en , zh ") == ["en", "zh"]


@pytest.mark.parametrize("value", ["none", "", " , "])
def test_none_or_nothing_starts_cold(value):
    assert warm_languages(value) == []


def test_an_unknown_language_is_one_line_naming_the_variable_and_the_value():
    with pytest.raises(SystemExit) as exc:
        warm_languages("en,fr")
    message = str(exc.value)
    assert WARM_ENV in message and "'fr'" in message and "\n" not in message
