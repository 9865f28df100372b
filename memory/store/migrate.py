"""Move a data folder from layout 1 (one Chroma collection per workspace, owners told apart by metadata
filters) to layout 2 (one collection per owner; memory/store/chroma.py), without losing data.

Layout 1 kept, per workspace and embedder, a collection ``mgl-<workspace>-<embedder>`` (names folded to
``[a-zA-Z0-9._-]``) with every record's lifecycle metadata, and ``text/<collection>.sqlite3`` with the
texts, windows, summaries, ingestion marks, journal, audit log and decision log. For each such pair,
:func:`migrate_folder` writes the records into a layout-2 store (vectors, text, metadata), copies the
other tables row for row, checks that every record arrived, then purges the old collection (no byte
left) and removes the old file. A workspace whose new store already holds records is left alone and
reported, so running the migration twice is harmless. Finally ``chroma.sqlite3`` is switched to
``auto_vacuum = FULL`` (memory/store/chroma_files.py).

Run: ``python -m memory migrate --data-dir DIR``.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from memory.store.chroma_files import auto_vacuum, enable_auto_vacuum, purge_collection
from memory.core.errors import MemoryLabError
from memory.core.schema import MemoryRecord
from memory.store.chroma import MemoryStore, StoreLocation, chroma_client

_COPIED_TABLES = ("window", "summaries", "ingested", "audit", "decisions", "journal")
_PAGE = 2000

Progress = Callable[[int, int], None]


@dataclass
class Migrated:
    """One workspace moved (or left alone) by the migration."""

    old_collection: str
    workspace: str
    embedder: str
    records: int = 0
    """Records written to the new layout."""
    rows: dict[str, int] = field(default_factory=dict)
    """Rows copied per table (windows, summaries, marks, audit, decisions, journal)."""
    skipped: str = ""
    """Why the workspace was left as it was ('' when it was migrated)."""


def legacy_workspaces(data_dir: Path) -> list[Path]:
    """Layout-1 text files in a data folder (layout-2 files are named ``ws-<hash>.sqlite3``)."""
    folder = Path(data_dir) / "text"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.sqlite3") if not p.name.startswith("ws-"))


def migrate_folder(data_dir: Path, *, progress: Progress | None = None) -> list[Migrated]:
    """Migrate every layout-1 workspace of ``data_dir`` to layout 2; returns what was done per workspace."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise MemoryLabError(f"--data-dir {data_dir} is not a folder")
    location = StoreLocation(data_dir=data_dir)
    client = chroma_client(location)
    files = legacy_workspaces(data_dir)
    out = []
    for i, path in enumerate(files):
        out.append(_migrate_one(client, location, path))
        if progress:
            progress(i + 1, len(files))
    if files and auto_vacuum(data_dir / "chroma") != 1:
        enable_auto_vacuum(data_dir / "chroma")
    return out


def _migrate_one(client: Any, location: StoreLocation, path: Path) -> Migrated:
    name = path.stem
    try:
        old = client.get_collection(name)
    except Exception:  # noqa: BLE001 - NotFoundError: a text file whose vectors are gone
        return Migrated(name, "", "", skipped="no Chroma collection of that name")
    embedder = str((old.metadata or {}).get("embedder", ""))
    dim = int((old.metadata or {}).get("dim", 0))
    workspace = _workspace_of(name, embedder)
    result = Migrated(name, workspace, embedder)
    if not embedder or not dim:
        result.skipped = "the collection does not say which embedder wrote it"
        return result
    store = MemoryStore(location=location, workspace=workspace, embedder_name=embedder, dim=dim)
    if store.count():
        result.skipped = "the new layout already holds records for this workspace"
        return result
    source = sqlite3.connect(str(path))
    try:
        texts = {m: (t, u, c, json.loads(x)) for m, t, u, c, x in
                 source.execute("SELECT memory_id, tenant_id, user_id, content, extras FROM texts")}
        result.records = _copy_records(old, texts, store)
        for table in _COPIED_TABLES:
            result.rows[table] = _copy_table(source, store, table)
    finally:
        source.close()
    if store.count() != result.records:
        raise MemoryLabError(f"migration of {name}: {result.records} records read, {store.count()} stored")
    store.texts.close()
    assert location.data_dir is not None  # migrate_folder's location is always on a folder
    purge_collection(client, location.data_dir / "chroma", name)
    path.unlink()
    return result


def _copy_records(old: Any, texts: dict[str, tuple[str, str, str, dict]], store: MemoryStore) -> int:
    copied = 0
    for offset in range(0, old.count(), _PAGE):
        page = old.get(include=["metadatas", "embeddings"], limit=_PAGE, offset=offset)
        records, vectors = [], []
        for memory_id, meta, vector in zip(page["ids"], page["metadatas"], page["embeddings"]):
            if memory_id not in texts:  # a vector without text was never visible (an interrupted erase)
                continue
            records.append(_legacy_record(memory_id, meta, texts[memory_id]))
            vectors.append(np.asarray(vector, dtype=np.float32))
        if records:
            store.add(records, np.stack(vectors))
            copied += len(records)
    return copied


def _copy_table(source: sqlite3.Connection, store: MemoryStore, table: str) -> int:
    rows = source.execute(f"SELECT * FROM {table}").fetchall()
    store.texts.copy_rows(table, rows)
    return len(rows)


def _legacy_record(memory_id: str, meta: dict[str, Any], text: tuple[str, str, str, dict]) -> MemoryRecord:
    tenant_id, user_id, content, extras = text
    if (tenant_id, user_id) != (meta.get("tenant_id"), meta.get("user_id")):
        raise MemoryLabError(f"record {memory_id} has two owners in the old layout; not migrated")
    fields = {k: v for k, v in meta.items() if k in MemoryRecord.__dataclass_fields__}
    fields.update(tenant_id=tenant_id, user_id=user_id, content=content,
                  source_message_ids=json.loads(meta.get("source_message_ids", "[]")))
    for name in ("domain_tags", "entities", "context_tags"):
        fields[name] = list(extras.get(name, []))
    return MemoryRecord(memory_id=memory_id, **fields)


def _workspace_of(collection: str, embedder: str) -> str:
    """The workspace name a layout-1 collection was made for, as far as its folded name tells."""
    stem = collection[len("mgl-"):] if collection.startswith("mgl-") else collection
    suffix = "-" + embedder
    return stem[: -len(suffix)] if embedder and stem.endswith(suffix) else stem
