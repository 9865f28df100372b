"""AppTest: a link, a typed query, a message or a dataset never puts markup or a server path in a page (issue 28).

Hostile values (a link, an image, raw HTML, a script, a Streamlit icon and colour directive, a bare domain) go
through every bound query parameter (the sidebar's knobs and choices, ``user``, ``who``, ``scope``, ``q``, ``pairs``,
``dataset``, ``mode``, ``lesson``), in English and in Chinese, page after page in one session; then a typed query
and a message of the same kind. Every Markdown body the app shows (texts, alerts, captions, toasts, progress texts,
widget labels, help and radio options, expander labels, st.table cells as displayed, dataframe tooltips) must hold no
``](http``, ``![``, ``<img``, ``<a `` or ``<script`` outside a backslash escape, and must render (CommonMark) with no
link and no image; every plotly figure must hold no raw ``<a ``, ``<img`` or ``<script``. The values must still be
there, as text.
"""

from __future__ import annotations

import json
import re

import pytest
from markdown_it import MarkdownIt
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1 import element_tree as et

from lab.state import CUSTOM_LABEL, KNOBS
from test_app import APP, TIMEOUT, lab_env  # noqa: F401 - lab_env: autouse fixture (data folder, caches)

pytestmark = pytest.mark.app

PAYLOADS = (
    "[Sign in](https://evil.example/login)",
    "![x](https://evil.example/p.png)",
    "<img src=https://evil.example/p.png>",
    "<script>alert(1)</script>",
    "<a href=https://evil.example>x</a>",
    ":material/warning: :red[**x**]",
    "www.evil.example/login",
)
"""At most 40 characters each: the sidebar names a refused value by its first 40."""
SIDEBAR = [knob.key for knob in KNOBS] + ["scenario", "write_path"]
FORBIDDEN = ("](http", "![", "<img", "<a ", "<script")
AUTOLINKS = re.compile(r"(?i)https?://|www(?=\.)|[-.\w+]+@[-\w]+(?:\.[-\w]+)+")
"""GFM's literal autolinks as Streamlit's Markdown finds them: in the parsed text, backslash escapes resolved."""
MD = MarkdownIt("commonmark")
PAGES = {  # page -> its own bound parameters, each given a hostile value
    "lab/pages/erasure.py": ("user",),
    "lab/pages/inspector.py": ("who", "scope"),
    "lab/pages/dedup.py": ("pairs",),
    "lab/pages/study.py": ("dataset", "mode"),
}
MESSAGE = ("budget ![x](https://evil.example/p.png) <a href='https://evil.example'>budget</a> "
           "<script>alert(1)</script> [Sign in](https://evil.example/login) :material/warning:")


def _hostile(names) -> dict[str, str]:
    return {name: PAYLOADS[i % len(PAYLOADS)] for i, name in enumerate(names)}


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _table_cells(node) -> list[str]:
    """An st.table's headers, row headers and cells as displayed (a Styler's display values when it has them)."""
    data = node.proto.arrow_data
    shown = data.styler.display_values if data.HasField("styler") and data.styler.display_values else data.data
    frame = convert_arrow_bytes_to_pandas_df(shown)
    return [*map(str, node.value.columns), *map(str, node.value.index), *map(str, frame.to_numpy().ravel())]


def markdown_bodies(at: AppTest) -> list[tuple[str, str]]:
    """(what, source) of every Markdown body the app shows now, main area and sidebar."""
    found: list[tuple[str, str]] = []

    def walk(node) -> None:
        if isinstance(node, et.Block):
            label = getattr(node, "label", None)
            if isinstance(label, str):
                found.append((node.type, label))
            for index in sorted(node.children):
                walk(node.children[index])
            return
        kind, proto = node.type, getattr(node, "proto", None)
        if kind in ("title", "header", "subheader", "markdown", "caption", "error", "warning", "info", "success"):
            found.append((kind, node.value))
        elif kind == "toast":
            found.append((kind, proto.body))
        elif kind == "progress":
            found.append((kind, proto.text))
        elif kind == "table":
            found.extend(("table", cell) for cell in _table_cells(node))
        elif kind == "dataframe":
            for options in json.loads(proto.columns or "{}").values():
                if isinstance(options, dict) and "help" in options:
                    found.append(("dataframe.help", options["help"]))
        elif kind == "html":  # the lab's own HTML (its cookie script, the uploader's words): no outside value in it
            assert "evil" not in proto.body, proto.body
        # st.text (the recall page's context box), st.code and st.json are shown verbatim: never parsed as Markdown
        elif proto is not None and hasattr(proto, "DESCRIPTOR") and kind not in ("plotly_chart", "code", "json", "text"):
            fields = proto.DESCRIPTOR.fields_by_name
            found.extend((f"{kind}.{f}", getattr(proto, f)) for f in ("label", "help", "placeholder", "body") if f in fields)
            if kind == "radio":
                found.extend(("radio.option", option) for option in proto.options)

    walk(at._tree)
    return [(what, text) for what, text in found if isinstance(text, str) and text]


def figure_strings(at: AppTest) -> list[str]:
    out: list[str] = []

    def strings(value) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                strings(item)
        elif isinstance(value, list):
            for item in value:
                strings(item)

    for chart in at.get("plotly_chart"):
        strings(json.loads(chart.proto.spec))
    return out


def assert_no_markup(at: AppTest) -> str:
    """Every Markdown body and figure of the page holds no markup from outside; all the bodies, joined."""
    bodies = markdown_bodies(at)
    assert bodies, "the page drew nothing"
    for what, source in bodies:
        bare = re.sub(r"\\.", "\x00", source).lower()  # what is left outside escapes can still be markup
        assert not [f for f in FORBIDDEN if f in bare], (what, source)
        assert not AUTOLINKS.search(re.sub(r"\\(.)", r"\1", source)), (what, source)
        html = MD.render(source)
        assert "<a " not in html and "<img" not in html, (what, source, html)
        assert ":material/" not in source, (what, source)
    for text in figure_strings(at):
        assert not re.search(r"<(a|img|script)\b", text, re.I), text
    return "\n".join(source for _, source in bodies)


def _open(**params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(params)
    at.run()
    return _ok(at)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_hostile_link_values_show_as_text_on_every_page(lang):
    params = _hostile([*SIDEBAR, "user", "q", "lesson"])
    at = _open(embedder="lexical", lang=lang, **params)
    dropped = [w.value for w in at.sidebar.warning if "threshold=" in w.value]
    assert len(dropped) == 1 and all(f"{key}=" in dropped[0] for key in SIDEBAR), dropped
    assert dropped[0].count("evil") >= 5, "the refused values are named, as text"
    shown = assert_no_markup(at)
    assert "Sign in" in shown and "alert(1)" in shown
    for page, names in PAGES.items():
        _ok(at.switch_page(page).run())  # a page switch's own run does not see the link; the next one does
        at.query_params.update(_hostile(names))
        _ok(at.run())
        shown = assert_no_markup(at)
        if "user" in names or "who" in names:
            assert "evil.example" in shown, (page, "the unknown user is named, as text")


def test_a_hostile_model_and_language_are_named_as_text():
    at = _open(embedder=PAYLOADS[0], lang=PAYLOADS[2])
    [warning] = [w.value for w in at.sidebar.warning if "embedder=" in w.value]
    assert "lang=" in warning and "Sign in" in warning
    assert_no_markup(at)


def test_a_typed_query_and_a_message_show_as_text():
    """The query comes from the link (``?q=✎ custom&query=...``), the message from the "add a message" form: both
    land in the recall page's tables (st.table cells are Markdown), the candidate chart and the decision table."""
    at = _open(embedder="lexical", q=CUSTOM_LABEL, query=MESSAGE)
    at.text_input(key="add.text").input(MESSAGE)
    [b for b in at.button if b.label == "Write it"][0].click()
    _ok(at.run())
    shown = assert_no_markup(at)
    tables = [cell for node in at.table for cell in _table_cells(node)]
    assert any("evil.example" in cell and "\\[Sign in\\]" in cell for cell in tables), "the message is in a table"
    assert any("&lt;script&gt;" in text for text in figure_strings(at)), "and in the chart, as text"
    assert "Sign in" in shown


def test_a_dataset_leading_out_of_the_folder_is_named_by_its_name_alone(tmp_path, monkeypatch):
    """An instructor's datasets folder holding a symlink to a file outside: the error names the file as the
    instructor named it, never the folder's path nor where the link leads (issue 28)."""
    folder, outside = tmp_path / "datasets", tmp_path / "elsewhere"
    folder.mkdir()
    outside.mkdir()
    (outside / "secret.json").write_text("[]", encoding="utf-8")
    (folder / "escape.json").symlink_to(outside / "secret.json")
    monkeypatch.setenv("MEMORY_DATASETS_DIR", str(folder))
    at = _open(embedder="lexical", mode="lexical")
    _ok(at.switch_page("lab/pages/study.py").run())
    error = "\n".join(e.value for e in _ok(at.selectbox(key="dataset").set_value("escape.json").run()).error)
    assert "escape.json" in error and "outside the allowed folder" in error, error
    for path in (folder, outside, folder.resolve(), outside.resolve(), tmp_path):
        assert str(path) not in error, error
