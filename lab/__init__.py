"""The Streamlit lab around ``memory/``: shared constants, one place.

``PAGES`` is the navigation: ``app.py`` turns every entry into an ``st.Page``
and the app and browser tests iterate over it, so adding a page is one line
here plus its file under ``lab/pages/``. The page scripts are not in a ``pages/``
folder beside ``app.py`` on purpose: Streamlit 1.67 treats such a folder as its
legacy multipage app, so the first request of a fresh server that named a page
showed "Page not found", and a url path equal to a file stem ran the page without
``app.py``'s sidebar. The url paths (``recall-view``, ...) are the documented links.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PageSpec:
    """One page of the lab's navigation."""

    path: str
    """The page file, relative to app.py."""
    url_path: str
    """The page's URL path; never the file stem."""
    title_key: str
    """i18n key of the page title (lab/locales/<lang>.json)."""
    icon: str
    """A Material icon name, ``:material/...:``."""
    has_chart: bool = False
    """Whether the page draws a plotly chart once populated (browser tests wait for it)."""
    default: bool = False
    """The page ``/`` opens."""
    picks_user: bool = True
    """The page has the shared user picker (``?user=tenant/user``), so a stale user link shows a message there."""

    @property
    def file(self) -> str:
        """The page file's absolute path, what app.py gives ``st.Page``: Streamlit resolves a relative one against
        the folder of the script it runs, which is not the repository root in an installed lab (lab/launch.py)."""
        return str(Path(__file__).resolve().parent.parent / self.path)

    @property
    def link(self) -> str:
        """The path a browser opens: Streamlit serves the default page at the root and ignores its url_path."""
        return "" if self.default else self.url_path


PAGES: tuple[PageSpec, ...] = (
    PageSpec("lab/pages/recall.py", "recall-view", "page.recall", ":material/manage_search:", has_chart=True, default=True),
    PageSpec("lab/pages/pollution.py", "pollution-view", "page.pollution", ":material/coronavirus:", has_chart=True),
    PageSpec("lab/pages/dedup.py", "dedup-view", "page.dedup", ":material/join_inner:", has_chart=True, picks_user=False),
    PageSpec("lab/pages/erasure.py", "erasure-view", "page.erasure", ":material/delete_forever:", has_chart=True),
    PageSpec("lab/pages/study.py", "study-view", "page.study", ":material/monitoring:", has_chart=True, picks_user=False),
    PageSpec("lab/pages/inspector.py", "inspector-view", "page.inspector", ":material/table_view:"),
)

WINDOW_CAPACITY = 12
"""Messages the lab's managers keep verbatim per user; the window_size slider re-slices this
stored window (and folds the rest into the summary view), so moving it never re-ingests."""

CANDIDATE_CACHE_ENTRIES = 64
"""Candidate pools (one per workspace, data version, user, query) kept per browser session."""

WRITE_PATHS: tuple[str, ...] = ("raw", "facts")
"""How the lab writes messages: ``raw`` stores every message as-is (MemoryManager.add_many); ``facts`` sends
them through the write path (memory.write.ingest.Ingestor: atomic facts, dedup/update/coexist, version chains)."""

LOCOMO_SAMPLE = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "locomo" / "locomo-sample.json"
"""The two-conversation LoCoMo sample (CC BY-NC 4.0): read from beside the repository, never copied into it."""

DATASETS_DIR_ENV = "MEMORY_DATASETS_DIR"
"""Environment variable naming an instructor's folder of datasets (scenario or LoCoMo ``*.json`` files) that the
study page offers by file name. Unset: no folder, no such option (participants never type a server path)."""


def datasets_dir() -> Path | None:
    """The folder MEMORY_DATASETS_DIR names, or None when it is unset."""
    raw = os.environ.get(DATASETS_DIR_ENV, "").strip()
    return Path(raw).expanduser() if raw else None


def dataset_names(folder: Path) -> list[str]:
    """The ``*.json`` files of ``folder`` by name, sorted, without opening any: regular files and symlinks (a
    symlink is followed only when read, and only within the folder: memory.core.safefile.read_regular_file with
    ``root=folder``). Folders, devices, FIFOs, sockets, hidden and unprintable names are left out. OSError when
    the folder cannot be listed."""
    with os.scandir(folder) as entries:
        return sorted(e.name for e in entries if e.name.endswith(".json") and not e.name.startswith(".")
                      and e.name.isprintable() and (e.is_symlink() or e.is_file(follow_symlinks=False)))


CANDIDATE_ORDER = ("content", "stage", "reason", "similarity", "recency", "score", "pollution", "id", "importance",
                   "similarity_part", "recency_part", "importance_part", "tokens", "in_blind", "memory_id")
"""The recall page's candidate table, column by column. At 1024x768 with the sidebar open the table is about 670 px
wide: what the lesson's lines point at (the memory's text, the stage and its reason, then similarity, recency and
score: :data:`CANDIDATE_WIDTHS`) comes first and narrow; the other columns follow."""
CANDIDATE_WIDTHS: dict[str, int | str] = {"content": 160, "stage": "small", "reason": 205, "similarity": "small",
                                          "recency": "small", "score": "small"}
"""Widths of the candidate table's first columns (pixels, or Streamlit's ``"small"``: 75 px); the text is pinned.
tests/test_browser.py checks on every lesson step that the table shows them whole at 1024x768."""

MEMORY_TEXT_COLUMN = {"width": "large", "pinned": True}
"""``st.column_config.TextColumn`` options of the memory text in the candidate tables: the first column, pinned
(the short blind and governed lists are static tables, whose cells wrap: readable on a projector at 1024x768)."""
