"""docs/lab.md gives the room its links: enough of them, a deep link first (a unit test: it reads the file)."""

from lab_links import documented_links


def test_documented_links_are_many_and_a_deep_link_comes_first():
    """The browser tests open each of these; the first, a deep link, as a fresh server's very first request."""
    links = documented_links()
    assert len(links) >= 8 and not (links[0] == "/" or links[0].startswith("/?")), links
