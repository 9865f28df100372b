"""The settings file is true (issue 51): it names the data a study actually read (as the participant knows it, with the
SHA-256 of the bytes studied), carries the study's figures for its point, and every field of it is honoured where it is
loaded: ``python -m memory recall --settings`` (model, write path, judge and every config value) gives the governed
list the library and the lab give for the same settings and query, and so do the MCP server and the LangGraph store.

Real parts: the lexical embedder where the model does not matter (the file's checks and the studies), the real MiniLM
(loaded once per process) where the write path and the recall are the subject, real Chroma (in memory or in temporary
folders), the lab through AppTest (tests/test_app.py's helpers), the CLI in this process (tests/cli_inprocess.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cli_inprocess import run_cli
from optional import require_adapter_package

from memory import DataFileError, MemoryConfig, Message, StoreLocation, govern, iso, load_scenario
from memory.core.scenario import shipped_scenarios
from memory.eval import (
    OperatingPoint, content_hash, load_operating_point, load_studied, operating_point_from_study,
    parse_operating_point, run_study, study_provenance,
)
from memory.eval.conformance import plain_judge
from memory.write.adjudicate import judge_reason

ROOT = Path(__file__).resolve().parent.parent
WORKSHOP = shipped_scenarios()["workshop_en"]
TENANT, USER = "acme", "alice"
QUERY, AS_OF = "What is the campaign budget now?", "2026-06-16T09:00:00Z"  # alice's first labelled query (q1)
SETTINGS = MemoryConfig(threshold=0.35, top_k=3, decay_rate=0.02, window_size=4, token_budget=150, alpha=0.6,
                        beta=0.3, gamma=0.1)
"""Every value the sidebar offers, none at its default (the dedup bands stay MiniLM's: the lab writes with those)."""
STUDY_RANGES = {"thresholds": "0.1:0.5:0.05", "top_ks": "3,5"}


def _file_with(tmp_path: Path, name: str) -> Path:
    """workshop_en's scenario under another file name and another scenario name: a participant's own file."""
    data = json.loads(WORKSHOP.read_text(encoding="utf-8"))
    data["name"] = "our-team-chats"
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def _figures(row) -> dict[str, float]:
    return {name: round(getattr(row, name), 6) for name in ("precision", "recall", "f1", "avg_injected")}


# --- the file: older files load, bad provenance is one line --------------------------------------------------------

def test_a_file_written_before_the_provenance_grew_still_loads():
    head = {"format": "memory-governance-lab/operating-point", "version": 1, "embedder": "minilm"}
    older = parse_operating_point(json.dumps(head | {"provenance": {"dataset": "workshop-en", "rule": "f1",
                                                                     "recall": 0.5, "questions": 16}}))
    assert dict(older.provenance) == {"dataset": "workshop-en", "rule": "f1", "recall": 0.5, "questions": 16}
    assert parse_operating_point(json.dumps(head)).provenance == {}
    toml = parse_operating_point('format = "memory-governance-lab/operating-point"\nversion = 1\nembedder = "e5"\n',
                                 toml=True)
    assert (toml.embedder, dict(toml.provenance)) == ("e5", {})


GOOD = OperatingPoint("minilm", "facts", "rules", MemoryConfig(threshold=0.4),
                      {"dataset": "mine.json", "sha256": "a" * 64, "embedder": "minilm", "mode": "dense",
                       "unit": "turns", "precision": 0.5, "recall": 0.75, "f1": 0.6, "avg_injected": 2.5,
                       "token_budget": 400, "questions": 12})


@pytest.mark.parametrize("field, value, words", [
    ("sha256", "abc", "64 lowercase hex digits"),
    ("sha256", "A" * 64, "64 lowercase hex digits"),
    ("precision", 1.5, "a share in [0, 1]"),
    ("f1", -0.1, "a share in [0, 1]"),
    ("avg_injected", -1, "0 or more"),
    ("questions", 10**30, "expected a count"),
    ("mode", "dense-ish", "one of dense, lexical, hybrid"),
    ("unit", "rows", "one of turns, facts"),
    ("embedder", "e5", "measured with 'e5', but the point's threshold is on 'minilm''s scale"),
    ("recall", "high", "expected a number"),
])
def test_a_bad_provenance_value_is_one_line_naming_the_file_and_field(tmp_path, field, value, words):
    data = json.loads(GOOD.dumps("json"))
    data["provenance"][field] = value
    path = tmp_path / "point.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataFileError) as caught:
        load_operating_point(path)
    message = str(caught.value)
    assert message.startswith(f"point.json: provenance.{field}: ") and words in message, message
    assert "\n" not in message and str(tmp_path) not in message, message


def test_a_point_round_trips_its_provenance_through_both_formats(tmp_path):
    for fmt in ("json", "toml"):
        assert load_operating_point(GOOD.save(tmp_path / f"point.{fmt}")) == GOOD


# --- a study's file names what it read, with its figures ------------------------------------------------------------

def test_a_study_names_the_file_it_read_with_its_hash_and_the_points_figures(tmp_path):
    path = _file_with(tmp_path, "team-chats.json")
    data, name, digest = load_studied(str(path))
    assert (name, digest) == ("team-chats.json", hashlib.sha256(path.read_bytes()).hexdigest())
    assert load_studied("workshop_en")[1:] == ("workshop-en", content_hash(WORKSHOP.read_bytes()))
    result = run_study(data, mode="dense", embedder="lexical", **STUDY_RANGES)
    row = result.recommended.row

    point = operating_point_from_study(result, dataset=name, sha256=digest, write_path="raw")
    said = dict(point.provenance)
    assert {k: said[k] for k in ("dataset", "sha256", "embedder", "mode", "unit", "rule", "questions")} == {
        "dataset": "team-chats.json", "sha256": digest, "embedder": "lexical", "mode": "dense", "unit": "turns",
        "rule": "f1", "questions": result.questions}
    assert {k: said[k] for k in ("precision", "recall", "f1", "avg_injected")} == _figures(row)
    assert said["token_budget"] == result.token_budget and "note" not in said
    assert (point.config.threshold, point.config.top_k, point.config.decay_rate) == (row.threshold, row.top_k, 0.0)
    assert load_operating_point(point.save(tmp_path / "point.json")) == point

    other = next(r for r in result.sweep if r.setting != row.setting)  # another row: its own figures, no rule
    config = MemoryConfig().replace(**other.setting)
    assert {k: study_provenance(result, config)[k] for k in ("precision", "recall", "f1", "avg_injected")} == \
        _figures(other)
    assert "rule" not in study_provenance(result, config)
    for unmeasured in (config.replace(threshold=0.123), config.replace(alpha=0.5)):
        said = study_provenance(result, unmeasured, dataset=name, sha256=digest)
        assert not {"precision", "recall", "f1", "avg_injected", "rule"} & set(said) and "no figures" in said["note"]
        assert (said["dataset"], said["sha256"]) == (name, digest)


@pytest.mark.process
def test_cli_study_export_names_the_file_and_its_hash_and_carries_the_printed_figures(tmp_path):
    path = _file_with(tmp_path, "team-chats.json")
    out = tmp_path / "point.toml"
    done = run_cli("study", "--dataset", str(path), "--embedder", "lexical", "--threshold", "0.1:0.5:0.05",
                   "--top-k", "3,5", "--token-budget", "300", "--export-point", str(out), "--json")
    assert done.returncode == 0, done.stderr
    chosen = json.loads(done.stdout)["recommended"]
    point = load_operating_point(out)
    said = dict(point.provenance)
    assert (said["dataset"], said["sha256"]) == ("team-chats.json", hashlib.sha256(path.read_bytes()).hexdigest())
    for name in ("precision", "recall", "f1", "avg_injected"):
        assert said[name] == pytest.approx(chosen[name], abs=1e-6), name
    assert said["token_budget"] == point.config.token_budget == 300, "the figures' budget is the point's"
    assert str(tmp_path) not in out.read_text(encoding="utf-8"), "no folder of the machine in the file"


# --- the lab's export after a study --------------------------------------------------------------------------------

@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A fresh data folder and fresh Streamlit caches for a lab test (as tests/test_app.py's ``lab_env``)."""
    import streamlit as st

    monkeypatch.setenv("MEMORY_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MEMORY_CHROMA_HOST", raising=False)
    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def lab_downloads(lab, monkeypatch):
    """file name -> the bytes the page last offered on a download button (what a participant's click receives)."""
    from streamlit.runtime.media_file_manager import MediaFileManager

    offered: dict[str, bytes] = {}
    original = MediaFileManager.add

    def add(self, path_or_data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        if file_name and isinstance(path_or_data, bytes):
            offered[file_name] = path_or_data
        return original(self, path_or_data, mimetype, coordinates, file_name, is_for_static_download)

    monkeypatch.setattr(MediaFileManager, "add", add)
    return offered


@pytest.mark.app
@pytest.mark.parametrize("where", ["study page", "sidebar"])
def test_a_study_on_an_uploaded_file_exports_its_name_hash_and_figures(tmp_path, lab_downloads, where):
    """Upload a scenario (on the study page's own uploader, or as the sidebar's scenario), run the study, apply its
    recommendation: the settings file names the uploaded file and its hash, and carries the figures the page shows.
    Before the recommendation is applied, the sidebar's setting is not one the study measured: no figures."""
    from test_app import metric, open_app

    path = _file_with(tmp_path, "team-chats.json")
    raw = path.read_bytes()
    at = open_app("lab/pages/study.py", embedder="lexical", write_path="raw")
    if where == "sidebar":
        at.sidebar.file_uploader(key="scenario_upload").set_value((path.name, raw, "application/json")).run()
        at.selectbox(key="dataset").set_value("uploaded-scenario").run()  # the study page's name for it
    else:
        at.file_uploader(key="study.own").set_value((path.name, raw, "application/json")).run()
    at.text_input(key="study.thresholds").input(STUDY_RANGES["thresholds"])
    at.text_input(key="study.top_ks").input(STUDY_RANGES["top_ks"]).run()
    at.button(key="study.run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    expected = run_study(load_studied(str(path))[0], mode="dense", embedder="lexical", **STUDY_RANGES)
    row = expected.recommended.row
    assert float(metric(at, "F1")) == pytest.approx(row.f1, abs=5e-4), "the page shows the study's figures"

    before = json.loads(lab_downloads["operating-point.json"])["provenance"]
    assert (before["dataset"], before["sha256"]) == ("team-chats.json", hashlib.sha256(raw).hexdigest())
    assert "f1" not in before and "no figures" in before["note"], before  # the sidebar's decay 0.05 was not swept

    at.button(key="study.apply").click().run()
    assert not at.exception, [e.value for e in at.exception]
    point = parse_operating_point(lab_downloads["operating-point.json"], source="operating-point.json")
    said = dict(point.provenance)
    assert (said["dataset"], said["sha256"], said["embedder"]) == (
        "team-chats.json", hashlib.sha256(raw).hexdigest(), "lexical")
    assert {k: said[k] for k in ("precision", "recall", "f1", "avg_injected")} == _figures(row)
    assert (said["rule"], said["questions"]) == ("f1", expected.questions)
    assert (point.config.threshold, point.config.top_k, point.config.decay_rate) == (
        row.threshold, row.top_k, row.decay_rate)
    assert "workshop" not in json.dumps(said), said


# --- every field honoured: the CLI, the library, the lab --------------------------------------------------------------

def _library(point: OperatingPoint, minilm, folder: Path, *, one_by_one: bool = False,
             messages: list[Message] | None = None, as_of=AS_OF, full_pool: bool = True) -> list[str]:
    """The governed texts the library gives with ``point`` for alice's budget query: the scenario written through the
    point's write path and judge, then recalled with its config."""
    manager, ingestor = point.open(location=StoreLocation(data_dir=folder), embedder=minilm)
    written = list(load_scenario(WORKSHOP).messages) if messages is None else messages
    if ingestor is None:
        manager.add_many(written)
    elif one_by_one:
        for m in written:
            ingestor.ingest_many([m])
    else:
        ingestor.ingest_many(written)
    owner = {"tenant_id": TENANT, "user_id": USER}
    if full_pool:  # every memory of the user a candidate, as the lab fetches them
        cands = manager.candidates(QUERY, **owner, as_of=as_of, pool=manager.count(**owner))
        result = govern(cands, point.config, token_counter=manager.token_counter)
    else:
        result = manager.retrieve(QUERY, **owner, as_of=as_of, reinforce=False)
    if ingestor is not None:
        ingestor.close()
    return [h.record.content for h in result.governed]


def _cli(settings: Path, *options: str) -> dict:
    done = run_cli("recall", "--scenario", str(WORKSHOP), "--tenant", TENANT, "--user", USER, "--query", QUERY,
                   "--as-of", AS_OF, "--settings", str(settings), *options, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.process
@pytest.mark.app
def test_recall_settings_gives_the_labs_governed_result_for_the_same_query(tmp_path, minilm, lab):
    """A file with every sidebar value changed, the facts write path and the rules judge: the CLI's governed list is
    the library's, and the lab's recall page shows the same after the file is applied on the study page."""
    from test_app import open_app

    from lab import i18n

    point = OperatingPoint("minilm", "facts", "rules", SETTINGS)
    settings = point.save(tmp_path / "point.json")
    cli = _cli(settings)
    assert (cli["config"], cli["write_path"], cli["judge"], cli["embedder"]) == (
        SETTINGS.to_dict(), "facts", "rules", "minilm")
    governed = [h["content"] for h in cli["governed"]]
    assert governed == _library(point, minilm, tmp_path / "library") == _library(
        point, minilm, tmp_path / "retrieve", full_pool=False), "the CLI is the library"
    assert governed and "The campaign budget is 500,000 yuan." not in governed, "the stale budget is not served"

    at = open_app("lab/pages/study.py", write_path="raw")  # the file brings the facts write path and its judge
    assert at.session_state["lab.settings"].judge == "learned" != point.judge
    uploader = next(u for u in at.file_uploader if u.label == i18n.TEXT["agents.apply"]["en"])
    uploader.set_value((settings.name, settings.read_bytes(), "application/json")).run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page("lab/pages/recall.py").run()
    assert not at.exception, [e.value for e in at.exception]
    current = at.session_state["lab.settings"]
    assert (current.config, current.embedder, current.write_path, current.judge) == (
        SETTINGS, "minilm", "facts", "rules")
    assert at.selectbox(key="q").value == QUERY
    lab = at.table[1].value  # the recall page's two lists: blind, then governed
    assert lab.iloc[:, 0].tolist() == governed, "the lab shows the CLI's governed list"


@pytest.mark.process
def test_the_files_write_path_and_judge_are_what_writes_and_the_options_override_them(tmp_path, minilm):
    """raw serves the stale 500,000 budget; the plain bands keep the stale June 30 deadline (they read 'moved to July
    15' as new); the rules supersede both. Each file's governed list is the library's with that write path and judge,
    and --write-path / --judge on the command line override the file's."""
    stale_budget, stale_deadline = "The campaign budget is 500,000 yuan.", "The summer campaign launch deadline is June 30."
    seen = {}
    for write_path, judge in (("raw", "rules"), ("facts", "bands"), ("facts", "rules")):
        point = OperatingPoint("minilm", write_path, judge, SETTINGS)
        out = _cli(point.save(tmp_path / f"{write_path}-{judge}.json"))
        seen[(write_path, judge)] = [h["content"] for h in out["governed"]]
        assert seen[(write_path, judge)] == _library(point, minilm, tmp_path / f"lib-{write_path}-{judge}")
    assert stale_budget in seen[("raw", "rules")]
    assert stale_deadline in seen[("facts", "bands")] and stale_budget not in seen[("facts", "bands")]
    assert not {stale_budget, stale_deadline} & set(seen[("facts", "rules")])
    overridden = _cli(tmp_path / "raw-rules.json", "--write-path", "facts", "--judge", "bands")
    assert (overridden["write_path"], overridden["judge"]) == ("facts", "bands")
    assert [h["content"] for h in overridden["governed"]] == seen[("facts", "bands")]


# --- the agent adapters ------------------------------------------------------------------------------------------

def _alice_user_turns() -> list[Message]:
    return [m for m in load_scenario(WORKSHOP).messages if (m.tenant_id, m.user_id, m.role) == (TENANT, USER, "user")]


@pytest.mark.parametrize("judge, made", [("rules", judge_reason), ("bands", plain_judge)])
def test_the_mcp_server_honours_every_field_of_the_file(tmp_path, minilm, judge, made):
    """``python -m memory mcp --settings FILE`` builds its tools with server_config: the file's model, config, write
    path and judge; what remember writes and recall returns is what the library gives with the same point."""
    require_adapter_package("mcp")
    from memory.adapters.mcp_server import MemoryTools, server_config

    point = OperatingPoint("minilm", "facts", judge, SETTINGS)
    settings = point.save(tmp_path / "point.toml")
    tools = MemoryTools.open(server_config(tenant=TENANT, user=USER, settings=str(settings), data_dir=tmp_path / "mcp"))
    assert tools.manager.config == SETTINGS and tools.manager.embedder.name == "minilm"
    assert tools.ingestor is not None and tools.ingestor.judge is made
    turns = _alice_user_turns()
    for m in turns:
        assert tools.call("remember", {"text": m.content, "timestamp": iso(m.timestamp)})["write_path"] == "facts"
    out = tools.call("recall", {"query": QUERY})
    assert (out["threshold"], out["top_k"], out["token_budget"]) == (0.35, 3, 150)
    tools.ingestor.close()
    assert [h["content"] for h in out["governed"]] == _library(
        point, minilm, tmp_path / "library", one_by_one=True, messages=turns, as_of=out["as_of"], full_pool=False)


@pytest.mark.parametrize("judge, made", [("rules", judge_reason), ("bands", plain_judge)])
def test_the_langgraph_store_honours_every_field_of_the_file(tmp_path, minilm, judge, made):
    """GovernedStore(FILE): the file's model, config, write path and judge. What a put writes goes through the file's
    judge (the plain bands keep the stale June 30 deadline, the rules supersede it) and a search returns at most the
    file's top_k, none under its threshold."""
    require_adapter_package("langgraph")
    from memory.adapters.langgraph_store import GovernedStore

    point = OperatingPoint("minilm", "facts", judge, SETTINGS)
    settings = point.save(tmp_path / "point.json")
    with GovernedStore(settings, tenant=TENANT, location=StoreLocation(data_dir=tmp_path / "lg"),
                       embedder=minilm) as store:
        assert store.point == point and store.manager.config == SETTINGS and store.manager.embedder is minilm
        assert store.ingestor is not None and store.ingestor.judge is made
        for m in _alice_user_turns():
            store.put((USER, "memories"), m.id, {"content": m.content})
        found = [item.value["content"] for item in store.search((USER, "memories"), query=QUERY, limit=10)]
        recalled = store.recall((USER, "memories"), QUERY)
    assert found and len(found) <= SETTINGS.top_k
    assert all(h.similarity >= SETTINGS.threshold for h in recalled.governed)
    assert ("The summer campaign launch deadline is June 30." in found) == (judge == "bands"), found
