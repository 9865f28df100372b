"""Migrating a layout-1 data folder (one collection per workspace, owner filters) to the per-owner layout.

The layout-1 folder is written here the way the previous store wrote it (real Chroma, the same
collection name, metadata and text-file schema), then ``python -m memory migrate`` moves it.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings

from memory import MemoryManager, StoreLocation
from memory.embed.embedders import LexicalEmbedder
from memory.runtime.erase import scan_for_bytes

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_780_000_000.0
_LEGACY_TEXT_SCHEMA = """
CREATE TABLE texts (memory_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, user_id TEXT NOT NULL,
                    content TEXT NOT NULL, extras TEXT NOT NULL DEFAULT '{}');
CREATE TABLE window (tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, seq INTEGER NOT NULL, message TEXT NOT NULL,
                     PRIMARY KEY (tenant_id, user_id, seq));
CREATE TABLE summaries (tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, text TEXT NOT NULL, source_ids TEXT NOT NULL,
                        PRIMARY KEY (tenant_id, user_id));
CREATE TABLE ingested (tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, message_id TEXT NOT NULL,
                       PRIMARY KEY (tenant_id, user_id, message_id));
CREATE TABLE journal (seq INTEGER PRIMARY KEY AUTOINCREMENT, plan TEXT NOT NULL);
CREATE TABLE audit (seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, action TEXT NOT NULL,
                    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, actor TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE decisions (seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant_id TEXT NOT NULL, user_id TEXT NOT NULL,
                        message_id TEXT NOT NULL, at REAL NOT NULL, entry TEXT NOT NULL);
"""
OWNERS = (("acme", "alice"), ("acme", "bob"), ("globex", "alice"))


def _write_layout_1(data: Path, embedder: LexicalEmbedder) -> dict[str, tuple[str, str, str]]:
    """A layout-1 workspace 'lab-1' with 3 owners x 4 records (one deprecated), a window row and a summary."""
    client = chromadb.PersistentClient(path=str(data / "chroma"), settings=Settings(anonymized_telemetry=False))
    name = f"mgl-lab-1-{embedder.name}"
    col = client.create_collection(name, configuration={"hnsw": {"space": "cosine"}},
                                   metadata={"embedder": embedder.name, "dim": embedder.dim}, embedding_function=None)
    (data / "text").mkdir(parents=True)
    db = sqlite3.connect(str(data / "text" / f"{name}.sqlite3"))
    db.executescript(_LEGACY_TEXT_SCHEMA)
    expected = {}
    ids, metas, texts = [], [], []
    for tenant, user in OWNERS:
        for i in range(4):
            memory_id = f"mem-{tenant}-{user}-{i}"
            content = f"{user} of {tenant} says fact number {i}"
            expected[memory_id] = (tenant, user, content)
            ids.append(memory_id)
            texts.append(content)
            metas.append({"tenant_id": tenant, "user_id": user, "session_id": "s1", "category": "episodic_fact",
                          "security_level": "tenant_internal", "created_at": T0 + i, "last_accessed_at": T0 + i,
                          "valid_until": 253402300799.0, "access_count": 0, "last_verified_at": T0 + i,
                          "importance": 0.5, "version": 1, "is_deprecated": i == 3, "superseded_by": "",
                          "supersedes": "", "archived": False, "role": "user", "message_id": f"m{i}",
                          "source_message_ids": json.dumps([f"m{i}"])})
            db.execute("INSERT INTO texts VALUES (?, ?, ?, ?, ?)",
                       (memory_id, tenant, user, content, json.dumps({"domain_tags": ["x"], "entities": [],
                                                                      "context_tags": []})))
    col.add(ids=ids, embeddings=embedder.embed(texts), metadatas=metas)
    db.execute("INSERT INTO window VALUES ('acme', 'alice', 1, ?)", (json.dumps({"content": "hi"}),))
    db.execute("INSERT INTO summaries VALUES ('acme', 'bob', 'bob summary', '[]')")
    db.commit()
    db.close()
    return expected


def test_migrate_moves_every_record_and_row_and_leaves_nothing_of_the_old_layout(tmp_path):
    lexical = LexicalEmbedder()
    data = tmp_path / "data"
    expected = _write_layout_1(data, lexical)
    chromadb.api.shared_system_client.SharedSystemClient.clear_system_cache()  # the CLI is another process

    out = subprocess.run([sys.executable, "-m", "memory", "migrate", "--data-dir", str(data), "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report[0]["workspace"] == "lab-1" and report[0]["records"] == 12 and not report[0]["skipped"]
    assert report[0]["rows"]["window"] == 1 and report[0]["rows"]["summaries"] == 1

    mm = MemoryManager(embedder=lexical, location=StoreLocation(data_dir=data), workspace="lab-1")
    for tenant, user in OWNERS:
        records = mm.records(tenant_id=tenant, user_id=user)
        assert {r.memory_id: (r.tenant_id, r.user_id, r.content) for r in records} == {
            k: v for k, v in expected.items() if v[:2] == (tenant, user)}
        assert sum(r.is_deprecated for r in records) == 1 and records[0].domain_tags == ["x"]
        hit = mm.retrieve(f"{user} of {tenant} says fact number 2", tenant_id=tenant, user_id=user, reinforce=False)
        assert hit.governed[0].record.content == f"{user} of {tenant} says fact number 2"
    assert mm.summary(tenant_id="acme", user_id="bob") == "bob summary"
    assert not (data / "text" / f"mgl-lab-1-{lexical.name}.sqlite3").exists()
    assert f"mgl-lab-1-{lexical.name}" not in [c.name for c in mm.store.client.list_collections()]
    assert scan_for_bytes(data / "chroma", ["mem-acme-alice-0"]) == []  # the old ids and metadata are gone

    again = subprocess.run([sys.executable, "-m", "memory", "migrate", "--data-dir", str(data), "--json"],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and json.loads(again.stdout) == []  # running it twice is harmless


def test_migrate_refuses_a_data_dir_that_is_a_file(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    out = subprocess.run([sys.executable, "-m", "memory", "migrate", "--data-dir", str(path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "folder" in out.stderr
