"""Clients of one `chroma run` server: one text folder per workspace, and every erasure reaches every client.

A workspace on a server is bound to the text folder of its first client (memory/store/binding.py): a client with
another folder is refused at open, in one line, before it writes anything; clients sharing the folder share every
text, and a client learns of another's erasure before its next read, emptying what it cached (MemoryStore.catch_up).
Real parts throughout: the session's `chroma run` on a loopback port, a second client in its own process, the CLI as
a user starts it. The lexical embedder (a real embedder of this project that loads at once) keeps the child fast.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings

from memory import MemoryConfig, MemoryManager, Message, Owner, StoreLocation
from memory.core.errors import MemoryLabError
from memory.eval import OperatingPoint
from memory.runtime.erase import scan_for_bytes
from memory.store.binding import FOLDER_ID_FILE, bind
from memory.store.chroma import MemoryStore, workspace_key

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "127.0.0.1"


def at(server: int, folder: Path) -> StoreLocation:
    return StoreLocation(data_dir=folder, host=HOST, port=server)


def open_manager(server: int, folder: Path, workspace: str, lexical, **config) -> MemoryManager:
    return MemoryManager(MemoryConfig(threshold=0.0, **config), embedder=lexical, location=at(server, folder),
                         workspace=workspace)


@pytest.mark.server
def test_a_second_client_with_another_text_folder_is_refused_at_open(chroma_server, lexical, tmp_path):
    workspace = f"bound-{uuid.uuid4().hex[:8]}"
    first = open_manager(chroma_server, tmp_path / "first", workspace, lexical)
    first.add(Message(tenant_id="acme", user_id="alice", id="m1", content="The vault code is 4711."))

    with pytest.raises(MemoryLabError) as refused:
        open_manager(chroma_server, tmp_path / "second", workspace, lexical)
    line = str(refused.value)
    assert "\n" not in line and len(line) < 400
    assert f"keeps the texts of workspace {workspace!r} in another folder, {(tmp_path / 'first').resolve()}" in line
    assert "--data-dir" in line and f"{HOST}:{chroma_server}" in line
    assert not (tmp_path / "second").exists()  # refused before anything was written there
    assert first.count(tenant_id="acme", user_id="alice") == 1  # the bound client goes on

    # other workspaces are other memories: the second folder serves one of its own (the lab: one folder per lab)
    own = open_manager(chroma_server, tmp_path / "second", f"{workspace}-own", lexical)
    assert own.count(tenant_id="acme", user_id="alice") == 0
    own.drop()

    # a dropped workspace is unbound: its name can be bound to another folder
    first.drop()
    again = open_manager(chroma_server, tmp_path / "second", workspace, lexical)
    assert again.count(tenant_id="acme", user_id="alice") == 0
    again.close()

    # the bound folder replaced at the same path (its texts gone): refused, and told so
    shutil.rmtree(tmp_path / "second")
    replaced = r"is not that one \(it was removed or replaced, and the texts with it\); use another server"
    with pytest.raises(MemoryLabError, match=replaced):
        open_manager(chroma_server, tmp_path / "second", workspace, lexical)


def test_texts_in_memory_on_a_server_are_refused_before_any_connection(tmp_path):
    # port 9 (discard): a store that tried to connect would fail otherwise, not with this line
    shared = r"needs a data folder for the texts of workspace 'w', one its clients share"
    with pytest.raises(MemoryLabError, match=shared):
        MemoryStore(location=StoreLocation(host=HOST, port=9), workspace="w", embedder_name="lexical", dim=8)


@pytest.mark.server
def test_two_clients_binding_one_fresh_workspace_at_once(chroma_server, tmp_path):
    """Two clients (each its own HTTP client) bind the same fresh workspace at the same moment, 8 times with
    different folders, 4 with one shared folder: with different folders exactly one is bound and the other refused
    naming the winner's folder; with one folder both are bound, to one folder id."""
    clients = [chromadb.HttpClient(host=HOST, port=chroma_server, settings=Settings(anonymized_telemetry=False))
               for _ in range(2)]

    def race(key: str, folders: list[Path]) -> list[str | MemoryLabError]:
        start = threading.Barrier(2)
        out: list[str | MemoryLabError] = [MemoryLabError("not run")] * 2

        def one(i: int) -> None:
            start.wait()
            try:
                out[i] = bind(clients[i], key=key, workspace=key, folder=folders[i], server="test")
            except MemoryLabError as exc:
                out[i] = exc
        threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        return out

    for round_ in range(8):
        folders = [tmp_path / f"r{round_}-{side}" for side in "ab"]
        got = race(f"ws-race-{uuid.uuid4().hex}", folders)
        bound = [i for i, r in enumerate(got) if isinstance(r, str)]
        assert len(bound) == 1, got
        loser = got[1 - bound[0]]
        assert isinstance(loser, MemoryLabError)
        assert f"another folder, {folders[bound[0]].resolve()} " in str(loser)
    for round_ in range(4):
        folder = tmp_path / f"shared-{round_}"
        got = race(f"ws-race-{uuid.uuid4().hex}", [folder, folder])
        assert all(isinstance(r, str) for r in got) and got[0] == got[1], got
        assert (folder / FOLDER_ID_FILE).read_text().strip() == got[0]
        assert sorted(p.name for p in folder.iterdir()) == [FOLDER_ID_FILE]  # no marker written aside is left


CLIENT = r"""
import json, sys
from pathlib import Path
from memory import LexicalEmbedder, MemoryConfig, MemoryManager, Message, StoreLocation
from memory.core.textcaches import cached_texts

spec = json.loads(sys.argv[1])
mm = MemoryManager(MemoryConfig(threshold=0.0), embedder=LexicalEmbedder(), workspace=spec["workspace"],
                   location=StoreLocation(data_dir=Path(spec["data"]), host="127.0.0.1", port=spec["port"]))

def view(user):
    owner = {"tenant_id": "acme", "user_id": user}
    records = len(mm.records(**owner))  # the first read: it learns of erasures since the last one
    caches = {"cached_queries": mm.cached_queries(), "memos": cached_texts(),
              "vectors_cached": ("acme", user) in mm.store._cache._items}
    res = mm.retrieve(spec["query"], **owner, reinforce=False)
    return {"records": records, "recent": [m.content for m in mm.recent(**owner)], "summary": mm.summary(**owner),
            "recalled": [h.record.content for h in res.blind + res.governed], **caches}

mm.retrieve(spec["query"], tenant_id="acme", user_id="alice", reinforce=False)  # the query cache and the vectors
mm.add_many([Message(**m) for m in spec["alice"]])  # a retry of what the first client wrote: memos hold the texts
print(json.dumps({"alice": view("alice")}), flush=True)
sys.stdin.readline()  # the first client erases alice meanwhile
print(json.dumps({"alice": view("alice"), "bob": view("bob")}), flush=True)
"""


@pytest.mark.server
@pytest.mark.process
def test_clients_sharing_a_folder_see_one_erasure(chroma_server, lexical, tmp_path):
    """The supported layout: after an erasure through one client, the other (its own process, caches warm) returns
    0 of the user's texts by recall, records, recent window and summary, and holds none in its query cache, its
    text memos or its cached vectors; the folder holds 0 canary bytes."""
    folder, workspace, token = tmp_path / "data", f"shared-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex[:12]
    alice = [Message(tenant_id="acme", user_id="alice", id=f"a{i}", timestamp=1_780_000_000 + i,
                     content=f"Alice canary {token}-{i}: the vault code is {4711 + i}.") for i in range(8)]
    bob = [Message(tenant_id="acme", user_id="bob", id=f"b{i}", timestamp=1_780_000_000 + i,
                   content=f"Bob's note {i}: the vault code is {1000 + i}.") for i in range(4)]
    first = open_manager(chroma_server, folder, workspace, lexical, window_size=3)
    first.add_many(alice + bob)
    query = alice[0].content  # a query holding the user's own text: what a cache must not keep
    spec = {"data": str(folder), "port": chroma_server, "workspace": workspace, "query": query,
            "alice": [{"tenant_id": m.tenant_id, "user_id": m.user_id, "id": m.id, "timestamp": m.timestamp,
                       "content": m.content} for m in alice]}
    child = subprocess.Popen([sys.executable, "-c", CLIENT, json.dumps(spec)], cwd=ROOT, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": ROOT})
    try:
        line = child.stdout.readline()
        assert line, child.communicate(timeout=60)[1][-2000:]
        before = json.loads(line)["alice"]
        # the second client really holds alice: everything below must go to 0
        assert before["records"] == 8 and len(before["recent"]) == 3 and token in before["summary"]
        assert len(before["recalled"]) > 0 and query in before["cached_queries"]
        assert before["memos"] > 0 and before["vectors_cached"]

        report = first.erase_user(tenant_id="acme", user_id="alice", disk_scan=True)
        assert report.ok, report.to_dict()
        out, err = child.communicate("go\n", timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err[-2000:]
    after = json.loads(out.strip().splitlines()[-1])
    seen = after["alice"]
    assert seen["records"] == 0 and seen["recent"] == [] and seen["summary"] == "" and seen["recalled"] == []
    assert seen["cached_queries"] == [] and seen["memos"] == 0 and not seen["vectors_cached"]
    bob_texts = after["bob"]["recalled"] + after["bob"]["recent"] + [after["bob"]["summary"]]
    assert not any(token in text for text in bob_texts)  # nor through the other user
    assert after["bob"]["records"] == 4 and len(after["bob"]["recalled"]) > 0  # the other user is all there
    canaries = [m.content for m in alice] + [f"{token}-{i}" for i in range(8)]
    assert scan_for_bytes(folder, canaries) == []
    first.drop()


@pytest.mark.server
@pytest.mark.process
def test_the_cli_refuses_another_folder_in_one_line(chroma_server, lexical, tmp_path):
    """`MEMORY_CHROMA_HOST=... python -m memory mcp --data-dir OTHER` on a server whose workspace is bound to another
    folder: exit status 2 and one line on stderr naming the bound folder, no traceback, nothing written."""
    from optional import require_adapter_package

    require_adapter_package("mcp")
    from memory.adapters.mcp_server import WORKSPACE

    settings = OperatingPoint(embedder="lexical", write_path="raw").save(tmp_path / "lexical.json")
    bound = MemoryManager(embedder=lexical, location=at(chroma_server, tmp_path / "bound"), workspace=WORKSPACE)
    assert bound.store.key == workspace_key(WORKSPACE, lexical.name)  # the workspace the CLI's server opens
    try:
        run = subprocess.run(
            [sys.executable, "-m", "memory", "mcp", "--tenant", "acme", "--user", "alice", "--data-dir",
             str(tmp_path / "other"), "--settings", str(settings)], cwd=ROOT, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": ROOT, "MEMORY_CHROMA_HOST": HOST,
                 "MEMORY_CHROMA_PORT": str(chroma_server)})
    finally:
        bound.drop()  # the session's server serves other tests: the workspace name is let go
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2, run.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: the Chroma server at "), run.stderr[-2000:]
    assert f"another folder, {(tmp_path / 'bound').resolve()} " in lines[0] and "Traceback" not in run.stderr
    assert run.stdout == ""
    assert not (tmp_path / "other").exists() or not any((tmp_path / "other").rglob("*.sqlite3"))


def test_a_store_learns_of_erasures_in_its_text_file_by_whom(lexical, tmp_path):
    """The check before a read (MemoryStore.catch_up), without a server: another store of the same file drops the
    erased owner's cached vectors; an erasure made in this process (which emptied this process's caches of the
    erased texts itself) does not empty every cache again, one written by another process (here: another connection
    to the file) does."""
    from memory.store.textstore import TextStore

    location = StoreLocation(data_dir=tmp_path)
    eraser, reader = (MemoryManager(MemoryConfig(threshold=0.0), embedder=lexical, location=location, workspace="w")
                      for _ in range(2))
    eraser.add_many([Message(tenant_id="acme", user_id=u, id=f"{u}{i}", content=f"{u}'s note {i} on the budget")
                     for u in ("alice", "bob") for i in range(3)])
    for user in ("alice", "bob"):
        reader.retrieve("budget", tenant_id="acme", user_id=user, reinforce=False)
    assert {("acme", "alice"), ("acme", "bob")} <= set(reader.store._cache._items)
    assert reader.store.catch_up() is False  # nothing new: one indexed read

    assert eraser.erase_user(tenant_id="acme", user_id="alice").ok
    assert reader.store.catch_up() is False  # this process's erasure: its caches of texts were emptied by it
    assert ("acme", "alice") not in reader.store._cache._items and ("acme", "bob") in reader.store._cache._items

    other = TextStore(eraser.store.text_file)  # what another process's erasure leaves: an audit entry it wrote
    other.audit("erase_user", Owner("acme", "bob"), actor="elsewhere", detail={})
    other.close()
    assert reader.store.catch_up() is True
    assert ("acme", "bob") not in reader.store._cache._items
    assert reader.store.catch_up() is False
    assert MemoryManager(embedder=lexical, workspace="w").store.catch_up() is False  # texts in memory: no other client
    eraser.close()
    reader.close()
