"""lab.safe: outside text stays literal text in Markdown (issue 28), and lab.i18n.t escapes every value it inserts.

"Literal" is checked by rendering: markdown-it-py (CommonMark, Streamlit's dependency through rich) turns the escaped
text into HTML that holds no link, image, emphasis, code or HTML element, and whose text is the value as written.
Streamlit's own extensions are checked on the escaped source, as Streamlit reads them (``:material/`` is replaced
before parsing; directives, emoji codes and math need an unescaped ``:`` or ``$``; autolinks need ``://``, ``www.``
or ``@``).
"""

from __future__ import annotations

import html
import re

import plotly.graph_objects as go
import pytest
import streamlit as st
from markdown_it import MarkdownIt

from lab import i18n
from lab.i18n import t, t_raw
from lab.safe import JOINER, Markup, for_plotly, literal_figure, markup_join, plain

MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
PARSED_TEXT_RULES = (r"(?i)https?://|www(?=\.)", r"[-.\w+]+@[-\w]+(?:\.[-\w]+)+", r":material_\w+:", r":streamlit:",
                     r":[-+\w]+:")
"""What Streamlit's Markdown finds in the parsed text, escapes resolved (its bundle: mdast-util-gfm-autolink-literal's
``https?://``, ``www.`` and e-mail rules, the icon, logo and emoji codes)."""

HOSTILE = [
    "[Session expired: sign in again](https://evil.example/login)",
    "![x](https://evil.example/pixel.png)",
    "<img src=https://evil.example/pixel.png>",
    "<a href='https://evil.example'>click</a>",
    "<script>alert(1)</script>",
    "*bold* **strong** _em_ __em__ `code` ~~gone~~",
    ":material/warning: :red[red text] :smile: :streamlit:",
    "# heading",
    "- a list item",
    "> a quote",
    "1. ordered",
    "2) ordered",
    "$x^2$ and $$y$$",
    "https://evil.example/login and www.evil.example and mail@evil.example",
    "[ref]: https://evil.example",
    "&lt;b&gt;entity&lt;/b&gt; &#91;x&#93;",
    "a | b\n--- | ---\nc | d",
    "line one\n\n===",
    "back\\slash \\[still\\] literal",
    "{curly} :blue-badge[x] ::help",
]
ORDINARY = ["top_k=999", "acme/alice", "On weekdays I wake up at 6:30.", "Nice to meet you, Alice! How can I help?",
            "The campaign budget is 500,000 yuan.", "500,000 -> 300,000", "conv-26 follow_up", "FIFO (named pipe)",
            "workshop_en.json", "field 'conversation' has no session_", "推广活动现在还剩多少钱可以花？", "0.45"]


def rendered(source: str) -> str:
    return MD.render(source)


def unescaped(source: str) -> str:
    """The Markdown source with every backslash-escaped character blanked: what is left can still be markup."""
    return re.sub(r"\\.", "\x00", source)


def visible_text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup)).replace(JOINER, "").strip()


def parsed(source: str) -> str:
    """The text a parser hands on to the text rules: backslash escapes resolved."""
    return re.sub(r"\\(.)", r"\1", source)


@pytest.mark.parametrize("payload", HOSTILE)
def test_outside_text_renders_as_itself_and_nothing_else(payload):
    source = plain(payload)
    out = rendered(source)
    elements = set(re.findall(r"<(\w+)", out))
    assert elements <= {"p"}, (payload, out)  # no a, img, em, strong, code, h1, ul, ol, blockquote, table, s, script
    assert visible_text(out) == " ".join(payload.splitlines()).strip(), (payload, source, out)


@pytest.mark.parametrize("payload", HOSTILE)
def test_streamlit_extensions_find_nothing_to_read(payload):
    source = plain(payload)
    assert ":material/" not in source, "Streamlit makes an icon of :material/ before it parses (escapes or not)"
    assert not re.search(r"(?<!\\):[A-Za-z]", source), "a directive or emoji code starts at an unescaped colon"
    assert not re.search(r"(?<!\\)\$", source), "math needs an unescaped dollar"
    assert not re.search(r"(?<!\\)://|(?i:www)(?!\\\.)\.|(?<!\\)@", source), "a GFM autolink"
    assert "\n" not in source and "\r" not in source, "a value never starts a block of its own"
    for rule in PARSED_TEXT_RULES:
        assert not re.search(rule, parsed(source)), (rule, "a rule of the parsed text would still match")


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_unchanged(text):
    assert plain(text) == text


def test_markup_passes_as_it_is():
    assert plain(Markup("**bold**")) == "**bold**"
    assert markup_join(", ", ["a_b", "[x](http://e)"]) == f"a_b, \\[x\\](http\\:{JOINER}//e)"


@pytest.fixture
def english():
    st.session_state["lang"] = "en"
    yield
    st.session_state.pop("lang", None)


def test_t_escapes_every_value_but_numbers_and_markup(english):
    link = "[Session expired](https://evil.example/login)"
    warning = t("page.unknown_user", user=link, known="acme/alice")
    assert "<a" not in rendered(warning) and "evil.example" in visible_text(rendered(warning))
    assert t("sidebar.upload_error", error=ValueError("![x](https://evil.example/p.png)")).count("!\\[") == 1
    assert t("sidebar.threshold_remapped", old=0.3, source="minilm", new=0.81, target="e5").count("0.30 → 0.81") == 1
    assert t("pollution.injected", kind=t("inject.stale")) == t_raw("pollution.injected", kind=t("inject.stale"))
    assert t("study.rule_stated", rule=Markup("precision@recall>=0.6"), description="x").startswith(
        "Rule precision@recall>=0.6")
    assert t_raw("study.uploaded", name="a_*b*") == "uploaded scenario: a_*b*", "t_raw inserts values as they are"
    assert isinstance(t("page.user"), Markup)


def test_every_template_takes_escaped_values(english):
    """Every placeholder of every text accepts a hostile string (no format spec of a number is fed a string)."""
    hostile = HOSTILE[0]
    for key, entry in i18n.TEXT.items():
        names = set(re.findall(r"{(\w+)(?:[:!][^}]*)?}", entry["en"] + entry["zh"]))
        numeric = set(re.findall(r"{(\w+)[:!][^}]*}", entry["en"] + entry["zh"]))
        values = {n: (0.5 if n in numeric else hostile) for n in names}
        shown = t(key, **values)
        if names - numeric:
            assert "<a" not in rendered(shown) and "](http" not in unescaped(shown), key


def test_plotly_text_is_shown_as_written():
    import pandas as pd

    frame = pd.DataFrame({"id": ["<a href='https://evil.example'>x</a>"], "n": [1]})
    safe = for_plotly(frame, ("id", "absent"))
    assert safe["id"][0] == "&lt;a href='https://evil.example'&gt;x&lt;/a&gt;" and safe["n"][0] == 1
    assert frame["id"][0].startswith("<a"), "a copy"
    fig = go.Figure(go.Bar(x=["<img src=x>", "ok"], y=[1, 2], name="<b>n</b>"))
    fig.update_layout(title_text="By category: <a href='https://evil.example'>d</a>")
    literal_figure(fig)
    assert "<" not in fig.layout.title.text and list(fig.data[0].x) == ["&lt;img src=x&gt;", "ok"]
    assert fig.data[0].name == "&lt;b&gt;n&lt;/b&gt;"
