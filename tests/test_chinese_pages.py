"""No English word on a Chinese page (issue 51): every page of the lab in Chinese, walked through the paths a room
takes, shows no Latin word outside a short allowlist.

tests/test_app_zh.py checks the lab's own UI strings and leaves data out. This walk reads everything a participant
reads, data included: titles, markdown, captions, alerts, metric labels, values and help, every widget's label, help,
placeholder and options as shown, a text field's value, expander labels, table headers **and cells** (as shown: a
styled table's display values, ``column_config`` labels), and a plotly chart's title, axis titles, tick and category
labels, legend names, annotations, bar texts and hover templates. It fails on any Latin word (``[A-Za-z]{2,}``) that
is not allowed, printing the page, the state, where on the page and the text.

The walk (one session, ``?lang=zh``, the lab's default Chinese scenario and model): the lesson's seven steps (recall
with the raw and the atomic-fact write path, a message of the participant's own and a 52,000-character one whose
reason is the bounded read, every pollution injection, planting canaries and erasing a user with the report and its
chart, the study and its comparison), the dedup page (its Chinese pair set: every kind of reason the lesson shows; the
lab's own version chains), the inspector (active and inactive records), then a scenario uploaded in the sidebar,
recalled and studied.

What passes without translation, and why:

* **The participant's data as their text**: a string that is (or is a comma-joined list of) texts of the scenario
  files, pair sets and the scripted chat the lab shows, the test's typed messages and uploaded file, and the ids they
  hold; inside a sentence, a quoted span (“…”, 「…」) that is such a text. Compared case-insensitively (the reader
  lower-cases values: ``iPhone 12`` is shown ``iphone 12``). Where stored texts are shown (:data:`TEXT_COLUMNS`, a
  fact picker's options, the candidate chart's bars) a word of those texts passes: a stored fact is the message in
  other words ("我的手机" stored as "用户的手机").
* **Ids** (:data:`ID_PATTERNS`, :data:`ID_COLUMNS`): memory, message, session and canary ids the library or the lab
  makes, in an id column or by their shape.
* **Code the participant types** (:data:`CODE`): backticked Markdown, file names and paths, dotted module names,
  environment variables, ``key=value`` settings of a sweep (``top_k=5``).
* **The pickers' option codes** (:data:`CODES`): the values the URL, the CLI and docs/lab.md name the same way in
  both languages (``?write_path=facts``, ``--mode dense``); each picker's Chinese help says what each one means.
* **Names and units** (:data:`ALLOWED`): each entry says why.

Not read: ``st.code`` blocks (configuration and Python a participant copies), ``st.json`` (the EraseReport, the
library's file format, named so in docs/formats.md), ``st.text`` (the context the model receives, in the library's
prompt format: ``user:`` / ``assistant:`` / ``summary:``) and ``st.html`` (styles). Streamlit's own uploader words
are drawn by its frontend, not the element tree: :func:`test_every_uploader_is_worded_by_the_lab_in_chinese` checks the
lab replaces them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import get_args

import pandas as pd
import pytest
import streamlit as st
from streamlit import dataframe_util
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1 import element_tree as et

from lab import PAGES, WRITE_PATHS, dedup, i18n, pollution
from lab.state import LAB_JUDGES, embedder_choices
from memory import parse_scenario
from memory.core.scenario import load_scenario, shipped_scenarios
from memory.eval import MODES, shipped_pair_files
from memory.store.chroma import Scope
from test_app import lab_env, open_app  # noqa: F401 - lab_env: autouse fixture

pytestmark = pytest.mark.app

LATIN = re.compile(r"[A-Za-z]{2,}")
ALLOWED: dict[str, str] = {
    # models, stores and methods, named so in both languages (docs, the sidebar's picker, the CLI)
    "MiniLM": "all-MiniLM-L6-v2, the English model", "minilm": "the model's picker name",
    "e5": "multilingual-e5-small, the Chinese model (one letter and a digit: never a word, listed for clarity)",
    "lexical": "the seed's word-overlap scorer, a model of the picker (memory.embed: LexicalEmbedder)",
    "Chroma": "the vector database", "BM": "BM25, the ranking function", "numpy": "the library the sandbox ranks with",
    "LoCoMo": "the dataset's name", "MCP": "the protocol's name", "LangGraph": "the framework's name",
    # file formats and units
    "JSON": "a file format", "CSV": "a file format", "PNG": "an image format", "Markdown": "a file format", "zip": "a file format",
    "MB": "a unit", "token": "the unit a context budget counts, written so in Chinese texts on LLMs",
    # the knobs and metrics as the code, the URL and the docs name them (tests/test_app_zh.py: ALLOWED)
    "top_k": "the knob's name", "top": "of top-k / top_k, the knob's name", "F1": "a metric", "exp": "a formula",
    "max": "a formula", "id": "identifier, written so in Chinese technical texts (like token)",
    # bilingual on purpose, one constant for both languages (lab/state.py)
    "Language": "the language switch names itself in both languages, so a reader of either finds it",
    "custom": "the query picker's typed-query option, \"✎ custom / 自定义\": also its value in the URL",
}
CODES: dict[str, Iterable[str]] = {
    # the options of the lab's pickers, which the URL (``?write_path=facts``), the CLI and docs/lab.md name the same
    # way in both languages; each picker's Chinese help says what each one is
    "embedder": embedder_choices(), "write path": WRITE_PATHS, "judge": LAB_JUDGES, "study mode": MODES,
    "inspector scope": get_args(Scope), "language": i18n.LANGUAGES,
    "file stems (scenarios, pair sets, the LoCoMo sample)": [*shipped_scenarios(), *shipped_pair_files(),
                                                             "locomo-sample"],
}
CODE_WORDS = {w for codes in CODES.values() for code in codes for w in LATIN.findall(code)}
CODE = re.compile(
    r"`[^`]+`"  # Markdown code: what a participant types
    r"|\b[\w.-]+\.(?:md|json|toml|csv|py|txt)\b"  # file names
    r"|(?<![\w/])[\w.-]+/(?:[\w.-]+/?)*"  # paths (fixtures/, docs/formats.md)
    r"|\b[a-z_]+(?:\.[A-Za-z_]+){2,}\b"  # dotted module names (memory.runtime.erase.verify_erased)
    r"|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b"  # environment variables (MEMORY_DATASETS_DIR)
    r"|\b(?:top_k|decay|threshold)=[\d.e-]+"  # a sweep's setting (a study curve's legend)
    r"|\b\w+@\w+\b"  # a similarity scale (e5@zh), as the CLI and the settings file name it
)
ID_PATTERNS: dict[re.Pattern, str] = {
    re.compile(r"\b(?:fact|mem)-[0-9a-f]{20}\b"): "a memory id (memory.write.ingest / MemoryManager)",
    re.compile(r"\b(?:own-[0-9a-f]{10}|inj-\d+-[a-z]+-\d+|canary-\d+-\d+)(?:·\d+)?"): "a message id the lab gives",
    re.compile(r"\bCANARY-[0-9A-F]{12}\b"): "a planted canary code (lab/pages/erasure.py)",
}
ID_COLUMNS = {"id", "memory_id", "message", "message_id", "source_message_ids", "superseded_by", "supersedes",
              "session_id", "tenant_id", "user_id", "owner", "canary"}
"""Columns of ids: the library's and the scenario's identifiers, the same in every language."""
TEXT_COLUMNS = {"content", "fact", "candidate", "existing", "incoming", "entities",
                i18n.TEXT["recall.col.content"]["zh"], i18n.TEXT["add.col.fact"]["zh"]}
"""Columns of the participant's stored texts (a fact is their message in other words, "我" as "用户"): a word of their
own texts passes there."""
QUOTED = re.compile(r"“([^”]*)”|「([^」]*)」")
HOVER_SLOTS = re.compile(r"%\{[^}]*\}|</?(?:br|sup|sub|b|i|extra)>")
"""A plotly text's slots and tags: not words the chart shows."""
SKIPPED = ("code", "json", "text", "html", "space")


# --- what a page shows ----------------------------------------------------------------------------------------

def _frame_shown(node) -> pd.DataFrame:
    """A table as the page shows it: a styled frame's display values (a format function's output)."""
    arrow = node.proto.arrow_data
    if arrow.HasField("styler") and arrow.styler.display_values:
        return dataframe_util.convert_arrow_bytes_to_pandas_df(arrow.styler.display_values)
    return node.value


def _table(node) -> list[tuple[str, str]]:
    frame, shown = node.value, _frame_shown(node)
    config = json.loads(node.proto.columns or "{}") if node.type == "dataframe" else {}
    found = []
    for position, name in enumerate(map(str, frame.columns)):
        options = config.get(name, {})
        if options.get("hidden"):
            continue
        found.append((f"{node.type}.column", options.get("label") or name))
        column = shown.iloc[:, position] if shown.shape[1] == frame.shape[1] else frame[name]
        found += [(f"{node.type}[{name}]", value) for value in column if isinstance(value, str)]
    return found


def _values(data) -> list:
    """A trace's x, y or text as a list (plotly's binary arrays hold numbers: none of them is text)."""
    if isinstance(data, str):
        return [data]
    return list(data) if isinstance(data, (list, tuple)) else []


def chart_texts(spec: dict) -> list[tuple[str, str]]:
    """Every word a plotly figure spec shows: titles, axis titles and tick texts, legend, annotations, category
    labels, bar texts and hover templates (without their %{...} slots and tags)."""
    layout, found = spec.get("layout", {}), []

    def title(value) -> str | None:
        return value.get("text") if isinstance(value, dict) else value

    found += [("chart.title", title(layout.get("title"))), ("chart.legend", title(layout.get("legend", {}).get("title")))]
    for name, axis in layout.items():
        if name.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
            found.append((f"chart.{name}", title(axis.get("title"))))
            found += [(f"chart.{name}.ticks", tick) for tick in axis.get("ticktext") or []]
    found += [("chart.annotation", a.get("text")) for a in layout.get("annotations") or []]
    for trace in spec.get("data", []):
        if trace.get("showlegend", True) is not False:
            found.append(("chart.trace", trace.get("name")))
        for axis in ("x", "y", "text"):
            found += [(f"chart.trace.{axis}", value) for value in _values(trace.get(axis)) if isinstance(value, str)]
        found += [("chart.hover", template) for template in _values(trace.get("hovertemplate"))]
    return [(what, HOVER_SLOTS.sub(" ", text)) for what, text in found if isinstance(text, str) and text]


def _element(node) -> list[tuple[str, str]]:
    proto, kind = getattr(node, "proto", None), node.type
    if kind in SKIPPED:
        return []
    if kind in ("title", "header", "subheader", "markdown", "caption", "error", "warning", "info", "success"):
        return [(kind, node.value)]
    if kind == "exception":
        return [(kind, str(node.value))]
    if kind == "toast":
        return [(kind, proto.body)]
    if kind == "progress":
        return [(kind, proto.text)]
    if kind == "metric":
        return [("metric", proto.label), ("metric.help", proto.help), ("metric.value", proto.body),
                ("metric.delta", proto.delta)]
    if kind in ("dataframe", "table"):
        return _table(node)
    if kind == "plotly_chart":
        return chart_texts(json.loads(proto.spec))
    fields = proto.DESCRIPTOR.fields_by_name if proto is not None and hasattr(proto, "DESCRIPTOR") else {}
    found = [(f"{kind}.{name}", getattr(proto, name)) for name in ("label", "help", "placeholder") if name in fields]
    if "options" in fields:  # selectbox, radio, multiselect: the options as shown (after format_func)
        found += [(f"{kind}.option", option) for option in proto.options]
    if kind == "multiselect" and not proto.placeholder:
        found.append(("multiselect.placeholder", "Choose options"))  # Streamlit's own, when the lab gives none
    if kind == "text_input":
        found.append((f"{kind}.value", node.value or ""))
    return found


def shown_texts(at: AppTest) -> list[tuple[str, str]]:
    """Every (where, text) the app shows now, main area and sidebar, in page order, without repeats."""
    found: list[tuple[str, str]] = []

    def walk(node) -> None:
        if isinstance(node, et.Block):
            if isinstance(node, (et.Expander, et.Tab, et.Status)):
                found.append((node.type, node.label))
            for index in sorted(node.children):
                walk(node.children[index])
        else:
            found.extend(_element(node))

    walk(at._tree)
    return list(dict.fromkeys((what, text) for what, text in found if isinstance(text, str) and text.strip()))


# --- the check ----------------------------------------------------------------------------------------------

class Data:
    """The participant's own texts and ids (lower-cased): what a page may show as written."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.texts = sorted({t.strip().lower() for t in texts if t and LATIN.search(t)}, key=len, reverse=True)
        self.joined = "\x1f".join(self.texts)
        self.words = {w.lower() for text in self.texts for w in LATIN.findall(text)}

    def holds(self, text: str) -> bool:
        """Whether ``text`` is (part of) one of the texts."""
        low = text.strip().lower()
        return bool(low) and low in self.joined

    def strip(self, text: str) -> str:
        """``text`` without the data it shows as the data's own: the whole of it, each item of a comma-joined list,
        quoted spans, and every whole text it quotes."""
        whole = text[:-1] if text.endswith("…") else text  # a chart's label: the text cut short
        if self.holds(whole) or all(self.holds(part) for part in re.split(r",\s*|、", text)):
            return ""
        text = QUOTED.sub(lambda m: "" if self.holds(m.group(1) or m.group(2) or "") else m.group(0), text)
        low = text.lower()
        for known in self.texts:  # longest first
            if known in low:
                start = low.index(known)
                text, low = text[:start] + " " + text[start + len(known):], low[:start] + " " + low[start + len(known):]
        return text


def english_words(where: str, text: str, data: Data) -> list[str]:
    """The Latin words of ``text`` (shown at ``where``) that nothing allows."""
    column = where[where.find("[") + 1:-1] if where.endswith("]") else ""
    if column in ID_COLUMNS:
        return []
    for pattern in ID_PATTERNS:
        text = pattern.sub(" ", text)
    text = CODE.sub(" ", data.strip(text))
    # the texts' own words where texts are shown: text columns, a fact picker's options, the candidate chart's bars
    own = data.words if column in TEXT_COLUMNS or where in ("selectbox.option", "chart.trace.x") else set()
    cut = ""  # a chart label cut short ends in part of a word of the texts ("Pix…" of "Pixel")
    if where == "chart.trace.x" and text.rstrip().endswith("…"):
        tail = LATIN.findall(text.rstrip()[:-1][-40:])
        if tail and text.rstrip()[:-1].endswith(tail[-1]) and any(w.startswith(tail[-1].lower()) for w in data.words):
            cut = tail[-1]
    return [w for w in LATIN.findall(text) if w not in ALLOWED and w not in CODE_WORDS and w.lower() not in own
            and w != cut]


def offending(shown: dict[str, list[tuple[str, str]]], data: Data) -> list[str]:
    """One line per text with a word nothing allows: the state, where and the text."""
    lines = []
    for state, found in shown.items():
        for where, text in found:
            words = english_words(where, text, data)
            if words:
                lines.append(f"{state} | {where} | {sorted(set(words))} | {text[:240]!r}")
    return lines


# --- the walk -----------------------------------------------------------------------------------------------

OWN_MESSAGES = ("我现在改吃素了，周五晚上在学校跑步。", "活动预算现在是 35 万元。" * 4_000)
"""The participant's own messages: a diet change with a context (a reason with a value and contexts), then 52,000
characters (the bounded read's reason)."""
UPLOAD = {
    "name": "课堂上传-小明", "language": "zh",
    "messages": [
        {"id": "u1", "tenant_id": "school", "user_id": "xiaoming", "content": "我每天早上骑车去学校，周末在家写Python。",
         "timestamp": "2026-03-01T08:00:00Z"},
        {"id": "u2", "tenant_id": "school", "user_id": "xiaoming", "content": "我的手机是iPhone 13。",
         "timestamp": "2026-03-02T08:00:00Z"},
        {"id": "u3", "tenant_id": "school", "user_id": "xiaoming", "content": "我的手机换成了Pixel 8。",
         "timestamp": "2026-03-09T08:00:00Z"},
        {"id": "u4", "tenant_id": "school", "user_id": "xiaoming", "content": "今天天气不错。",
         "timestamp": "2026-03-10T08:00:00Z", "labels": ["noise"]},
    ],
    "queries": [{"id": "q1", "tenant_id": "school", "user_id": "xiaoming", "query": "小明现在用什么手机？",
                 "relevant": ["u3"], "forbidden": ["u2"]},
                {"id": "q2", "tenant_id": "school", "user_id": "xiaoming", "query": "小明怎么去学校？", "relevant": ["u1"]}],
}


def _scenario_texts(scenario) -> list[str]:
    texts = [scenario.name]
    for m in scenario.messages:
        texts += [m.content, m.id, m.tenant_id, m.user_id, f"{m.tenant_id}/{m.user_id}"]
    for q in scenario.queries:
        texts += [q.query, q.id]
    return texts


def participant_data() -> Data:
    """The texts and ids the walk's pages may show as the participant's (or the scenario author's) own."""
    texts = list(OWN_MESSAGES) + _scenario_texts(parse_scenario(json.dumps(UPLOAD), source="upload.json"))
    for path in shipped_scenarios().values():
        texts += _scenario_texts(load_scenario(path))
    for path in shipped_pair_files().values():
        for pair in json.loads(path.read_text(encoding="utf-8")):
            texts += [pair["existing"], pair["incoming"], pair["id"]]
    texts += [m.content for m in dedup.chat_messages("zh")] + ["/".join(dedup.CHAT_OWNER)]
    tenant = load_scenario(shipped_scenarios()["workshop_zh"]).messages[0].tenant_id
    texts += [pollution.NEIGHBOUR, pollution.LEAVER, f"{tenant}/{pollution.NEIGHBOUR}"]  # the users injections add
    return Data(texts)


def _run(at: AppTest, *actions: Callable[[AppTest], object]) -> None:
    """Each action, then a run of the page (no exception allowed)."""
    for action in actions:
        action(at)
        at.run()
        assert not at.exception, [e.value for e in at.exception]


def _click(key: str) -> Callable[[AppTest], object]:
    return lambda at: at.button(key=key).click()


def _write(text: str) -> Callable[[AppTest], object]:
    """The recall page's "add a message" form: type, then submit (one run, as a form sends both)."""
    def write(at: AppTest) -> None:
        at.text_input(key="add.text").input(text)
        next(b for b in at.button if b.proto.is_form_submitter).click()
    return write


def _erase(at: AppTest) -> None:
    user = at.selectbox(key="user").value
    _run(at, _click(f"erasure.erase.{user}"), _click(f"erasure.confirm.{user}"))


def _upload(at: AppTest) -> None:
    """The sidebar's scenario upload, then the recall page on it."""
    data = json.dumps(UPLOAD, ensure_ascii=False).encode()
    _run(at, lambda at: at.sidebar.file_uploader[0].set_value(("课堂.json", data, "application/json")),
         lambda at: at.switch_page("lab/pages/recall.py"))


def _step(*actions: Callable[[AppTest], object]) -> Callable[[AppTest], None]:
    return lambda at: _run(at, *actions)


WALK: tuple[tuple[str, Callable[[AppTest], None]], ...] = (
    ("lesson 1: blind top-k", _step(_click("lesson.step.0"))),
    ("lesson 2: threshold", _step(_click("lesson.next"))),
    ("lesson 3: decay", _step(_click("lesson.next"))),
    ("lesson 4: the write path", _step(_click("lesson.next"))),
    ("own message", _step(_write(OWN_MESSAGES[0]))),
    ("long message (bounded read)", _step(_write(OWN_MESSAGES[1]))),
    ("lesson 5: pollution", _step(_click("lesson.next"))),
    *((f"inject {kind}", _step(_click(f"pollution.inject.{kind}")))
      for kind in ("noise", "private", "stale", "contradiction", "erased")),
    ("lesson 6: erasure", _step(_click("lesson.next"))),
    ("canaries planted", _step(_click("erasure.plant"))),
    ("erased: report and chart", _erase),
    ("lesson 7: study", _step(_click("lesson.next"))),
    ("study: comparison vs threshold", _step(lambda at: at.radio(key="study.compare_kind").set_value("threshold"))),
    ("dedup: pair set and scripted chain", _step(lambda at: at.switch_page("lab/pages/dedup.py"))),
    ("dedup: the lab's chains", _step(lambda at: at.radio(key="dedup.chain_source").set_value("lab"))),
    ("inspector", _step(lambda at: at.switch_page("lab/pages/inspector.py"))),
    ("inspector: inactive", _step(lambda at: at.selectbox(key="scope").set_value("inactive"))),
    ("upload: recall", _upload),
    ("upload: study page", _step(lambda at: at.switch_page("lab/pages/study.py"))),
    ("upload: studied", _step(_click("study.run"))),
)
"""(state, how to get there from the state before): the paths of the walk, in order."""


@pytest.fixture(scope="module")
def walked() -> dict[str, list[tuple[str, str]]]:
    """state -> what the page showed, over the whole walk (one session, in Chinese)."""
    at = open_app(lang="zh")
    shown = {"first screen": shown_texts(at)}
    for state, step in WALK:
        step(at)
        shown[state] = shown_texts(at)
    return shown


def test_the_walk_reaches_every_page_and_path(walked):
    """Each state showed what only it shows (so the walk got there): its page's title, the reasons, the report."""
    titles = {text for found in walked.values() for what, text in found if what == "title"}
    assert len(titles) == len(PAGES), titles  # every page's own title, each in Chinese
    texts = {state: " ".join(text for _, text in found) for state, found in walked.items()}
    assert "只从全部" in texts["long message (bounded read)"]  # the bounded read's reason, in Chinese
    assert i18n.TEXT["erasure.ok"]["zh"] in texts["erased: report and chart"]
    assert any(what.startswith("chart") for what, _ in walked["erased: report and chart"])
    assert UPLOAD["name"] in texts["upload: recall"] and "xiaoming" in texts["upload: recall"]
    assert any(what == "metric" for what, _ in walked["upload: studied"])


def test_no_english_word_on_any_chinese_page(walked):
    found = offending(walked, participant_data())
    assert not found, f"{len(found)} text(s) with English words on Chinese pages:\n" + "\n".join(found)


# --- the check has teeth --------------------------------------------------------------------------------------

def test_the_check_names_an_english_word_and_where_and_lets_data_through():
    data = Data(["我的手机是iPhone 13。", "school/xiaoming"])
    shown = {"lesson 9": [
        ("dataframe[reason]", "两条都成立，各有其语境（“morning”与“evening”）"),  # the reader's canonical words: English
        ("dataframe[reason]", "同一“手机”的设备有了新取值（“iphone 13” -> “Pixel 8”）"),  # one quote is the user's
        ("dataframe[content]", "我的手机是iPhone 13。"),  # the user's text, as written
        ("caption", "已埋入的金丝雀：CANARY-B5829A963438，见 `python -m memory erase` 与 docs/formats.md"),
        ("dataframe[memory_id]", "fact-a4fc8c1f0664fe986aeb"), ("selectbox.option", "school/xiaoming"),
        ("chart.trace.x", "recent_window"),
    ]}
    found = offending(shown, data)
    assert len(found) == 3, found
    assert "morning" in found[0] and "evening" in found[0] and found[0].startswith("lesson 9 | dataframe[reason]")
    assert "Pixel" in found[1] and "iphone" not in found[1].split("|")[2]
    assert "recent_window" in found[2] or "recent" in found[2]


def test_every_uploader_is_worded_by_the_lab_in_chinese():
    """Streamlit 1.67 draws its uploader's button ("Upload") and size note ("5MB per file • JSON") in its frontend, in
    English, with no option to word them: on a Chinese page the lab hides them and draws its own
    (lab.state.UPLOADER_STYLE), on every page with an uploader."""
    at = open_app("lab/pages/study.py", lang="zh", embedder="lexical")  # the sidebar's uploader and the page's own
    assert len(at.get("file_uploader")) >= 2
    styles = " ".join(node.proto.body for node in at.get("html"))
    limit = i18n.TEXT["upload.limit"]["zh"].format(mb=st.get_option("server.maxUploadSize"))
    for selector, said in (("stFileUploaderDropzone", i18n.TEXT["upload.browse"]["zh"]),
                           ("stFileUploaderDropzoneInstructions", limit)):
        assert f'[data-testid="{selector}"]' in styles and f'content: "{said}"' in styles, (selector, styles)
