"""docs/lab.md gives the room its links: enough of them, a deep link first (a unit test: it reads the file)."""

from lab_links import documented_links


def test_documented_links_are_many_and_a_deep_link_comes_first():
    """The browser tests open each of these; the first, a deep link, as a fresh server's very first request."""
    links = documented_links()
    assert len(links) >= 8 and not (links[0] == "/" or links[0].startswith("/?")), links


def test_the_documented_sidebar_defaults_are_the_labs_own():
    """docs/lab.md's sidebar table states each default once (``key`` = value); each must be what the lab uses."""
    import re
    from pathlib import Path

    from lab.state import widget_defaults

    text = (Path(__file__).resolve().parent.parent / "docs" / "lab.md").read_text(encoding="utf-8")
    table = text.split("## The sidebar", 1)[1].split("\n\n", 2)[1]
    stated = dict(re.findall(r"`(\w+)` = ([\w.]+)", table))
    defaults = widget_defaults("en")
    assert len(stated) >= 12, stated
    for key, value in stated.items():
        if key == "lang":
            assert value == "en"
            continue
        want = defaults[key]
        assert (float(value) == want) if isinstance(want, float) else (value == str(want)), (key, value, want)
