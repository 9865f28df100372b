"""The shared sidebar: every knob of MemoryConfig plus the lab's own settings, synced with the URL.

URL sync uses Streamlit's widget binding (``bind="query-params"``, Streamlit >= 1.67):
each sidebar widget's key is its query parameter, a value equal to the default is
left out of the URL, and a shared link (``/?threshold=0.45&top_k=8`` or
``/pollution-view?embedder=lexical&user=acme/bob``) initialises the widgets; an invalid
value is dropped by Streamlit. Bound widgets are drawn by ``app.py``, so their
parameters survive page switches. A bound selectbox keeps its *shown* option in the URL,
so bound selectboxes show plain codes (no ``format_func``). The reset control writes the
defaults through ``st.session_state`` (the only way to change a bound widget from code).

Each UI language keeps its own scenario (:data:`LANGUAGE_CHOICES`), and so its own model while the model is ``auto``:
the language switch puts back the scenario the participant last had in the language entered (its default on a first
visit: workshop_zh, and so e5, in Chinese), so the switch lands on that language's lab and switching back finds the
other one as it was (lab/engine.py keeps one workspace per scenario language). The knobs, a model picked by name, the
write path and the judge are shared (the similarity knobs carried to the model's scale).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import dataclass, replace
from typing import Any, Collection

import streamlit as st
from streamlit.errors import StreamlitAPIException

from memory import (
    DEFAULT_JUDGE,
    EMBEDDER_NAMES,
    ENDPOINT,
    LOCAL_PREFIX,
    MAX_FILE_MB_ENV,
    URL_ENV,
    ConfigError,
    DataFileError,
    InputError,
    MemoryConfig,
    Scenario,
    ScenarioQuery,
    TooManyMessagesError,
    load_scenario,
    max_file_bytes,
    parse_scenario,
    parse_time,
    shipped_scenarios,
    validate_text,
)
from memory.eval import load_scales, map_threshold, scale_name

from . import WINDOW_CAPACITY, WRITE_PATHS
from .i18n import LANGUAGES, explain_leaks, t
from .rooms import COOKIE, valid_lab_id
from .safe import Markup, plain
from .views import leaked_kinds

DEFAULTS = MemoryConfig()
DEFAULT_SCENARIO = "workshop_en"
DEFAULT_SCENARIOS = {"en": DEFAULT_SCENARIO, "zh": "workshop_zh"}
"""The scenario a participant starts on, by UI language: workshop_zh tells the same story in Chinese."""
AUTO = "auto"
"""The embedder choice that follows the language: multilingual e5 for a Chinese scenario or UI, MiniLM otherwise."""
DEFAULT_EMBEDDER = AUTO
DEFAULT_SCALE = "minilm"
"""The model whose similarity scale MemoryConfig's default threshold is on."""
SCALE_KEY = "lab.threshold_scale"
"""The resolved embedder whose scale the threshold slider's value is on (re-mapped when the model changes)."""
RERUN_KEY = "lab.rerun_after_navigation"
"""Set when the sidebar needs another run; app.py reruns after st.navigation, so the page of a deep link is kept."""
REMAP_KEY = "lab.threshold_remap"
"""A re-mapped threshold waiting for the next run (set before the slider is drawn), and what it came from."""
ORIGIN_KEY = "lab.threshold_origin"
"""(scale, value, re-mapped value) of the last re-map: switching back untouched restores the exact value."""
LAB_MODELS_ENV = "MEMORY_LAB_MODEL_DIRS"
"""Instructor's setting: local sentence-transformers folders offered in the embedder picker (os.pathsep-separated)."""
DEFAULT_WRITE_PATH = "facts"
SETTINGS_KEY = "lab.settings"
"""The settings of this session's last run (:func:`settings`): the sidebar's choices as app.py drew them, the knobs'
values as they are."""
FRAGMENT_KEY = "lab.knob_fragment"
"""The fragment (its ``@st.fragment`` key) of the page drawn last that holds everything :data:`FRAGMENT_KNOBS` change,
absent when that page has none (or stopped before it): a move of one of those knobs reruns that fragment alone
(:func:`knob_moved`). Every full run starts without it (:func:`render_sidebar`); the page's fragment sets it again."""
FRAGMENT_KNOBS = frozenset({"threshold", "top_k", "window_size", "decay_rate", "alpha", "beta", "gamma", "token_budget"})
"""The knobs that change only what recall does with the fetched candidates (memory.runtime.recall.govern: the
threshold, the ranking, the budget) and the context built from its result (the window): never the candidates, the
lab or the sidebar. The dedup bands change the write path's verdicts and the Dedup page, and may make the config
invalid against each other: a move of a band reruns the whole script."""
UPLOAD_KEY = "scenario_upload"
UPLOAD_PREFIX = "upload-"
"""Start of ``Settings.scenario_key`` for an uploaded scenario (then the sha1 of its bytes, 12 hex digits)."""
JOB_KEY = "lab.ingest_job"
"""This session's latest background load of a scenario (lab.loading.IngestJob), for pages and tests."""
LAB_ID_KEY = "lab.id"
"""This browser's lab id (lab/rooms.py)."""
COOKIE_SET_KEY = "lab.cookie_set"
RESET_KEY = "lab.reset"
"""Set by "reset lab"; the next open_lab releases the lab."""
COOKIE_SECONDS = 7 * 24 * 3600
"""How long the browser keeps its lab id (the lab itself goes when idle: MEMORY_LAB_IDLE_MINUTES)."""
MAX_UPLOAD_MESSAGES_ENV = "MEMORY_MAX_UPLOAD_MESSAGES"
"""Environment variable: the most messages an uploaded scenario may hold (each is embedded and stored)."""
DEFAULT_MAX_UPLOAD_MESSAGES = 2_000
LANGUAGE_CHOICES = ("scenario",)
"""The sidebar's choices each UI language keeps for itself: its scenario (the model follows it while it is ``auto``). With
lab/engine.py's one workspace per scenario language, switching the UI language and back finds each language's lab as
the participant left it."""
BY_LANGUAGE_KEY = "lab.choices_by_language"
"""UI language -> its :data:`LANGUAGE_CHOICES` as the participant left that language."""
SHOWN_KEY = "lab.choices_shown"
"""(UI language, its :data:`LANGUAGE_CHOICES`) as the sidebar drew them on its last run: a run in another language is
a switch of the language."""


@dataclass(frozen=True)
class Knob:
    """A MemoryConfig field shown in the sidebar."""

    key: str
    """The MemoryConfig field, the widget key and the URL parameter."""
    step: float
    ui_high: float | None = None
    """Upper end shown by the slider, when the full MemoryConfig.range_of is too wide to drag."""
    advanced: bool = False
    """Inside the "advanced" expander."""
    number_input: bool = False
    """A number box instead of a slider (for wide ranges)."""

    @property
    def default(self) -> Any:
        return getattr(DEFAULTS, self.key)

    @property
    def bounds(self) -> tuple[Any, Any]:
        low, high = MemoryConfig.range_of(self.key)
        if self.ui_high is not None:
            high = min(high, self.ui_high)
        if isinstance(self.default, int):
            return int(low), int(high)
        return float(low), float(high)


KNOBS: tuple[Knob, ...] = (
    Knob("threshold", 0.01),
    Knob("top_k", 1, ui_high=50),
    Knob("window_size", 1, ui_high=WINDOW_CAPACITY),
    Knob("decay_rate", 0.005, ui_high=1.0),
    Knob("alpha", 0.05, ui_high=3.0, advanced=True),
    Knob("beta", 0.05, ui_high=3.0, advanced=True),
    Knob("gamma", 0.05, ui_high=3.0, advanced=True),
    Knob("duplicate_band", 0.01, advanced=True),
    Knob("conflict_band", 0.01, advanced=True),
    Knob("token_budget", 10, advanced=True, number_input=True),
)
LAB_JUDGES = ("learned", "rules")
"""The write path's judges the lab offers (memory.write.judges): the learned judge (the default), or the rules."""
CHOICE_DEFAULTS = {"embedder": DEFAULT_EMBEDDER, "scenario": DEFAULT_SCENARIO, "write_path": DEFAULT_WRITE_PATH,
                   "judge": DEFAULT_JUDGE}


@dataclass(frozen=True)
class Settings:
    """What the sidebar says this rerun; pages read it with :func:`settings`."""

    config: MemoryConfig | None
    """The validated config, or None when the combination is invalid (see ``config_error``)."""
    config_error: str | None
    embedder: str
    """The embedder in use (``auto`` resolved): ``minilm``, ``e5``, ``lexical``, ``openai`` or ``st:FOLDER``."""
    scenario: Scenario
    scenario_key: str
    """File stem of a shipped scenario, or ``upload-<sha1>`` of an uploaded one."""
    scenario_error: str | None
    """Why an upload is not used (over a cap or malformed), as shown in the sidebar; the shipped scenario is used."""
    lang: str
    write_path: str = DEFAULT_WRITE_PATH
    """``raw`` (every message stored as-is) or ``facts`` (messages go through memory.write.ingest.Ingestor)."""
    judge: str = DEFAULT_JUDGE
    """The write path's judge and the Dedup page's (:data:`LAB_JUDGES`)."""


@st.cache_data(show_spinner=False)
def load_shipped(path: str) -> Scenario:
    return load_scenario(path)


@st.cache_data(show_spinner=False, max_entries=16)
def parse_upload(data: bytes, name: str, max_messages: int | None = None) -> Scenario:
    return parse_scenario(data, source=name, max_messages=max_messages)


def max_upload_bytes() -> int:
    """The upload cap in bytes: MEMORY_MAX_FILE_MB (memory.core.safefile, the cap of every file the lab reads), and never
    more than Streamlit's own ``server.maxUploadSize`` (.streamlit/config.toml). DataFileError for a bad value."""
    return min(max_file_bytes(), int(st.get_option("server.maxUploadSize") * 1024 * 1024))


def max_upload_messages() -> int:
    """The upload cap in messages: MEMORY_MAX_UPLOAD_MESSAGES (default 2,000); DataFileError for a bad value."""
    raw = os.environ.get(MAX_UPLOAD_MESSAGES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_UPLOAD_MESSAGES
    if not raw.isdigit() or int(raw) < 1:
        raise DataFileError(f"{MAX_UPLOAD_MESSAGES_ENV} must be a whole number of messages (1 or more), "
                            f"got {raw[:40]!r}")
    return int(raw)


def oversized(upload: Any) -> str | None:
    """Why an upload (any uploader's) is over the byte cap, in one line of the UI language, or None. Decided on
    ``upload.size``, before its bytes are taken; DataFileError for a bad MEMORY_MAX_FILE_MB."""
    cap = max_upload_bytes()
    if upload.size <= cap:
        return None
    return t("upload.too_big", name=upload.name, size=upload.size / 1048576, limit=cap / 1048576, env=MAX_FILE_MB_ENV)


def read_upload(upload: Any) -> tuple[Scenario | None, str | None]:
    """(the uploaded scenario, None), or (None, a one-line message in the UI language) when it is over a cap or
    malformed. The byte cap is checked on ``upload.size`` before the bytes are taken."""
    try:
        too_big = oversized(upload)
        if too_big:
            return None, f"{too_big} {t('sidebar.upload_kept')}"
        return parse_upload(upload.getvalue(), upload.name, max_upload_messages()), None
    except TooManyMessagesError as exc:
        return None, t("sidebar.upload_too_many", name=upload.name, count=exc.count, limit=exc.limit,
                       env=MAX_UPLOAD_MESSAGES_ENV)
    except DataFileError as exc:
        return None, t("sidebar.upload_error", error=exc)


def config_from(values: dict[str, Any]) -> tuple[MemoryConfig | None, str | None]:
    """(config, None) for valid sidebar values, else (None, the ConfigError message naming the field)."""
    try:
        return DEFAULTS.replace(**values), None
    except ConfigError as exc:
        return None, str(exc)


def lab_id() -> str:
    """This browser's lab id: the one its cookie names (a reload, a second tab), else a new one (created on first
    use; :func:`remember_lab` puts it in the cookie)."""
    if LAB_ID_KEY not in st.session_state:
        cookie = valid_lab_id(st.context.cookies.get(COOKIE))
        st.session_state[LAB_ID_KEY] = cookie or uuid.uuid4().hex
    return st.session_state[LAB_ID_KEY]


def remember_lab(container: Any) -> None:
    """Once per session, when the browser's cookie does not name this session's lab yet: a script that sets it,
    so a reload (F5) finds the lab again. The cookie holds a random id only (no setting, no data); it is sent
    to this server alone and is never in a link, so a shared link shares settings, not a lab."""
    lab = lab_id()
    if st.context.cookies.get(COOKIE) == lab or st.session_state.get(COOKIE_SET_KEY):
        return
    st.session_state[COOKIE_SET_KEY] = True
    container.html(f"<script>document.cookie = '{COOKIE}={lab}; path=/; max-age={COOKIE_SECONDS}; "
                   "samesite=strict';</script>", unsafe_allow_javascript=True, width="content")


def reset_lab() -> None:
    """on_click of "reset lab": the next page run releases this browser's lab (lab.engine.open_lab), so it
    starts again from the scenario; the old workspace's collection and text file are dropped."""
    st.session_state[RESET_KEY] = True


def default_scenario(lang: str | None = None) -> str:
    """The default scenario for the UI language (this session's when None)."""
    lang = st.session_state.get("lang") if lang is None else lang
    return DEFAULT_SCENARIOS.get(lang or "en", DEFAULT_SCENARIO)


def choice_defaults(lang: str | None = None) -> dict[str, str]:
    """The sidebar's choices' defaults for the UI language."""
    return {**CHOICE_DEFAULTS, "scenario": default_scenario(lang)}


def widget_defaults(lang: str | None = None) -> dict[str, Any]:
    """Every sidebar widget's default value by key (the language excepted: a participant keeps theirs)."""
    return {knob.key: knob.default for knob in KNOBS} | choice_defaults(lang)


def reset_defaults() -> None:
    """on_click of the reset control: every bound widget back to its default (and so out of the URL); the other
    language's scenario too."""
    st.session_state.pop(BY_LANGUAGE_KEY, None)
    for knob in KNOBS:
        st.session_state[knob.key] = knob.default
    for key, value in choice_defaults().items():
        st.session_state[key] = value
    st.session_state[SCALE_KEY] = DEFAULT_SCALE  # the default threshold is on MiniLM's scale


def embedder_choices(environ: Any = os.environ) -> list[str]:
    """The picker's options: auto, the built-in models, and what the instructor configured (an endpoint when
    MEMORY_EMBEDDINGS_URL is set, folders from MEMORY_LAB_MODEL_DIRS). Participants never type a path or URL."""
    extra = [ENDPOINT] if environ.get(URL_ENV) else []
    extra += [LOCAL_PREFIX + d for d in environ.get(LAB_MODELS_ENV, "").split(os.pathsep) if d.strip()]
    return [AUTO, *EMBEDDER_NAMES, *extra]


def resolve_embedder(choice: str, scenario_language: str, lang: str) -> str:
    """``auto`` -> ``e5`` for a Chinese scenario or UI (MiniLM is an English model), else ``minilm``."""
    if choice != AUTO:
        return choice
    return "e5" if "zh" in (scenario_language, lang) else "minilm"


SCALED_KNOBS = {"threshold": "scales", "conflict_band": "pair_scales", "duplicate_band": "pair_scales"}
"""Knobs whose values are similarities of the model in use, and the reference scale each is carried by
(memory.eval.calibration: question against memory for the threshold, fact against fact for the dedup bands)."""


SIDEBAR_PARAMS = ("lang", *(k.key for k in KNOBS), "embedder", "scenario", "write_path", "judge")
"""The sidebar's URL parameters (bound widgets)."""
LINK_CHECKED_KEY = "lab.link_checked"


def _link_values() -> dict[str, str]:
    """On a session's first run: the sidebar parameters its link asked for (empty afterwards)."""
    if st.session_state.get(LINK_CHECKED_KEY):
        return {}
    st.session_state[LINK_CHECKED_KEY] = True
    return {k: st.query_params[k] for k in SIDEBAR_PARAMS if k in st.query_params}


def _is_default(key: str, raw: str) -> bool:
    """Whether a link's value is its widget's default (which Streamlit leaves out of the URL: not a refusal)."""
    knob = next((k for k in KNOBS if k.key == key), None)
    if knob is None:
        return raw == {**choice_defaults(), "lang": next(iter(LANGUAGES))}.get(key)
    try:
        return float(raw) == float(knob.default)
    except ValueError:
        return False


def _report_dropped(container: Any, asked: dict[str, str]) -> None:
    """Say which of the link's values Streamlit refused (it drops an invalid bound value from the URL silently)."""
    dropped = [f"{k}={plain(v[:40])}" for k, v in asked.items() if st.query_params.get(k) != v and not _is_default(k, v)]
    if dropped:  # the names are the lab's own (SIDEBAR_PARAMS); each value is the link's, made literal text
        container.warning(t("sidebar.link_dropped", values=Markup(", ".join(dropped))), icon=":material/link_off:")


def _apply_remap() -> str | None:
    """Before the sliders are drawn: set the re-mapped values waiting from the last run; the notice to show."""
    pending = st.session_state.pop(REMAP_KEY, None)
    if pending is None:
        return None
    changes, source, target = pending
    for key, (_, new) in changes.items():
        st.session_state[key] = new
    old, new = changes.get("threshold", (None, None))
    # the scales' names are keys of the lab's own calibration file (a value is carried between known scales only)
    notice = t("sidebar.threshold_remapped", old=old, source=Markup(source), new=new,
               target=Markup(target)) if old is not None else ""
    if "duplicate_band" in changes or "conflict_band" in changes:
        bands = [changes.get(k, (_current(k),) * 2) for k in ("conflict_band", "duplicate_band")]
        notice += " " + t("sidebar.bands_remapped", old=f"{bands[0][0]:.2f}/{bands[1][0]:.2f}",
                           new=f"{bands[0][1]:.2f}/{bands[1][1]:.2f}")
    return notice.strip()


def _current(key: str) -> float:
    """A knob's value this run (its default before its widget was ever drawn)."""
    return st.session_state.get(key, getattr(DEFAULTS, key))


def _carried(key: str, value: float, source: str, target: str) -> float | None:
    """``value`` of ``key`` on ``target``'s scale (2 decimals, in [0, 1]); None when a model has no reference scale.
    Back on the model a value came from, untouched since, it is the exact value it had there."""
    mapped = map_threshold(value, source, target, load_scales(kind=SCALED_KNOBS[key]))
    if mapped is None:
        return None
    mapped = round(min(max(mapped, 0.0), 1.0), 2)
    origin = st.session_state.get(ORIGIN_KEY, {}).get(key)
    if origin and origin[0] == target and origin[2] == value:
        mapped = origin[1]
    st.session_state.setdefault(ORIGIN_KEY, {})[key] = (source, value, mapped)
    return mapped


def _track_scale(resolved: str) -> None:
    """After the widgets: when the model in use changed, carry the similarity knobs to its scale (next run)."""
    scale = st.session_state.get(SCALE_KEY)
    if scale is None:  # first run: the defaults are on MiniLM's scale; a link's threshold or model is kept
        scale = resolved if "threshold" in st.query_params or "embedder" in st.query_params else DEFAULT_SCALE
    st.session_state[SCALE_KEY] = resolved
    if scale == resolved:
        return
    changes = {}
    for key in SCALED_KNOBS:
        value = _current(key)
        mapped = _carried(key, value, scale, resolved)
        if mapped is not None and mapped != value:  # a brought model has no scale: the number is kept
            changes[key] = (value, mapped)
    if changes:
        st.session_state[REMAP_KEY] = (changes, scale, resolved)
        st.session_state[RERUN_KEY] = True  # app.py reruns once st.navigation knows the page (a deep link keeps it)


def _follow_language(lang: str) -> None:
    """Before the choice widgets are drawn: on a switch of the UI language, the language left keeps its scenario for
    when the participant comes back, and the language entered gets its own back (its default on a first visit:
    workshop_zh, and so e5, for Chinese). A choice set in the same run as the switch (a preset, a link) stays."""
    shown = st.session_state.get(SHOWN_KEY)
    if shown is None or shown[0] == lang:
        return
    left, choices = shown
    kept = st.session_state.setdefault(BY_LANGUAGE_KEY, {})
    kept[left] = choices
    back = kept.get(lang) or {key: choice_defaults(lang)[key] for key in LANGUAGE_CHOICES}
    for key, value in back.items():
        if st.session_state.get(key, choices[key]) == choices[key]:  # not set in this run: it follows the language
            st.session_state[key] = value


def rerun_pending() -> bool:
    """Whether the sidebar asked for a rerun this run (a re-mapped threshold waits for it); clears the ask."""
    return bool(st.session_state.pop(RERUN_KEY, False))


def render_sidebar() -> Settings:
    """Draw the shared sidebar and return (and remember) the settings it holds."""
    sidebar = st.sidebar
    # Bound selectboxes keep the shown option in the URL, so options are plain codes (no format_func).
    asked = _link_values()
    lang = sidebar.selectbox("Language / 语言 (en, zh)", list(LANGUAGES), key="lang", bind="query-params")
    _follow_language(lang)
    sidebar.html(PROJECTOR_STYLE)
    sidebar.header(t("sidebar.title"))
    remapped = _apply_remap()
    if remapped:
        sidebar.info(remapped, icon=":material/straighten:")
    st.session_state.pop(FRAGMENT_KEY, None)  # the page drawn by this run registers its fragment again
    for knob in KNOBS:
        if not knob.advanced:
            _knob(sidebar, knob)
    shipped = shipped_scenarios()
    with sidebar.expander(t("sidebar.advanced")):
        for knob in KNOBS:
            if knob.advanced:
                _knob(st, knob)
        choice = st.selectbox(t("sidebar.embedder"), embedder_choices(), key="embedder", bind="query-params",
                              help=t("sidebar.embedder_help"))
        stem = st.selectbox(
            t("sidebar.scenario"), list(shipped), key="scenario", bind="query-params",
            index=list(shipped).index(default_scenario(lang)) if default_scenario(lang) in shipped else 0,
        )
        _uploader_words(lang)
        upload = st.file_uploader(t("sidebar.upload"), type=["json"], key=UPLOAD_KEY, help=t("sidebar.upload_help"))
        write_path = st.selectbox(t("sidebar.write_path"), WRITE_PATHS, key="write_path", bind="query-params",
                                  index=WRITE_PATHS.index(DEFAULT_WRITE_PATH),
                                  help=t("sidebar.write_path_help"))
        judge = st.selectbox(t("sidebar.judge"), LAB_JUDGES, key="judge", bind="query-params",
                             index=LAB_JUDGES.index(DEFAULT_JUDGE), help=t("sidebar.judge_help"))
    scenario, scenario_key, scenario_error = load_shipped(str(shipped[stem])), stem, None
    if upload is not None:
        uploaded, scenario_error = read_upload(upload)
        if uploaded is None:
            sidebar.error(scenario_error)
        else:
            scenario = uploaded
            scenario_key = UPLOAD_PREFIX + hashlib.sha1(upload.getvalue()).hexdigest()[:12]
            sidebar.success(t("sidebar.upload_ok", name=scenario.name))
    embedder = resolve_embedder(choice, scenario.language, lang)
    _track_scale(scale_name(embedder, scenario.language))
    if choice == AUTO:
        sidebar.caption(t("sidebar.embedder_auto", embedder=embedder))
    current = with_knobs(Settings(None, None, embedder, scenario, scenario_key, scenario_error, lang, write_path, judge))
    if current.config_error:
        sidebar.error(t("sidebar.config_error", error=current.config_error))
    sidebar.button(t("sidebar.reset_defaults"), on_click=reset_defaults, key="reset_defaults", width="stretch",
                   icon=":material/restart_alt:")
    sidebar.button(t("sidebar.reset_lab"), on_click=reset_lab, key="reset_lab", width="stretch",
                   help=t("sidebar.reset_lab_help"), icon=":material/delete_sweep:")
    sidebar.caption(t("sidebar.share"))
    _report_dropped(sidebar, asked)
    remember_lab(sidebar)
    st.session_state[SHOWN_KEY] = (lang, {"scenario": stem})
    st.session_state[SETTINGS_KEY] = current
    return current


UPLOADER_STYLE = """<style>
[data-testid="stFileUploaderDropzone"] button [data-testid="stMarkdownContainer"] p {{ font-size: 0; }}
[data-testid="stFileUploaderDropzone"] button [data-testid="stMarkdownContainer"] p::after
  {{ content: "{browse}"; font-size: 0.875rem; }}
[data-testid="stFileUploaderDropzoneInstructions"] span {{ font-size: 0; }}
[data-testid="stFileUploaderDropzoneInstructions"] span::after {{ content: "{limit}"; font-size: 0.875rem; }}
</style>"""
"""Streamlit words its uploader's button and size note in English whatever the page's language: in another
language the lab draws them in that language instead (the text stays in the DOM, at size 0)."""


PROJECTOR_STYLE = """<style>
@media (max-width: 1280px) {
  [data-testid="stMainBlockContainer"] { padding-left: 1.5rem; padding-right: 1.5rem; }
}
.st-key-recall-context [data-testid="stText"] {
  white-space: pre-wrap; background: rgba(128, 128, 128, 0.1); border-radius: 0.5rem; padding: 1rem;
}
.st-key-recall-context [data-testid="stText"], .st-key-recall-context [data-testid="stText"] * {
  font-family: "Source Code Pro", monospace; font-size: 0.875rem;
}
</style>"""
"""On a projector's 1024x768 (and any window up to 1280 px) Streamlit's wide layout keeps about 5rem of margin on each
side of the page: the lab gives that room to the tables, so the columns a lesson line points at fit the first screen.
The recall page's injected context (plain ``st.text``, never parsed) is drawn as a code block would be."""


def _uploader_words(lang: str) -> None:
    if lang == "en":
        return
    mb = st.get_option("server.maxUploadSize")
    st.html(UPLOADER_STYLE.format(browse=t("upload.browse"), limit=t("upload.limit", mb=mb)))


def _knob(container: Any, knob: Knob) -> Any:
    low, high = knob.bounds
    label = t(f"knob.{knob.key}")
    help_text = t(f"knob.{knob.key}.help")
    if knob.number_input:
        return container.number_input(
            label, min_value=low, max_value=high, value=knob.default, step=int(knob.step), key=knob.key,
            help=help_text, bind="query-params", on_change=knob_moved if knob.key in FRAGMENT_KNOBS else None,
        )
    step = int(knob.step) if isinstance(knob.default, int) else float(knob.step)
    return container.slider(
        label, min_value=low, max_value=high, value=knob.default, step=step, key=knob.key, help=help_text,
        bind="query-params", on_change=knob_moved if knob.key in FRAGMENT_KNOBS else None,
    )


def knob_values() -> dict[str, Any]:
    """Every knob's value now, by MemoryConfig field (session state; its default before its widget was ever drawn)."""
    return {knob.key: st.session_state.get(knob.key, knob.default) for knob in KNOBS}


def with_knobs(current: Settings) -> Settings:
    """``current`` with the config the knobs hold now (or its error): what the sidebar draws on a full run, and what a
    fragment run reads after a knob's move (app.py, and so the sidebar, does not run then)."""
    config, error = config_from(knob_values())
    if (config, error) == (current.config, current.config_error):
        return current
    return replace(current, config=config, config_error=error)


def settings() -> Settings:
    """The settings now: the sidebar's choices as app.py drew them this run or, in a fragment run, on the last full
    run (they change by full runs only), with the knobs' values as they are now (:func:`with_knobs`; remembered)."""
    current = st.session_state[SETTINGS_KEY] = with_knobs(st.session_state[SETTINGS_KEY])
    return current


def knob_moved() -> None:
    """on_change of a knob of :data:`FRAGMENT_KNOBS`: when the page drawn last holds what the knobs change in a
    fragment (:data:`FRAGMENT_KEY`), and the config was and stays valid, that fragment reruns alone: the sidebar, the
    lesson's line and the page's header and pickers stay as drawn (the slider shows its new value and the URL follows
    it in the browser). Otherwise the whole script reruns, as after any other widget: another page, or an invalid
    combination, whose message is the sidebar's."""
    fragment = st.session_state.get(FRAGMENT_KEY)
    drawn = st.session_state.get(SETTINGS_KEY)
    if fragment is None or drawn is None or drawn.config_error or settings().config_error:
        return
    try:
        st.rerun(fragment)
    except StreamlitAPIException:  # not registered in this session's runs (a server restarted under the page)
        return


def require_config(current: Settings) -> MemoryConfig:
    """The valid config, or a message in the page and a stop (an invalid combination is not a traceback)."""
    if current.config is None:
        st.warning(t("page.invalid_config", error=current.config_error))
        st.stop()
    return current.config


# --- page controls shared by several pages (also bound to the URL) ------------------------------

CUSTOM_LABEL = "✎ custom / 自定义"
"""The query picker's option for a typed query (also its URL value: ``?q=✎ custom / 自定义``)."""


@dataclass(frozen=True)
class QueryChoice:
    """The query a page evaluates."""

    text: str
    as_of: float
    """POSIX seconds: the labelled query's as_of, else the lab's "now"."""
    labelled: ScenarioQuery | None
    """The scenario's labelled query, when one was picked (its relevant/forbidden ids label hits)."""


def owner_label(tenant_id: str, user_id: str) -> str:
    """``tenant/user``, with "%" and "/" inside either id written %25 and %2F: one label per owner, so
    ("a/b", "c") and ("a", "b/c") are two entries of a picker, not one."""
    def part(text: str) -> str:
        return text.replace("%", "%25").replace("/", "%2F")

    return f"{part(tenant_id)}/{part(user_id)}"


def owners_by_label(owners: list[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """label (:func:`owner_label`) -> owner, in the owners' order: what every user picker offers."""
    return {owner_label(tenant, user): (tenant, user) for tenant, user in owners}


def pick_owner(owners: list[tuple[str, str]], *, key: str = "user", erased: Collection[str] = ()) -> tuple[str, str] | None:
    """A user picker bound to ``?user=tenant/user`` (:func:`owner_label`); a user the lab does not hold (a
    stale link) gets a message, a calm one when this lab erased them (``erased``: owner labels)."""
    by_label = owners_by_label(owners)
    if not by_label:
        st.info(t("page.no_users"))
        return None
    warn_unknown_user(key, list(by_label), erased=erased)
    label = st.selectbox(t("page.user"), list(by_label), key=key, bind="query-params")
    return by_label[label]


def warn_unknown_user(key: str, options: list[str], *, erased: Collection[str] = ()) -> None:
    """A message when the URL names a user this lab does not hold: a warning for a link from another scenario, a
    plain note for a user this lab erased (``erased``), which is the participant's own action, not a problem.

    Must run before the bound widget is drawn: the widget drops an invalid URL value silently.
    """
    raw = st.query_params.get(key)
    if raw is not None and raw not in options:
        if raw in erased:
            st.caption(t("page.user_erased", user=raw))
        else:
            st.warning(t("page.unknown_user", user=raw, known=", ".join(options)))


def pick_query(queries: list[ScenarioQuery], *, now: float, max_chars: int, key: str = "q") -> QueryChoice | None:
    """The scenario's labelled queries of the user, or a typed one (``?q=<query text>`` / ``?query=...``).

    A bound selectbox keeps its shown option in the URL, so the options are the queries' own
    texts (readable, language-independent links). An empty typed query shows a warning and returns None.
    """
    by_text: dict[str, ScenarioQuery] = {}
    for q in queries:
        by_text.setdefault(q.query, q)
    choice = st.selectbox(t("page.query_pick"), [*by_text, CUSTOM_LABEL], key=key, bind="query-params")
    if choice in by_text:
        picked = by_text[choice]
        as_of = parse_time(picked.as_of, "as_of") if picked.as_of else now
        return QueryChoice(picked.query, as_of, picked)
    text = st.text_input(t("page.query"), key="query", bind="query-params", placeholder=t("page.query_placeholder"))
    if not text.strip():
        st.warning(t("page.empty_query"))
        return None
    try:
        validate_text(text, "query", max_chars=max_chars)
    except InputError as exc:
        st.error(t("page.bad_query", error=exc))
        return None
    return QueryChoice(text.strip(), now, None)


def pick_target(lab) -> tuple[tuple[str, str], QueryChoice] | None:
    """User picker (left) and query picker (right) for a lab.engine.Lab; None (with a message) when unusable."""
    left, right = st.columns([1, 2])
    with left:
        owner = pick_owner(lab.owners(), erased=lab.data.erased_owners)
    if owner is None:
        return None
    with right:
        choice = pick_query(lab.queries_of(owner), now=lab.now(), max_chars=lab.config.max_message_chars)
    return (owner, choice) if choice else None


def explain_pollution(result, kinds, write_path: str, *, polluted_blind: int) -> None:
    """Next to the numbers: why governed recall still holds pollution, kind by kind (a warning when it is not less
    polluted than blind top-k, a caption otherwise; nothing when it is clean)."""
    leaked = leaked_kinds(result, kinds)
    if not leaked:
        return
    polluted_governed = sum(1 for h in result.governed if kinds(h.record))
    lines = "\n".join(f"- {line}" for line in explain_leaks(leaked, write_path))
    if polluted_governed >= polluted_blind:
        st.warning(f"{t('why.worse')}\n\n{lines}", icon=":material/info:")
    else:
        st.caption(f"{t('why.title')}\n\n{lines}")
