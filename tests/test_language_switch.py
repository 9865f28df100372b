"""AppTest: one lab per language, kept (issue 51, item 1).

From an English page the language switch used to give a Chinese UI over the English scenario (e5 at 0.82) and throw
the participant's changes away ("28 changes discarded"); switching back did not bring them back. Now each UI language
keeps its own scenario and model (lab.state: LANGUAGE_CHOICES), and so its own workspace of the lab (lab.engine: one
per scenario language): the switch finds the Chinese lab, switching back finds the English one with its changes.

Real parts: MiniLM and e5 (the lab's defaults for each language), real Chroma in a temporary data folder.
"""

from __future__ import annotations

import pytest

from lab import engine, i18n
from test_app import frame_with, lab_env, open_app  # noqa: F401 - lab_env: autouse

pytestmark = pytest.mark.app

OWN = "The campaign budget is now 350,000 yuan, confirmed by finance today."


def _settings(at):
    return at.session_state["lab.settings"]


def _own_records(at) -> list[str]:
    """The ids of the records the participant's own messages left (the inspector, every user; the page is left there)."""
    at.switch_page("lab/pages/inspector.py").run()
    assert not at.exception, [e.value for e in at.exception]
    frame = frame_with(at, "security_level")
    return sorted(frame[frame["id"].str.startswith("own-")]["id"]), len(frame)


def _discarded(at) -> list[str]:
    """Every "your changes were left behind" notice on the page, in either language."""
    said = {i18n.TEXT["engine.lab_replaced"][lang].split("{")[0] for lang in i18n.LANGUAGES}
    return [i.value for i in at.info if any(i.value.startswith(prefix) for prefix in said)]


def test_the_switch_keeps_each_languages_lab_and_switching_back_finds_the_change():
    at = open_app()  # the recall page in English at the defaults: workshop_en, auto -> MiniLM, facts
    english = _settings(at)
    assert (english.lang, english.scenario_key, english.embedder) == ("en", "workshop_en", "minilm")
    at.text_input(key="add.text").input(OWN)
    next(b for b in at.button if b.proto.is_form_submitter).click().run()
    assert not at.exception, [e.value for e in at.exception]
    own, records = _own_records(at)
    assert own, "the participant's message left no record"

    at.sidebar.selectbox(key="lang").set_value("zh").run()  # the switch alone, as in a browser
    assert not at.exception, [e.value for e in at.exception]
    chinese = _settings(at)
    assert (chinese.lang, chinese.scenario_key, chinese.embedder) == ("zh", "workshop_zh", "e5")
    assert chinese.config.threshold == 0.88, "the threshold is carried to e5's scale for Chinese data"
    assert _discarded(at) == []
    zh_own, zh_records = _own_records(at)
    assert zh_own == [] and zh_records != records  # the Chinese lab's own state: workshop_zh, nothing of the English
    frame = frame_with(at, "security_level")
    assert ("acme", "lina") in set(zip(frame["tenant_id"], frame["user_id"]))

    at.sidebar.selectbox(key="lang").set_value("en").run()
    assert not at.exception, [e.value for e in at.exception]
    back = _settings(at)
    assert (back.lang, back.scenario_key, back.embedder) == ("en", "workshop_en", "minilm")
    assert back.config.threshold == english.config.threshold
    assert _discarded(at) == []
    assert _own_records(at) == (own, records), "switching the language and back lost the participant's message"
    assert engine.room().labs() == {at.session_state["lab.id"]: 2}  # one workspace per language, both kept


def test_each_language_keeps_the_scenario_picked_in_it_and_a_model_picked_by_name_is_shared():
    at = open_app(embedder="lexical")
    at.sidebar.selectbox(key="scenario").set_value("recall_zh").run()  # picked on the English page

    def switch(lang: str) -> tuple[str, str]:
        at.sidebar.selectbox(key="lang").set_value(lang).run()
        assert not at.exception, [e.value for e in at.exception]
        return _settings(at).scenario_key, _settings(at).embedder

    assert switch("zh") == ("workshop_zh", "lexical")
    assert switch("en") == ("recall_zh", "lexical")
    assert switch("zh") == ("workshop_zh", "lexical")
    at.sidebar.button(key="reset_defaults").click().run()  # every setting back to its default, the other language's too
    assert switch("en") == ("workshop_en", "minilm")  # the reset put the model back to auto too
