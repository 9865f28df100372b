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


@pytest.mark.process
def test_the_url_is_printed_once_the_lab_is_warm_not_before(tmp_path):
    """`streamlit run serve.py` binds its port (where Streamlit prints its welcome message) before serve.py is even
    imported; the lab's config holds that message back and serve.py prints it after the warm-up's last line, so an
    instructor never hands out the URL of a lab still warming. The warm-up here is a stand-in that takes 2 s (what it
    builds is tested in tests/test_app.py; that the port opens only once warm, in tests/test_browser.py): this test is
    about the order of the console's lines."""
    import os
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    from serve import WARM_LINE

    root = Path(__file__).resolve().parent.parent
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    stand_in = ("import sys, time\n"
                "import lab.engine\n"
                "def warm(langs, report):\n"
                "    for lang in langs:\n"
                "        time.sleep(1.0); report(lang + ': loading'); time.sleep(1.0); report(lang + ': building')\n"
                "lab.engine.warm_starting_states = warm\n"
                "from streamlit.web import cli\n"
                "cli.main(['run', 'serve.py', '--server.headless', 'true', '--server.port', sys.argv[1]])\n")
    out = (tmp_path / "console.txt").open("w+")
    proc = subprocess.Popen([sys.executable, "-c", stand_in, str(port)], cwd=root, stdout=out, stderr=subprocess.STDOUT,
                            env=dict(os.environ, **{WARM_ENV: "en"}, MEMORY_DATA_DIR=str(tmp_path / "data")))
    try:
        deadline = time.monotonic() + 60
        while "URL:" not in (console := (tmp_path / "console.txt").read_text()) and time.monotonic() < deadline:
            assert proc.poll() is None, console
            time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        out.close()
    assert "URL:" in console, console
    assert f"http://localhost:{port}" in console, console
    assert console.index("[2/2] en: building") < console.index(WARM_LINE) < console.index("You can now view"), console
    assert console.count("You can now view") == 1, console
