"""The guided lesson and the presets: one click sets the page, the sidebar and the pickers, one line says what to look at.

Each step is a :class:`Step`: a page of ``lab.PAGES`` and the widget values it needs (sidebar knobs and choices,
the user and query pickers). A click stores the values in the session (the bound widgets then put them in the
URL, so a step's page is also a link to share) and remembers the step, and ``app.py`` opens the step's page.
The step's line stays above every page until the participant leaves the lesson.

What each line claims is measured, not hoped: tests/test_lesson.py runs every step and checks its claim on the
default scenario of each UI language (English: workshop_en with MiniLM, acme/alice, "What is the campaign budget
now?"; Chinese: workshop_zh with e5 at its Chinese scale, acme/lina, "推广活动现在还剩多少钱可以花？"). Steps 1 to 3 use the ``raw``
write path on purpose: they show what recall-time governance can and cannot do (a threshold drops weak matches;
decay only re-orders; neither retires a stale fact), step 4 switches to the atomic-fact write path (the lab's
default), which does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from memory.eval import DEFAULT_THRESHOLDS, load_scales, map_threshold, scale_name

from . import PAGES
from .i18n import t
from .state import DEFAULT_SCALE, ORIGIN_KEY, REMAP_KEY, SCALE_KEY

STEP_KEY = "lab.lesson_step"
"""The lesson step the participant is on (an index into STEPS), absent outside the lesson."""
STEP_PARAM = "lesson"
"""The URL parameter naming the step (1-based): a reload, or a link an instructor shares, keeps the step's line."""
GOTO_KEY = "lab.goto"
"""A page url path to open on this run (set by a step's or a preset's click; app.py switches to it)."""

USER, QUERY = "acme/alice", "What is the campaign budget now?"
"""The first screen's user and labelled query: a budget that was cut from 500,000 to 300,000 yuan."""
USER_ZH, QUERY_ZH = "acme/lina", "推广活动现在还剩多少钱可以花？"
"""The same story in workshop_zh: a budget cut from 50万 to 30万."""
FIRST_SCREEN = {"scenario": "workshop_en", "embedder": "minilm", "user": USER, "q": QUERY}
"""Steps name their model: what a step's line claims was measured with it (``auto`` would pick e5 in Chinese)."""
FIRST_SCREENS = {"en": FIRST_SCREEN,
                 "zh": {"scenario": "workshop_zh", "embedder": "e5", "user": USER_ZH, "q": QUERY_ZH}}
"""The lesson runs on the scenario of the UI's language, with the model meant for it."""
ERASED_USER = {"en": "globex/carol", "zh": "globex/chenjing"}


@dataclass(frozen=True)
class Step:
    """One click of the lesson: ``lesson.<key>.title`` and ``lesson.<key>.look`` in lab/locales/<lang>.json."""

    key: str
    page: str
    """A url path of lab.PAGES."""
    values: dict[str, Any] = field(default_factory=dict)
    """Widget key -> value; sidebar values not named here go back to their defaults."""
    scale: str = DEFAULT_SCALE
    """The similarity scale the step's threshold is on (its model's, for its scenario's language)."""
    target: str = ""
    """The section of the page the step's line points at (:data:`TARGETS`): the page draws it first, in the
    container keyed :data:`TARGET_KEY`, so it is on a projector's first screen (1024x768, the sidebar open)."""


TARGET_KEY = "lesson-target"
"""The key of the container holding a step's target (CSS class ``st-key-lesson-target``: the browser test's anchor)."""
TARGETS = {"blind": "sides", "threshold": "candidates", "decay": "candidates", "write_path": "sides",
           "pollution": "compare", "erasure": "report", "study": "curves"}
"""Step key -> the section of its page the step's line points at: the blind and governed lists and the candidate
table (recall), the injection buttons with the before and after counts (pollution), the canary and erase buttons with
the report (erasure), the precision and recall curves with the recommended point (study)."""
FIRST_SCREEN_HEIGHT = 768
"""A projector's first screen (1024x768 with the sidebar open): a step's target starts inside it with at least
:data:`TARGET_SHOWN` pixels of it (or all of it, when shorter) above its bottom edge (tests/test_browser.py)."""
TARGET_SHOWN = 240
"""Pixels of a step's target the first screen shows at least: a table's header and first rows, a row of counts with
what the page says about them, the buttons that change them."""
LESSON_STYLE = """<style>
@media (max-height: 900px) { [data-testid="stMainBlockContainer"] { padding-top: 4rem; } }
</style>"""
"""On a lesson step in a short window (a projector's 768 pixels): Streamlit's 6rem above the page shrinks to 4rem,
just under its toolbar, so 32 more pixels of the step's target are on the first screen."""


def _threshold(value: float, lang: str) -> float:
    """A threshold given on MiniLM's scale, on the scale of the lesson's model for ``lang`` (2 decimals)."""
    if lang == "en":
        return value
    carried = map_threshold(value, DEFAULT_SCALE, scale_name("e5", lang))
    return value if carried is None else round(carried, 2)


STUDY_THRESHOLDS_KEY = "study.thresholds"
"""The study page's threshold range (a ``start:stop:step`` text field), which the study step sets."""


def study_thresholds(lang: str) -> str:
    """The study step's threshold sweep for ``lang``: the study's default on MiniLM's scale; on the scale of the
    lesson's model for another language, that scale from its lowest to its highest reference similarity in steps of
    0.01 (e5 in Chinese: 0.79:0.97:0.01). The default 0.1:0.9 put the Chinese recommendation at 0.9, the sweep's top
    edge, over curves flat below 0.8, where all of e5's similarities lie."""
    if lang not in FIRST_SCREENS or lang == "en":
        return DEFAULT_THRESHOLDS
    scale = load_scales().get(scale_name(FIRST_SCREENS[lang]["embedder"], lang))
    if scale is None:
        return DEFAULT_THRESHOLDS
    return f"{math.floor(float(scale[0]) * 100) / 100:.2f}:{math.ceil(float(scale[-1]) * 100) / 100:.2f}:0.01"


def steps(lang: str = "en") -> tuple[Step, ...]:
    """The lesson's steps in the UI language ``lang``: its scenario, model and thresholds on that model's scale."""
    lang = lang if lang in FIRST_SCREENS else "en"
    first = FIRST_SCREENS[lang]
    scale = scale_name(first["embedder"], lang) if lang != "en" else DEFAULT_SCALE
    cut = _threshold(0.3, lang)

    def step(key: str, page: str, values: dict[str, Any]) -> Step:
        return Step(key, page, values, scale, TARGETS[key])

    return (
        step("blind", "recall-view", {**first, "write_path": "raw", "threshold": 0.0, "top_k": 10}),
        step("threshold", "recall-view", {**first, "write_path": "raw", "threshold": cut, "top_k": 10}),
        step("decay", "recall-view", {**first, "write_path": "raw", "threshold": cut, "top_k": 10, "decay_rate": 0.5}),
        step("write_path", "recall-view", {**first, "write_path": "facts", "threshold": cut, "top_k": 10}),
        # Every step that names the model names its threshold too: a sidebar default is on MiniLM's scale, and the
        # step's scale is what the page then reads it on (no re-map), so 0.30 would be e5's noise floor in Chinese.
        step("pollution", "pollution-view", {**first, "write_path": "facts", "threshold": cut}),
        step("erasure", "erasure-view", {"scenario": first["scenario"], "embedder": first["embedder"],
                                         "user": ERASED_USER[lang], "write_path": "facts", "threshold": cut}),
        # the lesson's scenario, dense scores (its model's) and a sweep over that model's scale
        step("study", "study-view", {"dataset": first["scenario"], "mode": "dense",
                                     STUDY_THRESHOLDS_KEY: study_thresholds(lang)}),
    )


def presets(lang: str = "en") -> dict[str, Step]:
    """The seed article's demo (the Chinese column, lexical scoring, its own weights) and a strict configuration
    on the lesson's scenario of ``lang``."""
    lang = lang if lang in FIRST_SCREENS else "en"
    first = FIRST_SCREENS[lang]
    return {
        "seed": Step("seed", "recall-view", {"lang": "zh", "scenario": "seed_demo_zh", "embedder": "lexical",
                                             "window_size": 4, "threshold": 0.22, "top_k": 8, "alpha": 1.0,
                                             "beta": 0.0, "gamma": 0.0}, "lexical"),
        "strict": Step("strict", "recall-view", {**first, "threshold": _threshold(0.45, lang), "top_k": 3,
                                                 "decay_rate": 0.1}, steps(lang)[0].scale),
    }


STEPS: tuple[Step, ...] = steps("en")
PRESETS: dict[str, Step] = presets("en")


def _lang() -> str:
    return st.session_state.get("lang") or "en"


def _apply(step: Step, defaults: dict[str, Any]) -> None:
    """on_click: every sidebar value back to its default, then the step's own values; open its page next.
    The similarity knobs are on the step's model's scale (the defaults on MiniLM's): nothing is re-mapped."""
    for key, value in {**defaults, **step.values}.items():
        st.session_state[key] = value
    embedder = step.values.get("embedder", "auto")
    st.session_state[SCALE_KEY] = DEFAULT_SCALE if embedder == "auto" else step.scale
    st.session_state.pop(REMAP_KEY, None)
    st.session_state.pop(ORIGIN_KEY, None)
    st.session_state[GOTO_KEY] = step.page


def start(index: int, defaults: dict[str, Any]) -> None:
    """on_click of a step: go to step ``index``."""
    st.session_state[STEP_KEY] = index
    _apply(steps(_lang())[index], defaults)


def preset(name: str, defaults: dict[str, Any]) -> None:
    """on_click of a preset: its settings; leaves the lesson."""
    st.session_state.pop(STEP_KEY, None)
    _apply(presets(_lang())[name], defaults)


def leave() -> None:
    st.session_state.pop(STEP_KEY, None)
    st.query_params.pop(STEP_PARAM, None)


def _step_from_url() -> int | None:
    """The step the URL names (``?lesson=2``; a session's first run), or None; anything else is ignored."""
    raw = st.query_params.get(STEP_PARAM, "")
    return int(raw) - 1 if raw.isdigit() and 1 <= int(raw) <= len(STEPS) else None


def target_on(page: str) -> str | None:
    """The section of ``page`` (a url path of lab.PAGES) the current lesson step points at, or None when the
    participant is not on a lesson step whose page is ``page``."""
    current = st.session_state.get(STEP_KEY)
    if current is None or not 0 <= current < len(STEPS):
        return None
    step = steps(_lang())[current]
    return step.target if step.page == page else None


def target_box(page: str, section: str) -> Any | None:
    """Where ``page`` (a url path of lab.PAGES) draws ``section`` when the current step points at it: a container keyed
    :data:`TARGET_KEY` at this point of the page (the page draws the section first, right under the lesson's line and
    its own pickers); None otherwise, and the page keeps its own order."""
    return st.container(key=TARGET_KEY) if target_on(page) == section else None


def goto() -> str | None:
    """The page a click asked for on this run (once), as a url path of lab.PAGES."""
    page = st.session_state.pop(GOTO_KEY, None)
    return page if page in {p.url_path for p in PAGES} else None


def render_sidebar(container: Any, defaults: dict[str, Any]) -> None:
    """The lesson's steps and the presets, in an expander of the sidebar."""
    current = st.session_state.get(STEP_KEY)
    with container.expander(t("lesson.title"), expanded=current is not None, icon=":material/school:"):
        for i, step in enumerate(steps(_lang())):
            st.button(f"{i + 1}. {t(f'lesson.{step.key}.title')}", key=f"lesson.step.{i}", on_click=start,
                      args=(i, defaults), width="stretch", type="primary" if i == current else "secondary")
        st.caption(t("lesson.presets"))
        for name, shown in presets(_lang()).items():
            st.button(t(f"lesson.preset.{name}"), key=f"lesson.preset.{name}", on_click=preset, args=(name, defaults),
                      width="stretch", help=t(f"lesson.preset.{name}.help", threshold=shown.values.get("threshold")))


def render_banner(defaults: dict[str, Any]) -> None:
    """Above the page: the current step's line on what to look at, with the previous and next steps."""
    if STEP_KEY not in st.session_state and (linked := _step_from_url()) is not None:
        st.session_state[STEP_KEY] = linked  # the link carries the step's settings already
    current = st.session_state.get(STEP_KEY)
    if current is None or not 0 <= current < len(STEPS):
        return
    st.query_params[STEP_PARAM] = str(current + 1)
    st.sidebar.html(LESSON_STYLE)  # in the sidebar: a style element in the page's block would take a row's gap
    step = steps(_lang())[current]
    with st.container(border=True):
        st.markdown(f"**{t('lesson.step', n=current + 1, total=len(STEPS))} · {t(f'lesson.{step.key}.title')}**  \n"
                    f"{t(f'lesson.{step.key}.look')}")
        back, forward, done = st.columns(3)
        if current > 0:
            back.button(t("lesson.previous"), key="lesson.previous", on_click=start, args=(current - 1, defaults),
                        icon=":material/arrow_back:", width="stretch")
        if current + 1 < len(STEPS):
            forward.button(t("lesson.next"), key="lesson.next", on_click=start, args=(current + 1, defaults),
                           icon=":material/arrow_forward:", width="stretch", type="primary")
        done.button(t("lesson.leave"), key="lesson.leave", on_click=leave, icon=":material/close:", width="stretch")
