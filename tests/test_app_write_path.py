"""AppTest: the sidebar's write path (``raw`` vs ``facts``) through the lab, checked against memory.write.ingest directly.

With ``facts``, the pollution page's "stale fact + update" injection must deprecate the old fact: governed
recall drops it (stage ``deprecated``), blind top-k still serves it. Real Chroma; the real MiniLM (the
``minilm`` fixture) and the lexical embedder. Fixtures and helpers come from tests/test_app.py.
"""

from __future__ import annotations

import uuid

import pytest

from memory import MemoryConfig, MemoryManager, StoreLocation, load_scenario
from memory.write.ingest import Ingestor
from memory.core.scenario import shipped_scenarios

from lab import WINDOW_CAPACITY, views
from test_app import frame_with, lab_env, metric, open_app, texts  # noqa: F401 - lab_env: autouse fixture

pytestmark = pytest.mark.app

POLLUTION = "lab/pages/pollution.py"


def _inject_stale(at):
    at.button(key="pollution.inject.stale").click().run()
    assert not at.exception
    rows = frame_with(at, "in_sandbox").set_index("kind").loc[["stale"]].set_index("id")
    old, new = sorted(rows.index)  # inj-<seq>-stale-0 (two months old), inj-<seq>-stale-1 (its update)
    return rows.loc[old], rows.loc[new], old, new


@pytest.mark.parametrize("embedder, stem", [("lexical", "workshop_en"), ("minilm", "workshop_en"),
                                            ("lexical", "seed_demo_zh")])
def test_facts_write_path_deprecates_the_stale_fact(embedder, stem):
    at = open_app(POLLUTION, embedder=embedder, scenario=stem, write_path="facts")
    assert at.session_state["lab.settings"].write_path == "facts"
    old, new, old_id, new_id = _inject_stale(at)
    assert old["deprecated"] and old["stage"] == "deprecated"
    assert old["in_blind"], "blind top-k ignores the lifecycle and still serves the stale fact"
    assert not old["in_governed"], "governed recall must drop the superseded fact"
    assert new["in_governed"] and not new["deprecated"]
    assert "Write path “facts”" in texts(at.caption)
    table = frame_with(at, "kind").set_index("kind")
    assert table.loc["stale", "governed, after"] < table.loc["stale", "blind, after"]
    at.switch_page("lab/pages/inspector.py").run()
    at.selectbox(key="scope").set_value("inactive").run()
    records = frame_with(at, "security_level").set_index("message_id")
    assert records.loc[old_id, "is_deprecated"]
    at.selectbox(key="scope").set_value("active").run()
    active = frame_with(at, "security_level").set_index("message_id")
    assert records.loc[old_id, "superseded_by"] == active.loc[new_id, "memory_id"]
    assert active.loc[new_id, "supersedes"] == records.loc[old_id, "memory_id"] and active.loc[new_id, "version"] == 2
    assert old_id not in set(active.index)


def test_raw_write_path_keeps_both_active():
    at = open_app(POLLUTION, embedder="lexical", write_path="raw")
    assert at.session_state["lab.settings"].write_path == "raw"
    old, new, _, _ = _inject_stale(at)
    assert not old["deprecated"] and old["in_governed"] and new["in_governed"]
    assert "Honest state" in texts(at.caption)


def test_facts_workspace_holds_what_the_ingestor_stores(lexical):
    stem = "workshop_en"
    scenario = load_scenario(shipped_scenarios()[stem])
    manager = MemoryManager(MemoryConfig(window_size=WINDOW_CAPACITY), embedder=lexical, location=StoreLocation(),
                            workspace=f"facts-{uuid.uuid4().hex[:8]}")
    Ingestor(manager).ingest_many(scenario.messages)
    at = open_app("lab/pages/inspector.py", embedder="lexical", write_path="raw")
    at.sidebar.selectbox(key="write_path").set_value("facts").run()
    table = frame_with(at, "security_level")
    assert len(table) == manager.store.count() and len(table) != len(scenario.messages)
    assert table["memory_id"].str.startswith("fact-").all()
    assert set(table["message_id"]) <= {m.id for m in scenario.messages}
    assert int(metric(at, "Deprecated")) == sum(
        r.is_deprecated for o in scenario.owners() for r in manager.records(tenant_id=o[0], user_id=o[1]))
    at.switch_page("lab/pages/recall.py").run()
    assert not at.exception
    shown = frame_with(at, "stage")
    assert set(shown["id"]) <= {m.id for m in scenario.messages}, "the recall page shows message ids"
    q = scenario.queries[0]
    summary, recent = views.window_view(manager, tenant_id=q.tenant_id, user_id=q.user_id, window_size=6)
    assert int(metric(at, "Recent window messages")) == len(recent) == 6, "the Ingestor keeps the window"
    assert int(metric(at, "Summary characters")) == len(summary) > 0
    at.sidebar.selectbox(key="write_path").set_value("raw").run()
    assert len(frame_with(at, "stage")) == sum(1 for m in scenario.messages if (m.tenant_id, m.user_id) ==
                                               (q.tenant_id, q.user_id)), "raw: one record per message again"
    at.sidebar.button(key="reset_defaults").click().run()
    assert at.session_state["lab.settings"].write_path == "facts", "facts is the default write path"
