"""One operating-point file, exported by a study, gives the same governed recall everywhere it is loaded: the library,
the CLI, the MCP server (over stdio, the SDK's own client), the LangGraph store and the lab (issue 29).

Real parts: MiniLM (loaded once in this process; the MCP server loads its own), Chroma on disk in temporary folders.
The point is the study's recommendation on the default scenario with decay 0 (the study's default sweep), so the time
each path stamps its writes with does not move a score.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from cli_inprocess import run_cli
from optional import require_adapter_package

from memory import StoreLocation, iso, load_scenario, shipped_scenarios
from memory.eval import load_operating_point

pytestmark = [pytest.mark.process, pytest.mark.app]
ROOT = Path(__file__).resolve().parent.parent
TENANT, USER = "acme", "alice"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The study's recommended point on workshop_en (MiniLM, raw write path), as the CLI exports it."""
    out = tmp_path_factory.mktemp("point") / "operating-point.json"
    done = run_cli("study", "--dataset", "workshop_en", "--threshold", "0.2:0.6:0.05", "--top-k", "3,5",
                   "--write-path", "raw", "--export-point", str(out), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return out


def _iso(when) -> str:
    return when if isinstance(when, str) else iso(when)


def _alice():
    scenario = load_scenario(shipped_scenarios()["workshop_en"])
    query = next(q for q in scenario.queries if (q.tenant_id, q.user_id) == (TENANT, USER))
    return scenario, [m for m in scenario.messages if (m.tenant_id, m.user_id) == (TENANT, USER)], query


async def _mcp_governed(point: Path, data_dir: Path, messages, query: str) -> list[str]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, cwd=str(ROOT), args=[
        "-m", "memory", "mcp", "--tenant", TENANT, "--user", USER, "--settings", str(point), "--data-dir", str(data_dir)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for m in messages:
            done = await session.call_tool("remember", {"text": m.content, "timestamp": _iso(m.timestamp)})
            assert not done.is_error, done.content[0].text
        result = await session.call_tool("recall", {"query": query})
        assert not result.is_error, result.content[0].text
        return [h["content"] for h in json.loads(result.content[0].text)["governed"]]


def test_one_exported_file_gives_the_same_governed_recall_in_every_path(exported, minilm, tmp_path):
    point = load_operating_point(exported)
    assert (point.embedder, point.write_path, point.config.decay_rate) == ("minilm", "raw", 0.0)
    scenario, messages, q = _alice()

    manager, ingestor = point.open(location=StoreLocation(data_dir=tmp_path / "library"), embedder=minilm)
    assert ingestor is None
    manager.add_many(list(scenario.messages))
    library = [h.record.content for h in manager.retrieve(q.query, tenant_id=TENANT, user_id=USER, as_of=q.as_of,
                                                            reinforce=False).governed]
    assert library and len(library) <= point.config.top_k

    done = run_cli("recall", "--scenario", "memory/scenarios/workshop_en.json", "--tenant", TENANT, "--user", USER,
                   "--query", q.query, "--as-of", _iso(q.as_of), "--settings", str(exported), "--json", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert [h["content"] for h in json.loads(done.stdout)["governed"]] == library, "CLI"

    require_adapter_package("langgraph")
    from memory.adapters.langgraph_store import GovernedStore

    store = GovernedStore(exported, tenant=TENANT, location=StoreLocation(data_dir=tmp_path / "langgraph"),
                          embedder=minilm)
    for m in messages:
        store.put((USER, "memories"), m.id, {"content": m.content})
    found = store.search((USER, "memories"), query=q.query, limit=point.config.top_k)
    assert [item.value["content"] for item in found] == library, "LangGraph"

    require_adapter_package("mcp")
    assert anyio.run(_mcp_governed, exported, tmp_path / "mcp", messages, q.query) == library, "MCP"


def test_the_same_file_applied_in_the_lab_gives_the_same_governed_count(exported, minilm):
    from test_app import direct, metric, open_app

    from lab import i18n
    from memory import govern

    point = load_operating_point(exported)
    at = open_app("lab/pages/study.py")
    uploader = next(u for u in at.file_uploader if u.label == i18n.TEXT["agents.apply"]["en"])
    uploader.set_value((exported.name, exported.read_bytes(), "application/json")).run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page("lab/pages/recall.py").run()
    assert not at.exception, [e.value for e in at.exception]
    _, _, q, cands = direct("minilm", "workshop_en")
    assert (q.tenant_id, q.user_id) == (TENANT, USER) and at.selectbox(key="q").value == q.query
    assert int(metric(at, "Governed")) == len(govern(cands, point.config).governed) > 0
