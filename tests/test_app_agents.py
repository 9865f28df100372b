"""The lab's way out (lab/agents.py, on the study page): the sidebar's settings as an operating-point file, a file
applied to the sidebar, and the MCP and LangGraph snippets, in both languages. Real MiniLM and real Chroma (the app's
own), as in tests/test_app.py."""

from __future__ import annotations

import json

import pytest
from test_app import direct, lab_env, metric, open_app  # noqa: F401 - lab_env: the autouse fixture of those tests

from lab import i18n
from memory import MemoryConfig, govern
from memory.eval import OperatingPoint

pytestmark = pytest.mark.app

STUDY = "lab/pages/study.py"
RECALL = "lab/pages/recall.py"


def _uploader(at, lang: str = "en"):
    found = [u for u in at.file_uploader if u.label == i18n.TEXT["agents.apply"][lang]]
    assert found, [u.label for u in at.file_uploader]
    return found[0]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_study_page_offers_the_settings_and_both_snippets(lang):
    at = open_app(STUDY, lang=lang, embedder="lexical", threshold="0.25", top_k="7", write_path="raw")
    titles = [e.proto.label for e in at.get("expander")]
    assert i18n.TEXT["agents.title"][lang] in titles, titles
    code = "\n".join(c.value for c in at.code)
    assert '"--settings",\n' in code and '"operating-point.json"' in code and '"mcp"' in code
    assert "GovernedStore(point, tenant=" in code and "threshold 0.25, top_k 7, raw" in code
    _uploader(at, lang)
    labels = [b.proto.label for b in at.get("download_button")]
    assert i18n.TEXT["agents.download"][lang] in labels, labels


def test_a_settings_file_applied_in_the_lab_gives_the_librarys_governed_recall():
    """A file with MiniLM, threshold 0.45, top_k 3, decay 0, raw: applied on the study page, the sidebar takes it, and
    the recall page then shows what the library computes with that config for the same user and query."""
    point = OperatingPoint("minilm", "raw", "rules", MemoryConfig(threshold=0.45, top_k=3, decay_rate=0.0))
    at = open_app(STUDY)
    _uploader(at).set_value(("point.json", point.dumps("json").encode("utf-8"), "application/json")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("point.json" in s.value for s in at.success), [e.value for e in at.error]
    sidebar = {key: at.sidebar.slider(key=key).value for key in ("threshold", "top_k", "decay_rate")}
    assert sidebar == {"threshold": 0.45, "top_k": 3, "decay_rate": 0.0}
    assert (at.sidebar.selectbox(key="embedder").value, at.sidebar.selectbox(key="write_path").value) == ("minilm", "raw")

    at.switch_page(RECALL).run()
    assert not at.exception, [e.value for e in at.exception]
    _, _, _, cands = direct("minilm", "workshop_en")
    expected = govern(cands, MemoryConfig(threshold=0.45, top_k=3, decay_rate=0.0))
    assert int(metric(at, "Governed")) == len(expected.governed) <= 3


def test_a_bad_settings_file_is_a_message_and_changes_nothing():
    at = open_app(STUDY, embedder="lexical")
    before = at.sidebar.slider(key="threshold").value
    bad = json.dumps({"format": "memory-governance-lab/operating-point", "version": 1, "embedder": "minilm",
                      "config": {"threshold": 3}}).encode("utf-8")
    _uploader(at).set_value(("bad.json", bad, "application/json")).run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert any("bad.json" in e and "threshold" in e for e in errors), errors
    assert at.sidebar.slider(key="threshold").value == before
