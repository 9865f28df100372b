"""Many sessions at once: threads in one process (as Streamlit runs them) and two processes on one server."""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from memory import MemoryConfig, MemoryManager, Message

WORKERS = 8
PER_WORKER = 12
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _messages(w: int) -> list[Message]:
    tenant = f"t{w % 2}"
    # near-identical texts across workers, so a leak would be the best match
    return [Message(tenant_id=tenant, user_id=f"u{w}", id=f"w{w}-{i}", timestamp=1_780_000_000 + i,
                    content=f"Project budget note {i}: the amount is {1000 * (i + 1)} yuan for worker {w}.")
            for i in range(PER_WORKER)]


def _work(mm: MemoryManager, w: int) -> list[tuple[str, str]]:
    msgs = _messages(w)
    for i, m in enumerate(msgs):
        mm.add(m)
        if i % 3 == 0:
            res = mm.retrieve("project budget amount", tenant_id=m.tenant_id, user_id=m.user_id)
            assert all((h.record.tenant_id, h.record.user_id) == (m.tenant_id, m.user_id)
                       for h in res.blind + res.governed)
    mm.add_many(msgs)  # a retry of everything: must not duplicate
    res = mm.retrieve("project budget amount", tenant_id=msgs[0].tenant_id, user_id=msgs[0].user_id, reinforce=False)
    return [(h.record.tenant_id, h.record.user_id) for h in res.blind + res.governed]


@pytest.mark.parametrize("round_", range(3))
def test_threads_sharing_one_manager(make_manager, round_):
    mm = make_manager(MemoryConfig(threshold=0.0, top_k=5, window_size=4))
    with ThreadPoolExecutor(WORKERS) as pool:
        owners_seen = list(pool.map(lambda w: _work(mm, w), range(WORKERS)))
    for w, seen in enumerate(owners_seen):
        assert seen and set(seen) == {(f"t{w % 2}", f"u{w}")}
    assert mm.store.count() == WORKERS * PER_WORKER
    for w in range(WORKERS):
        recs = mm.records(tenant_id=f"t{w % 2}", user_id=f"u{w}")
        assert sorted(r.message_id for r in recs) == sorted(f"w{w}-{i}" for i in range(PER_WORKER))
        assert len(mm.recent(tenant_id=f"t{w % 2}", user_id=f"u{w}")) == 4
        assert len(mm.summary_sources(tenant_id=f"t{w % 2}", user_id=f"u{w}")) == PER_WORKER - 4


def test_threads_with_their_own_workspaces(minilm):
    managers = [MemoryManager(MemoryConfig(threshold=0.0), embedder=minilm, workspace=f"cc-{os.getpid()}-{w}")
                for w in range(WORKERS)]
    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(lambda w: _work(managers[w], w), range(WORKERS)))
    for w, mm in enumerate(managers):
        assert mm.store.count() == PER_WORKER  # nothing of another session's workspace
        assert mm.store.owners() == [(f"t{w % 2}", f"u{w}")]


WORKER_SCRIPT = r"""
import json, sys
from memory import MemoryConfig, MemoryManager, Message, StoreLocation, make_embedder
port, w, text_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
mm = MemoryManager(MemoryConfig(threshold=0.0), embedder=make_embedder("lexical"),
                   location=StoreLocation(data_dir=__import__("pathlib").Path(text_dir), host="127.0.0.1", port=port),
                   workspace="shared-ws")
msgs = [Message(tenant_id="t", user_id=f"p{w}", id=f"p{w}-{i}", content=f"process {w} budget note {i}")
        for i in range(20)]
for m in msgs:
    mm.add(m)
res = mm.retrieve("budget note", tenant_id="t", user_id=f"p{w}", reinforce=False)
print(json.dumps(sorted({h.record.user_id for h in res.blind + res.governed})))
"""


@pytest.mark.server
def test_two_processes_on_one_server(chroma_server, tmp_path):
    # one text folder for both: a server binds a workspace to one folder and refuses another (memory/store/binding.py)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER_SCRIPT, str(chroma_server), str(w), str(tmp_path / "text")],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": ROOT}) for w in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for w, (p, (out, err)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1]) == [f"p{w}"]
    import chromadb

    client = chromadb.HttpClient(host="127.0.0.1", port=chroma_server)
    from memory.store.textstore import TextStore

    ours = [name for path in sorted(tmp_path.glob("text/text/*.sqlite3"))
            for _, _, name in TextStore(path).collections()]  # each process registered its owner's collection
    ids = [i for name in ours for i in client.get_collection(name).get(include=[])["ids"]]
    assert len(ids) == len(set(ids)) == 40  # no id twice
