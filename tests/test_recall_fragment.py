"""A slider move reruns only what it changes (issue 51), and a lesson step's target comes first on the recall page.

On the recall page everything the recall knobs change (lab.state.FRAGMENT_KNOBS) is one fragment
(lab/pages/recall.py, ``RESULTS``); a knob's move reruns it alone (lab.state.knob_moved). AppTest runs that
fragment alone too (Streamlit 1.67's ``st.rerun(key)`` from a callback): tests/fragment_runs.py keeps what each
run itself drew (``LAST_RUN``) and shows the rest of the page as the browser keeps it. The parts outside the fragment
are counted where they run: app.py's sidebar (lab.state.render_sidebar), the page's header (lab.engine.page_header),
its pickers (lab.state.pick_target) and the store's candidate fetch (MemoryManager.candidates).

Real parts: the lab in AppTest over real Chroma in a temporary data folder, the lexical embedder (MiniLM, loaded once
per process, for the lesson's steps), the ``raw`` write path (the fragment is about recall, not the write path).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import pytest
from streamlit.testing.v1 import AppTest

import fragment_runs
from lab import engine, lesson, models, state
from lab.i18n import TEXT
from lab.state import DEFAULTS
from memory import MemoryManager, govern
from tests.test_app import lab_env  # noqa: F401 - a fixture

pytestmark = pytest.mark.app

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 240
RESULTS = "recall-results"
"""The recall page's fragment (lab/pages/recall.py: RESULTS)."""
OUTSIDE = ("sidebar", "header", "pickers", "fetch")


@pytest.fixture(autouse=True)
def _fresh_lab(lab_env):  # noqa: F811 - tests/test_app.py's fixture: a fresh data folder and fresh caches
    yield


class Parts:
    """How often each part outside the fragment ran, and the candidates the store gave."""

    def __init__(self, monkeypatch) -> None:
        self.runs: Counter[str] = Counter()
        self.fetched: list[Any] = []
        for name, owner, attr in (("sidebar", state, "render_sidebar"), ("header", engine, "page_header"),
                                  ("pickers", state, "pick_target"), ("fetch", MemoryManager, "candidates")):
            monkeypatch.setattr(owner, attr, self._counting(name, getattr(owner, attr)))

    def _counting(self, name: str, original):
        def counted(*args, **kwargs):
            self.runs[name] += 1
            out = original(*args, **kwargs)
            if name == "fetch":
                self.fetched.append(out)
            return out
        return counted

    def outside(self) -> dict[str, int]:
        return {name: self.runs[name] for name in OUTSIDE}


@pytest.fixture
def parts(monkeypatch) -> Parts:
    return Parts(monkeypatch)


def open_recall(**params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update({"embedder": "lexical", "write_path": "raw", **params})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def last_run(at: AppTest) -> fragment_runs.Run:
    return fragment_runs.LAST_RUN[at._session_state]


def metric(at: AppTest, label: str) -> int:
    found = [m.value for m in at.metric if m.label == label]
    assert found, f"no metric {label!r}; have {[m.label for m in at.metric]}"
    return int(str(found[0]).split("/")[0])


def governed_texts(at: AppTest) -> list[str]:
    """The governed list as the page shows it (the right-hand side table)."""
    tables = [t.value for t in at.table if TEXT["recall.col.content"]["en"] in t.value.columns]
    assert len(tables) == 2, f"{len(tables)} side tables"
    return list(tables[1][TEXT["recall.col.content"]["en"]])


def assert_fragment_run(at: AppTest) -> fragment_runs.Run:
    """The last run was the recall fragment's alone: every element it drew belongs to that fragment."""
    assert not at.exception, [e.value for e in at.exception]
    run = last_run(at)
    assert run.fragment_ids, "the move reran the whole script"
    deltas = [m for m in run.messages if m.HasField("delta")]
    assert deltas and {m.delta.fragment_id for m in deltas} <= set(run.fragment_ids), "drawn outside the fragment"
    assert at.session_state[state.FRAGMENT_KEY] == RESULTS
    return run


def test_a_threshold_move_reruns_the_recall_results_alone(parts):
    at = open_recall()
    assert not last_run(at).fragment_ids
    assert parts.outside() == {"sidebar": 1, "header": 1, "pickers": 1, "fetch": 1}
    candidates = parts.fetched[-1]
    before = governed_texts(at)
    assert before == [h.record.content for h in govern(candidates, DEFAULTS).governed]

    at.sidebar.slider(key="threshold").set_value(0.5).run()
    assert_fragment_run(at)
    assert parts.outside() == {"sidebar": 1, "header": 1, "pickers": 1, "fetch": 1}, "a part outside the fragment ran"
    expected = govern(candidates, DEFAULTS.replace(threshold=0.5))
    assert governed_texts(at) == [h.record.content for h in expected.governed] != before
    assert metric(at, "Governed") == len(expected.governed)
    # the settings a page or an export reads follow the knob; the page stays whole, drawn once
    assert at.session_state[state.SETTINGS_KEY].config.threshold == 0.5
    assert at.sidebar.slider(key="threshold").value == 0.5 and len(at.title) == 1
    assert len([m for m in at.metric if m.label == "Governed"]) == 1


def test_every_recall_knob_reruns_the_results_alone_and_they_follow_it(parts):
    at = open_recall()
    candidates = parts.fetched[-1]
    values: dict[str, Any] = {}
    for key, value in (("top_k", 3), ("decay_rate", 0.5), ("window_size", 2), ("alpha", 1.5), ("beta", 0.0),
                       ("gamma", 0.2), ("threshold", 0.2), ("token_budget", 60)):
        widget = at.sidebar.number_input(key=key) if key == "token_budget" else at.sidebar.slider(key=key)
        widget.set_value(value).run()
        assert_fragment_run(at)
        values[key] = value
        expected = govern(candidates, DEFAULTS.replace(**values))
        assert metric(at, "Governed") == len(expected.governed), key
        assert metric(at, "Blind top-k") == len(expected.blind), key
        assert governed_texts(at) == [h.record.content for h in expected.governed], key
    assert metric(at, "Recent window messages") == 2
    assert metric(at, "Memory tokens / budget") <= 60
    assert parts.outside() == {"sidebar": 1, "header": 1, "pickers": 1, "fetch": 1}


def test_a_band_move_and_a_move_on_another_page_rerun_the_whole_script(parts):
    at = open_recall()
    at.sidebar.slider(key="conflict_band").set_value(0.6).run()  # the write path's, not recall's: a full run
    assert not at.exception and not last_run(at).fragment_ids and parts.runs["sidebar"] == 2
    at.switch_page("lab/pages/pollution.py").run()
    assert not at.exception and state.FRAGMENT_KEY not in at.session_state
    at.sidebar.slider(key="threshold").set_value(0.5).run()  # the pollution page has no recall fragment
    assert not at.exception, [e.value for e in at.exception]
    assert not last_run(at).fragment_ids and parts.runs["sidebar"] == 4
    assert at.title[0].value == TEXT["pollution.title"]["en"]
    at.switch_page("lab/pages/recall.py").run()
    sidebar = parts.runs["sidebar"]
    at.sidebar.slider(key="threshold").set_value(0.4).run()  # back on recall: the fragment alone again
    assert_fragment_run(at)
    assert parts.runs["sidebar"] == sidebar


def test_a_move_to_or_from_an_invalid_combination_reruns_the_whole_script(parts):
    """The sidebar says why a combination is invalid, and the page stops: a fragment run would leave the message
    unsaid, or the old one standing."""
    at = open_recall(alpha="0", beta="0")
    at.sidebar.slider(key="gamma").set_value(0.0).run()
    assert not last_run(at).fragment_ids and "weights" in " ".join(e.value for e in at.sidebar.error)
    assert not at.metric, "the page must stop, not compute with an invalid config"
    at.sidebar.slider(key="gamma").set_value(0.5).run()
    assert not last_run(at).fragment_ids and not at.sidebar.error and metric(at, "Governed") >= 0
    at.sidebar.slider(key="gamma").set_value(0.6).run()  # valid before and after: the fragment alone
    assert_fragment_run(at)


# --- a lesson step's target first ------------------------------------------------------------------------------


def walk(node, path: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], Any]]:
    """Every node under ``node`` in page order, with its path."""
    yield path, node
    children = getattr(node, "children", None) or {}
    for index in sorted(children):
        yield from walk(children[index], (*path, index))


def block_key(node) -> str:
    proto = getattr(node, "proto", None)
    return getattr(proto, "id", "") or ""


def target_and_first_metric(at: AppTest):
    """(the target container, its page position, the first metric's page position)."""
    nodes = list(walk(at.main))
    targets = [(i, node) for i, (_, node) in enumerate(nodes) if block_key(node).endswith(f"-{lesson.TARGET_KEY}")]
    metrics = [i for i, (_, node) in enumerate(nodes) if getattr(node, "type", "") == "metric"]
    assert metrics, "no metric on the page"
    assert len(targets) <= 1, f"{len(targets)} target containers"
    return (targets[0][1], targets[0][0], metrics[0]) if targets else (None, None, metrics[0])


def inside(node, kind: str) -> list[Any]:
    return [n for _, n in walk(node) if getattr(n, "type", "") == kind]


def test_a_lesson_steps_target_comes_before_the_metrics_and_holds_what_its_line_points_at():
    models.get("minilm")  # the steps name their model: wait for it as a participant would
    at = open_recall()
    assert target_and_first_metric(at)[0] is None, "outside the lesson the page keeps its order"
    sides = [n for _, n in walk(at.main) if getattr(n, "type", "") == "table"]
    assert len(sides) == 2
    # step 1 (blind): the blind and governed lists first
    at.sidebar.button(key="lesson.step.0").click().run()
    assert not at.exception, [e.value for e in at.exception]
    target, where, first_metric = target_and_first_metric(at)
    assert target is not None and where < first_metric
    assert len(inside(target, "table")) == 2 and not inside(target, "dataframe")
    # step 2 (threshold): the candidate table, its reasons, recency and score, before the chart
    at.button(key="lesson.next").click().run()
    assert not at.exception, [e.value for e in at.exception]
    target, where, first_metric = target_and_first_metric(at)
    assert target is not None and where < first_metric
    (table,) = inside(target, "dataframe")
    assert {"reason", "recency", "score"} <= set(table.value.columns)
    leaves = [getattr(n, "type", "") for _, n in walk(target) if not getattr(n, "children", None)]
    assert leaves[:2] == ["subheader", "dataframe"] and "plotly_chart" in leaves, leaves  # the table, then the chart
    # a threshold move on the step: the fragment alone, the target still first and drawn once
    at.sidebar.slider(key="threshold").set_value(0.4).run()
    assert_fragment_run(at)
    target, where, first_metric = target_and_first_metric(at)
    assert target is not None and where < first_metric and len(inside(target, "dataframe")) == 1
    assert len(inside(at.main, "dataframe")) == 1, "the candidate table is drawn twice"
    # leaving the lesson puts the page back in its order
    at.button(key="lesson.leave").click().run()
    assert target_and_first_metric(at)[0] is None
