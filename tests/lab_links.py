"""The lab links docs/lab.md gives (tests/test_browser.py opens each; tests/test_docs_links.py counts them)."""

from __future__ import annotations

import re
from pathlib import Path

from lab import PAGES

ROOT = Path(__file__).resolve().parent.parent


def documented_links() -> list[str]:
    """Every lab link docs/lab.md gives (backticked paths starting with /), deep links first."""
    text = (ROOT / "docs" / "lab.md").read_text(encoding="utf-8")
    pages = {spec.url_path for spec in PAGES}
    links = {link for link in re.findall(r"`(/[^`]*)`", text) if link.split("?")[0].strip("/") in pages | {""}}
    return sorted(links, key=lambda link: (link == "/" or link.startswith("/?"), link))

