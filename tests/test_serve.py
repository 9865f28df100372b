"""serve.py's choice of languages to warm (MEMORY_LAB_WARM): no model, no server (one short process for a bad
value). What warming builds is tested in tests/test_app.py
(test_warming_leaves_the_first_labs_of_both_languages_nothing_to_build), and that the port opens only once warm in
tests/test_browser.py (the browser tests' lab server is serve.py)."""

from __future__ import annotations

import pytest

from serve import WARM_ENV, warm_languages


def test_both_languages_are_warmed_unless_told_otherwise():
    assert warm_languages(None) == ["en", "zh"]
    assert warm_languages("zh") == ["zh"]
    assert warm_languages(" en , zh ") == ["en", "zh"]
    assert warm_languages("zh,en,zh") == ["zh", "en"]  # each once, in the order named


@pytest.mark.parametrize("value", ["none", "", " , "])
def test_none_or_nothing_starts_cold(value):
    assert warm_languages(value) == []


def test_an_unknown_language_is_one_line_naming_the_variable_and_the_value():
    with pytest.raises(ValueError) as exc:
        warm_languages("en,fr")
    message = str(exc.value)
    assert WARM_ENV in message and "'fr'" in message and "\n" not in message


@pytest.mark.process
def test_a_bad_warm_setting_stops_the_server_with_one_line_and_status_2():
    """serve.py reads MEMORY_LAB_WARM when the server imports it, before anything is built or served: a language the
    lab does not have is one line on stderr (no traceback) and exit status 2."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", "import serve"], cwd=root, capture_output=True, text=True,
                          env=dict(os.environ, **{WARM_ENV: "en,fr"}), timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [f"serve.py: {WARM_ENV}: unknown language 'fr' (use en, zh or none)"]
