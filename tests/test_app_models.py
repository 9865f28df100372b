"""AppTest: the sidebar's embedder choice (auto: e5 for Chinese), the threshold carried across model scales,
and the similarity spread on the recall page.

Real parts: the real MiniLM and e5 models, real Chroma in a temporary data folder, the shipped
memory/eval/score_scales.json. Expected thresholds are computed with memory.eval.calibration.map_threshold.
"""

from __future__ import annotations

import os

import pytest

from memory import MemoryConfig
from memory.eval.calibration import load_scales, map_threshold
from memory.embed.embedders import bundled_model_dir
from memory.embed.endpoint import URL_ENV

from lab import i18n, models
from lab.state import DEFAULTS, LAB_MODELS_ENV, embedder_choices
from test_app import frame_with, lab_env, open_app  # noqa: F401 - lab_env: autouse fixture

pytestmark = pytest.mark.app

DEFAULT = DEFAULTS.threshold  # 0.30, on MiniLM's scale


def carried(value: float, source: str, target: str) -> float:
    """The threshold the sidebar shows after carrying ``value`` (2 decimals, like the slider)."""
    return round(map_threshold(value, source, target), 2)


def remap_notices(at, lang: str) -> list[str]:
    start = i18n.TEXT["sidebar.threshold_remapped"][lang].split("{")[0]
    return [str(i.value) for i in at.sidebar.info if str(i.value).startswith(start)]


def notice(lang: str, old: float, source: str, new: float, target: str) -> str:
    return i18n.TEXT["sidebar.threshold_remapped"][lang].format(old=old, source=source, new=new, target=target)


def assert_notice(at, lang: str, threshold_part: str) -> None:
    """One re-map notice: the threshold's sentence first (the dedup bands' sentence follows when they moved too)."""
    [shown] = remap_notices(at, lang)
    assert shown.startswith(threshold_part), shown


def threshold(at) -> float:
    value = at.sidebar.slider(key="threshold").value
    assert at.session_state["lab.settings"].config.threshold == value
    return value


def switch_embedder(at, name: str):
    models.get(name)  # wait for the model like a user would (the page shows a status meanwhile)
    at.selectbox(key="embedder").set_value(name).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


# --- auto, and the threshold carried to its scale ------------------------------------------------------

@pytest.mark.parametrize("params, lang", [({"lang": "zh"}, "zh"), ({"scenario": "seed_demo_zh"}, "en")],
                         ids=["chinese-ui", "chinese-scenario"])
def test_auto_picks_e5_for_chinese_and_carries_the_threshold(params, lang):
    at = open_app(**params)
    expected = carried(DEFAULT, "minilm", "e5@zh")  # Chinese data: e5's scale on Chinese pairs
    assert at.session_state["lab.settings"].embedder == "e5"
    assert at.selectbox(key="embedder").value == "auto"
    assert threshold(at) == expected and expected != DEFAULT
    assert_notice(at, lang, notice(lang, DEFAULT, "minilm", expected, "e5@zh"))
    bands = load_scales(kind="pair_scales")
    config = at.session_state["lab.settings"].config
    for key in ("conflict_band", "duplicate_band"):  # the write path's bands are carried on the pair scale
        default = getattr(MemoryConfig(), key)
        assert getattr(config, key) == round(map_threshold(default, "minilm", "e5", bands), 2) != default
    assert f"{config.conflict_band:.2f}/{config.duplicate_band:.2f}" in remap_notices(at, lang)[0]


def test_an_english_scenario_in_the_chinese_ui_is_on_e5s_pooled_scale():
    """The scale follows the data's language, not the UI's: workshop_en read in Chinese is English data."""
    at = open_app(lang="zh", scenario="workshop_en")
    assert at.session_state["lab.settings"].embedder == "e5"
    assert threshold(at) == carried(DEFAULT, "minilm", "e5") < carried(DEFAULT, "minilm", "e5@zh")


def test_english_default_is_minilm_with_the_default_threshold():
    at = open_app()
    assert at.session_state["lab.settings"].embedder == "minilm"
    assert threshold(at) == DEFAULT
    assert remap_notices(at, "en") == []
    assert i18n.TEXT["sidebar.embedder_auto"]["en"].format(embedder="minilm") in [c.value for c in at.sidebar.caption]


def test_a_links_threshold_is_kept():
    at = open_app(lang="zh", threshold="0.85")
    assert at.session_state["lab.settings"].embedder == "e5"
    assert threshold(at) == 0.85
    assert remap_notices(at, "zh") == []


def test_a_links_model_keeps_the_default_threshold():
    at = open_app(embedder="lexical")
    assert at.session_state["lab.settings"].embedder == "lexical"
    assert threshold(at) == DEFAULT
    assert remap_notices(at, "en") == []


def test_switching_back_restores_the_exact_threshold():
    """A carried value carried back need not be the one it came from (the scales are not exactly invertible at 2
    decimals): switching back without touching the slider restores the 0.30 it came from, and forward again its
    carried value."""
    at = open_app(lang="zh")
    forward = carried(DEFAULT, "minilm", "e5@zh")
    assert threshold(at) == forward
    switch_embedder(at, "minilm")
    assert at.session_state["lab.settings"].embedder == "minilm"
    assert threshold(at) == DEFAULT
    assert_notice(at, "zh", notice("zh", forward, "e5@zh", DEFAULT, "minilm"))
    switch_embedder(at, "e5")
    assert threshold(at) == forward
    assert_notice(at, "zh", notice("zh", DEFAULT, "minilm", forward, "e5@zh"))


def test_a_moved_slider_is_carried_not_restored():
    at = open_app(lang="zh")
    switch_embedder(at, "minilm")
    at.sidebar.slider(key="threshold").set_value(0.4).run()
    switch_embedder(at, "e5")
    assert threshold(at) == carried(0.4, "minilm", "e5@zh") != carried(DEFAULT, "minilm", "e5@zh")


def test_a_model_without_a_scale_keeps_the_number(monkeypatch):
    folder = "st:" + str(bundled_model_dir())
    monkeypatch.setenv(LAB_MODELS_ENV, str(bundled_model_dir()))
    at = open_app(lang="zh")
    assert folder in at.selectbox(key="embedder").options
    before = threshold(at)
    switch_embedder(at, folder)
    assert at.session_state["lab.settings"].embedder == folder
    assert threshold(at) == before
    assert remap_notices(at, "zh") == []


# --- the recall page's similarity spread -------------------------------------------------------------------

def spread_caption(at, lang: str, embedder: str, value: float) -> str:
    """The spread caption computed from the page's own candidate table."""
    sims = frame_with(at, "similarity")["similarity"]
    passing = int((sims >= value).sum())
    assert 0 < passing < len(sims), "the threshold should split this query's candidates"
    return i18n.TEXT["recall.spread"][lang].format(
        embedder=embedder, p10=sims.quantile(0.1), p50=sims.median(), p90=sims.quantile(0.9), top=sims.max(),
        threshold=value, passing=passing, total=len(sims))


@pytest.mark.parametrize("params, lang, embedder", [({}, "en", "minilm"), ({"lang": "zh"}, "zh", "e5")])
def test_recall_page_shows_the_models_spread(params, lang, embedder):
    at = open_app("lab/pages/recall.py", **params)
    captions = [c.value for c in at.caption]
    assert spread_caption(at, lang, embedder, threshold(at)) in captions, captions
    at.sidebar.slider(key="threshold").set_value(round(threshold(at) - 0.03, 2)).run()
    assert spread_caption(at, lang, embedder, threshold(at)) in [c.value for c in at.caption]


# --- the picker's options ----------------------------------------------------------------------------------

def test_embedder_choices_follow_the_instructors_settings():
    assert embedder_choices({}) == ["auto", "minilm", "e5", "lexical"]
    assert embedder_choices({URL_ENV: ""}) == ["auto", "minilm", "e5", "lexical"]
    assert embedder_choices({URL_ENV: "http://127.0.0.1:8000/v1"}) == ["auto", "minilm", "e5", "lexical", "openai"]
    dirs = os.pathsep.join(["/models/a", "", "/models/b"])
    assert embedder_choices({LAB_MODELS_ENV: dirs, URL_ENV: "http://x"})[-3:] == ["openai", "st:/models/a", "st:/models/b"]
