"""The CLI as a user runs it: JSON on stdout, one line on stderr for bad input. The seed demo runs as a real
``python -m memory`` subprocess; the other commands run in the test process (tests/cli_inprocess.py), which holds the
models already."""

import json
import os
import subprocess
import sys

import pytest

from cli_inprocess import run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EN = os.path.join(ROOT, "memory", "scenarios", "workshop_en.json")


def run_process(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "memory", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": ROOT})


def run(*args):
    return run_cli(*args, cwd=ROOT)


@pytest.mark.process
def test_demo_reproduces_the_seed(tmp_path):
    """``python -m memory demo`` end to end in a new interpreter: exit 0, the seed's figures on stdout and in the
    trace file."""
    trace_path = tmp_path / "t.json"
    proc = run_process("demo", "--trace", str(trace_path))
    assert proc.returncode == 0, proc.stderr
    trace = json.loads(trace_path.read_text(encoding="utf-8"))
    assert trace["query"] == "记忆污染 阈值 Agent"
    assert [(i["score"], i["record"]["content"]) for i in trace["thresholded"]] == [
        (0.354, "如何治理记忆污染？"), (0.277, "请记录，第二篇要讨论记忆污染。")]
    assert trace["guest_records_after_erase"] == [] and trace["guest_records_before_erase"] == 1
    assert len(trace["blind_top_k"]) == 8
    assert {"summary_memory", "recent_messages", "blind_top_k"} <= set(trace)
    assert all(m["user_id"] == "default" for m in trace["recent_messages"])
    assert "0.354" in proc.stdout


@pytest.mark.model
def test_recall_json_shape_and_isolation():
    proc = run("recall", "--scenario", EN, "--tenant", "acme", "--user", "alice",
               "--query", "What is the campaign budget now?", "--threshold", "0.4", "--top-k", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) >= {"blind", "governed", "dropped"} and out["config"]["threshold"] == 0.4
    assert len(out["blind"]) == 3 and 0 < len(out["governed"]) <= 3
    for hit in out["blind"] + out["governed"]:
        assert set(hit) >= {"id", "user_id", "tenant_id", "content", "similarity", "score"}
        assert (hit["tenant_id"], hit["user_id"]) == ("acme", "alice")
    assert all(h["similarity"] >= 0.4 for h in out["governed"])
    assert all(set(d) >= {"id", "stage"} for d in out["dropped"])
    assert any(d["stage"] == "threshold" for d in out["dropped"])


@pytest.mark.process  # a Chroma folder: memory/store/heap.py runs ldconfig (a process) to find libc, once per process
def test_erase_audit_on_disk(tmp_path):
    proc = run("erase-audit", "--scenario", EN, "--tenant", "acme", "--user", "bob",
               "--data-dir", str(tmp_path / "data"), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True
    names = {p["name"]: p["remaining"] for p in report["paths"]}
    assert names["disk"] == 0 and names["long_term_vectors"] == 0 and names["recent_window"] == 0
    assert report["removed"]["long_term_vectors"] > 0


@pytest.mark.parametrize("args, fragment", [
    (["recall", "--scenario", EN, "--tenant", "acme", "--user", "alice", "--query", "x", "--threshold", "2"],
     "MemoryConfig.threshold must be in [0.0, 1.0]"),
    (["recall", "--scenario", EN, "--tenant", "acme", "--user", "zed", "--query", "x", "--embedder", "lexical"],
     "has no messages of tenant 'acme' user 'zed'"),
    (["recall", "--scenario", "nope.json", "--tenant", "a", "--user", "b", "--query", "x"], "cannot read scenario file"),
    (["recall", "--scenario", EN, "--tenant", "acme", "--user", "alice", "--query", "  ", "--embedder", "lexical"],
     "query must not be empty"),
    (["recall", "--scenario", EN], "the following arguments are required"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_arguments_exit_nonzero_with_one_line(args, fragment):
    proc = run(*args)
    assert proc.returncode == 2
    lines = error_lines(proc)
    assert len(lines) == 1, proc.stderr
    assert fragment in lines[0] and "Traceback" not in proc.stderr


def test_malformed_scenario_names_the_field(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "b", "messages": [{"id": "m1", "tenant_id": "t", "user_id": "u",
                                                          "timestamp": "2026-01-01T00:00:00Z"}]}))
    proc = run("recall", "--scenario", str(bad), "--tenant", "t", "--user", "u", "--query", "x", "--embedder", "lexical")
    assert proc.returncode == 2
    assert "bad.json: messages[0] (id 'm1'): field 'content' is required" in proc.stderr


def test_scenario_takes_a_shipped_name_as_dataset_does(tmp_path):
    """``--scenario workshop_en`` (from a folder holding no such file) is the shipped scenario: the same recall as
    its path. A value that is neither a file nor a shipped name is one line naming the shipped scenarios."""
    from memory import shipped_scenarios

    rest = ("--tenant", "acme", "--user", "alice", "--query", "What is the campaign budget now?",
            "--embedder", "lexical", "--judge", "rules", "--json")
    by_name = run_cli("recall", "--scenario", "workshop_en", *rest, cwd=tmp_path)
    assert by_name.returncode == 0, by_name.stderr
    out = json.loads(by_name.stdout)
    assert out["governed"] and out == json.loads(run("recall", "--scenario", EN, *rest).stdout)
    wrong = run_cli("recall", "--scenario", "workshop_fr", *rest, cwd=tmp_path)
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    lines = error_lines(wrong)
    assert len(lines) == 1 and "workshop_fr" in lines[0], wrong.stderr
    assert "known: " + ", ".join(shipped_scenarios()) in lines[0]


# --- embedders: compare, and e5 in the other commands ------------------------------------------------------

def error_lines(proc) -> list[str]:
    """stderr's lines but the "loading the ... model" notes."""
    return [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("loading the ")]


@pytest.mark.model
def test_compare_json_has_a_run_per_spec():
    proc = run("compare", "--dataset", "recall_zh", "--runs", "dense:e5,lexical", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["dataset"].endswith("recall_zh.json") and out["unit"] == "turns"
    assert [(r["mode"], r["embedder"]) for r in out["runs"]] == [("dense", "e5"), ("lexical", None)]
    for r in out["runs"]:
        assert set(r["at_k"]) == {"1", "5", "10"}
        assert all(0.0 <= r["at_k"][k]["recall"] <= 1.0 for k in r["at_k"])
    e5, bm25 = (r["at_k"]["1"]["recall"] for r in out["runs"])
    assert e5 > bm25 + 0.3, (e5, bm25)
    assert "loading the e5 model" in proc.stderr


@pytest.mark.parametrize("args, fragment", [
    (["--dataset", "recall_zh", "--runs", "dense:nope"], "--runs: unknown embedder 'nope'"),
    (["--dataset", "recall_zh", "--runs", "lexical:e5"], "'lexical:e5': lexical mode takes no embedder"),
    (["--runs", "lexical"], "compare needs --dataset"),
])
def test_compare_bad_arguments_exit_2_with_one_line(args, fragment):
    proc = run("compare", *args)
    assert proc.returncode == 2, proc.stderr
    assert len(error_lines(proc)) == 1, proc.stderr
    assert fragment in error_lines(proc)[0] and "Traceback" not in proc.stderr


@pytest.mark.model
def test_study_with_e5():
    proc = run("study", "--dataset", "recall_zh", "--embedder", "e5", "--top-k", "5", "--threshold", "0.8,0.85",
               "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["embedder"], out["scorer"]) == ("e5", "cosine similarity (e5)")
    assert out["at_k"]["1"]["recall"] >= 0.7  # MiniLM reaches about 0.3 on these Chinese paraphrases


def test_study_with_an_unknown_embedder_exits_2():
    proc = run("study", "--dataset", "recall_zh", "--embedder", "nope")
    assert proc.returncode == 2
    assert len(error_lines(proc)) == 1, proc.stderr
    assert "argument --embedder: unknown embedder 'nope'" in error_lines(proc)[0]


@pytest.mark.process  # a Chroma folder: memory/store/heap.py runs ldconfig (a process) to find libc, once per process
def test_forget_archives_a_users_cold_facts_in_a_store_on_disk(tmp_path):
    """The forgetting pass from the command line: on a workspace written by the library, with the lexical embedder
    (the test is about the command, not the model)."""
    from memory import Ingestor, LexicalEmbedder, MemoryConfig, MemoryManager, Message, StoreLocation

    alice = {"tenant_id": "acme", "user_id": "alice"}
    manager = MemoryManager(MemoryConfig(), embedder=LexicalEmbedder(), location=StoreLocation(data_dir=tmp_path),
                            workspace="team a")
    t0 = 1_780_000_000.0
    ids = [Ingestor(manager).ingest(Message(content=text, id=f"m{i}", timestamp=t0 + i, **alice))[0].memory_id
           for i, text in enumerate(["I live in Hangzhou.", "My favourite fruit is mango."])]
    manager.store.texts.close()
    files = sorted(p.name for p in (tmp_path / "text").iterdir())

    typo = run("forget", "--data-dir", str(tmp_path), "--workspace", "team-a", "--embedder", "lexical",
               "--tenant", "acme", "--user", "alice")
    assert typo.returncode == 2 and len(error_lines(typo)) == 1 and "no workspace 'team-a'" in typo.stderr
    assert sorted(p.name for p in (tmp_path / "text").iterdir()) == files, "a typo creates nothing"

    early = run("forget", "--data-dir", str(tmp_path), "--workspace", "team a", "--embedder", "lexical",
                "--tenant", "acme", "--user", "alice", "--as-of", "2026-06-01T00:00:00Z", "--json")
    assert early.returncode == 0, early.stderr
    assert json.loads(early.stdout)["archived"] == [] and json.loads(early.stdout)["checked"] == 2
    late = run("forget", "--data-dir", str(tmp_path), "--workspace", "team a", "--embedder", "lexical",
               "--tenant", "acme", "--user", "alice", "--as-of", "2027-12-01T00:00:00Z", "--json")
    assert late.returncode == 0, late.stderr
    assert sorted(json.loads(late.stdout)["archived"]) == sorted(ids)

    reopened = MemoryManager(MemoryConfig(), embedder=LexicalEmbedder(), location=StoreLocation(data_dir=tmp_path),
                             workspace="team a")
    assert [r.memory_id for r in reopened.records(**alice, scope="hot")] == []
    assert sorted(r.memory_id for r in reopened.records(**alice, scope="all")) == sorted(ids)  # archived, not erased
    bad = run("forget", "--data-dir", str(tmp_path), "--workspace", "team a", "--embedder", "lexical",
              "--tenant", "acme", "--user", "alice", "--floor", "2")
    assert bad.returncode == 2 and len(error_lines(bad)) == 1 and "floor" in bad.stderr
