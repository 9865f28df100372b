"""TextStore: the one place raw text lives (record contents, recent windows, summaries, audit log).

Chroma holds vectors and filterable metadata only. Raw text is kept here, in
SQLite with ``secure_delete`` on and a VACUUM after every erasure, so erased
text is overwritten in the file rather than left in free pages: a plain Chroma
``delete`` (even after ``chroma vacuum``) leaves the document's text in
``chroma.sqlite3``, so documents never go there.

It also holds the pending-erasure records (table ``erasures``: owner, when, who, the erasing process's writer lease,
and what an interrupted erasure needs to finish, never a text of the user). An erasure writes its record, committed
and so fsync'd, before its first delete and removes it once it has run to its report; a record left behind is an
erasure owed, which :meth:`MemoryManager.recover` finishes when the store is next opened. So the record can be
written on a disk another program filled to the last byte, the text folder keeps :data:`ROOM_BYTES` set aside
(:class:`ErasureRoom`): if the record's transaction fails for want of space, that room is given back and the record
written in it. The room is taken again whenever the disk has it (at open, after each erasure).
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import itertools
import json
import logging
import os
import re
import secrets
import sqlite3
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from memory.core.errors import MemoryLabError
from memory.core.owner import Owner
from memory.store.space import is_disk_full

BUSY_TIMEOUT_MS = 60_000
"""How long a write waits for another process's transaction on the same file before it fails."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS texts (
    memory_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, user_id TEXT NOT NULL,
    content TEXT NOT NULL, fields TEXT NOT NULL DEFAULT '{}', vector BLOB, vector_id TEXT
);
CREATE INDEX IF NOT EXISTS texts_owner ON texts (tenant_id, user_id);
CREATE INDEX IF NOT EXISTS texts_vector ON texts (vector_id);
CREATE TABLE IF NOT EXISTS owners (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, collection TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, user_id)
);
CREATE TABLE IF NOT EXISTS window (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, seq INTEGER NOT NULL, message TEXT NOT NULL,
    PRIMARY KEY (tenant_id, user_id, seq)
);
CREATE TABLE IF NOT EXISTS summaries (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, text TEXT NOT NULL, source_ids TEXT NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);
CREATE TABLE IF NOT EXISTS ingested (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, message_id TEXT NOT NULL,
    PRIMARY KEY (tenant_id, user_id, message_id)
);
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, plan TEXT NOT NULL, writer TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, action TEXT NOT NULL,
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, actor TEXT NOT NULL, detail TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS decisions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant_id TEXT NOT NULL, user_id TEXT NOT NULL,
    message_id TEXT NOT NULL, at REAL NOT NULL, entry TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS decisions_owner ON decisions (tenant_id, user_id, message_id);
CREATE TABLE IF NOT EXISTS erasures (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, at REAL NOT NULL, actor TEXT NOT NULL, writer TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '{}', PRIMARY KEY (tenant_id, user_id)
);
"""

log = logging.getLogger(__name__)


class TextStore:
    """Thread-safe SQLite store for every piece of raw text, keyed by (tenant_id, user_id).

    Every method of one owner takes that owner as one :class:`~memory.core.owner.Owner` (validated where it entered
    the library) and unpacks it into the SQL parameters itself."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._depth = 0
        self._on_commit: list[Callable[[], None]] = []
        self._db = sqlite3.connect(
            str(self.path) if self.path else ":memory:", check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA secure_delete = ON")
        self._db.execute("PRAGMA journal_mode = DELETE")
        self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")  # writers sharing a folder wait, not fail
        self._db.executescript(_SCHEMA)
        self._db.execute("INSERT OR IGNORE INTO info VALUES ('salt', ?)", (secrets.token_hex(16),))
        self._salt = bytes.fromhex(self._rows("SELECT value FROM info WHERE key = 'salt'")[0][0])
        self._writer = WriterLease(None if self.path is None else self.path.parent / "writers")
        self.room = ErasureRoom(None if self.path is None else self.path.parent)
        self.room.keep()

    def rebuild(self) -> None:
        """Rebuild the file (VACUUM, the file's cost): every page written afresh, so no copy of deleted text that
        SQLite's page rebalancing left in a page's unused area survives. For a trace an erasure's disk scan found."""
        with self._lock:
            self._db.execute("VACUUM")

    def close(self) -> None:
        with self._lock:
            self._db.close()
            self._writer.release()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One SQLite transaction around everything inside (re-entrant: inner blocks join the outer one)."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._db.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield
            except BaseException:
                self._depth = 0
                self._on_commit.clear()
                self._db.execute("ROLLBACK")
                raise
            self._depth = 0
            try:
                self._db.execute("COMMIT")
            except BaseException:
                self._on_commit.clear()
                raise
            done, self._on_commit = self._on_commit, []
            for step in done:
                _after(step)

    def after_commit(self, step: Callable[[], None]) -> None:
        """Run ``step`` once the transaction in progress has committed (never when it rolls back); outside a
        transaction, at once. For caches of what the transaction wrote: they change only with the file. A step that
        raises is logged and does not fail the write, which has committed."""
        with self._lock:
            if self._depth:
                self._on_commit.append(step)
                return
        _after(step)

    def _tx(self, statements: Iterable[tuple[str, tuple]]) -> None:
        """Run the statements in one transaction, in order; a run of the same statement is one ``executemany``."""
        with self.transaction():
            for sql, run in itertools.groupby(statements, key=lambda s: s[0]):
                self._db.executemany(sql, (args for _, args in run))

    def _rows(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _rows_in(self, sql: str, args: tuple, ids: list[str], *, chunk: int = 500, tail: tuple = ()) -> list[tuple]:
        """Run ``sql`` (with ``{marks}`` for an IN list; ``args`` before it, ``tail`` after) over ``ids`` in
        chunks SQLite accepts."""
        out: list[tuple] = []
        for start in range(0, len(ids), chunk):
            part = ids[start : start + chunk]
            out += self._rows(sql.format(marks=",".join("?" * len(part))), (*args, *part, *tail))
        return out

    # --- records: text, lifecycle metadata and vector of every long-term memory ---------
    def put_records(self, rows: list[tuple[str, str, str, str, dict[str, Any], bytes]]) -> dict[str, str]:
        """Insert or replace (memory_id, tenant_id, user_id, content, fields, vector) rows atomically; ``fields``
        are the record's other fields (lifecycle metadata, tags), kept as one JSON object.

        Returns memory_id -> vector_id (:meth:`vector_id`). Each owner's version is bumped, so cached
        vectors of that owner are reloaded.
        """
        with self.transaction():
            out = {m: self.vector_id(m) for m, *_ in rows}
            self._tx(
                ("INSERT OR REPLACE INTO texts VALUES (?, ?, ?, ?, ?, ?, ?)", (m, t, u, c, _json(f), vec, out[m]))
                for m, t, u, c, f, vec in rows
            )
            self._tx(("UPDATE owners SET version = version + 1 WHERE tenant_id = ? AND user_id = ?", o)
                     for o in {(t, u) for _, t, u, *_ in rows})
            return out

    def vector_id(self, memory_id: str) -> str:
        """The id a record's vector has in its owner's collection: a keyed hash of the memory id under this
        file's random salt, so the vector store never holds an id anyone can derive from an owner, and a
        replayed write plan upserts the same id."""
        digest = hmac.new(self._salt, memory_id.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
        return f"v-{digest[:32]}"

    def update_records(self, rows: list[tuple[str, str, str, str, dict[str, Any]]]) -> int:
        """Rewrite (memory_id, tenant_id, user_id, content, fields) of records that exist; returns how many
        did. A record that is gone (erased) is not written back."""
        with self.transaction():
            before = self._db.total_changes
            self._tx(
                ("UPDATE texts SET content = ?, fields = ? WHERE memory_id = ? AND tenant_id = ? AND user_id = ?",
                 (c, _json(f), m, t, u))
                for m, t, u, c, f in rows
            )
            return self._db.total_changes - before

    def records(self, owner: Owner, memory_ids: list[str] | None = None) -> list[tuple[str, str, dict[str, Any]]]:
        """(memory_id, content, fields) of one owner's records: all of them, or those of ``memory_ids``."""
        if memory_ids is None:
            rows = self._rows("SELECT memory_id, content, fields FROM texts WHERE tenant_id = ? AND user_id = ?",
                              owner.key)
        else:  # looked up by key, the owner checked on each row found (+: not through the owner index)
            rows = self._rows_in("SELECT memory_id, content, fields FROM texts WHERE memory_id IN ({marks}) "
                                 "AND +tenant_id = ? AND +user_id = ?", (), list(memory_ids), tail=owner.key)
        return [(m, c, json.loads(f)) for m, c, f in rows]

    def vectors(self, owner: Owner, memory_ids: list[str] | None = None) -> tuple[list[str], list[bytes]]:
        """Ids and raw float32 vectors of one owner's records (all, or those of ``memory_ids``), in storage order."""
        if memory_ids is None:
            rows = self._rows("SELECT memory_id, vector FROM texts WHERE tenant_id = ? AND user_id = ? ORDER BY rowid",
                              owner.key)
        else:
            rows = self._rows_in("SELECT memory_id, vector FROM texts WHERE memory_id IN ({marks}) "
                                 "AND +tenant_id = ? AND +user_id = ?", (), list(memory_ids), tail=owner.key)
        return [r[0] for r in rows], [r[1] for r in rows]

    def memory_ids_of(self, owner: Owner, vector_ids: list[str]) -> dict[str, str]:
        """vector_id -> memory_id for one owner's records (ids of other owners are simply not found)."""
        rows = self._rows_in("SELECT vector_id, memory_id FROM texts WHERE vector_id IN ({marks}) "
                             "AND +tenant_id = ? AND +user_id = ?", (), list(vector_ids), tail=owner.key)
        return dict(rows)

    def vector_ids(self, owner: Owner) -> list[str]:
        return [r[0] for r in self._rows("SELECT vector_id FROM texts WHERE tenant_id = ? AND user_id = ?", owner.key)]

    def count_texts(self, owner: Owner | None = None) -> int:
        """Records in the file: all of them, or one owner's."""
        if owner is None:
            return self._rows("SELECT COUNT(*) FROM texts")[0][0]
        return self._rows("SELECT COUNT(*) FROM texts WHERE tenant_id = ? AND user_id = ?", owner.key)[0][0]

    def record_owners(self) -> list[tuple[str, str]]:
        """Every (tenant_id, user_id) with long-term records."""
        return [(t, u) for t, u in self._rows("SELECT DISTINCT tenant_id, user_id FROM texts ORDER BY 1, 2")]

    # --- owners' collections ------------------------------------------------
    def collection_of(self, owner: Owner, *, create: bool = False) -> str | None:
        """The name of the owner's vector collection (a random name, registered here once; with ``create``, the
        first caller's name wins, across processes too)."""
        if create:
            self._tx([("INSERT OR IGNORE INTO owners (tenant_id, user_id, collection) VALUES (?, ?, ?)",
                       (*owner.key, f"mgl-{uuid.uuid4().hex}"))])
        rows = self._rows("SELECT collection FROM owners WHERE tenant_id = ? AND user_id = ?", owner.key)
        return rows[0][0] if rows else None

    def version(self, owner: Owner) -> int | None:
        """The owner's record version (bumped by every put), None for an owner without a collection."""
        rows = self._rows("SELECT version FROM owners WHERE tenant_id = ? AND user_id = ?", owner.key)
        return rows[0][0] if rows else None

    def collections(self) -> list[tuple[str, str, str]]:
        """(tenant_id, user_id, collection) of every registered owner."""
        return [tuple(r) for r in self._rows("SELECT tenant_id, user_id, collection FROM owners ORDER BY 1, 2")]

    def copy_rows(self, table: str, rows: list[tuple]) -> None:
        """Insert rows read from another file of the same table schema (the layout migration, a snapshot's restore)."""
        _check_copyable(table)
        if rows:
            marks = ",".join("?" * len(rows[0]))
            self._tx((f"INSERT OR REPLACE INTO {table} VALUES ({marks})", tuple(r)) for r in rows)

    def table_rows(self, table: str) -> list[tuple]:
        """Every row of one copyable table, in storage order (what :meth:`copy_rows` takes)."""
        _check_copyable(table)
        return self._rows(f"SELECT * FROM {table} ORDER BY rowid")

    # --- workspace identity -------------------------------------------------
    def claim(self, **identity: str) -> None:
        """Record who this file belongs to on first use; raise if it already belongs to someone else."""
        with self.transaction():
            for key, value in identity.items():
                self._db.execute("INSERT OR IGNORE INTO info VALUES (?, ?)", (key, value))
                found = self._rows("SELECT value FROM info WHERE key = ?", (key,))[0][0]
                if found != value:
                    raise MemoryLabError(f"{self.path} belongs to {key} {found!r}, not {value!r}")

    # --- recent window ----------------------------------------------------
    def window(self, owner: Owner) -> list[dict[str, Any]]:
        rows = self._rows("SELECT message FROM window WHERE tenant_id = ? AND user_id = ? ORDER BY seq", owner.key)
        return [json.loads(r[0]) for r in rows]

    def push_window(self, owner: Owner, messages: list[dict[str, Any]], *, keep: int) -> list[dict[str, Any]]:
        """Append messages in order; pop and return the oldest ones beyond ``keep`` (the same ones, in the same
        order, as pushing them one by one would), atomically."""
        tenant_id, user_id = owner.key
        with self.transaction():
            current = self.window(owner)
            seq = self._rows(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM window WHERE tenant_id = ? AND user_id = ?",
                (tenant_id, user_id),
            )[0][0]
            overflow = (current + messages)[: max(len(current) + len(messages) - keep, 0)]
            old_out = min(len(current), len(overflow))  # stored rows that fall out; the rest of it is never stored
            statements: list[tuple[str, tuple]] = [
                ("INSERT INTO window VALUES (?, ?, ?, ?)",
                 (tenant_id, user_id, seq + i, json.dumps(messages[i], ensure_ascii=False)))
                for i in range(len(overflow) - old_out, len(messages))
            ]
            if old_out:
                statements.append((
                    "DELETE FROM window WHERE tenant_id = ? AND user_id = ? AND seq IN "
                    "(SELECT seq FROM window WHERE tenant_id = ? AND user_id = ? ORDER BY seq LIMIT ?)",
                    (tenant_id, user_id, tenant_id, user_id, old_out),
                ))
            self._tx(statements)
            return overflow

    # --- summaries ----------------------------------------------------------
    def summary(self, owner: Owner) -> tuple[str, list[str]]:
        rows = self._rows("SELECT text, source_ids FROM summaries WHERE tenant_id = ? AND user_id = ?", owner.key)
        return (rows[0][0], json.loads(rows[0][1])) if rows else ("", [])

    def set_summary(self, owner: Owner, text: str, source_ids: list[str]) -> None:
        self._tx([(
            "INSERT OR REPLACE INTO summaries VALUES (?, ?, ?, ?)",
            (*owner.key, text, json.dumps(source_ids, ensure_ascii=False)),
        )])

    # --- owners -------------------------------------------------------------
    def owners(self) -> list[tuple[str, str]]:
        """Every (tenant_id, user_id) with anything stored here."""
        rows = self._rows(
            "SELECT tenant_id, user_id FROM texts UNION SELECT tenant_id, user_id FROM window "
            "UNION SELECT tenant_id, user_id FROM summaries ORDER BY 1, 2"
        )
        return [(t, u) for t, u in rows]

    def erase_owner(self, owner: Owner, *,
                    scrub_plan: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None) -> dict[str, int]:
        """Delete every row of one (tenant, user) in one transaction; return the counts removed.

        ``scrub_plan`` rewrites a pending journal plan without the owner (None: nothing left, delete it), so no
        write plan keeps the owner's text. ``secure_delete`` is on, so SQLite overwrites the deleted content
        in place: no VACUUM, and the cost is the owner's rows, not the file's. Also returns ``others_touched``:
        rows the deletes removed beyond the owner's own, counted by key inside the same transaction (so a
        concurrent writer cannot blur it, and it costs the owner's rows, not a count of everyone else's).
        """
        key = owner.key
        tables = ("texts", "window", "summaries", "decisions", "ingested", "owners")
        with self.transaction():
            own = self.count_owner_rows(owner)
            counts = {
                "long_term_text": self.count_texts(owner),
                "recent_window": len(self.window(owner)),
                "summary": 1 if self.summary(owner)[0] else 0,
                "decision_log": self.count_decisions(owner),
                "journal": 0,
            }
            deleted = {t: self._db.execute(f"DELETE FROM {t} WHERE tenant_id = ? AND user_id = ?", key).rowcount
                       for t in tables}
            for seq, plan in self.journal_pending():
                clean = scrub_plan(plan) if scrub_plan else plan
                if clean == plan:
                    continue
                counts["journal"] += 1
                if clean is None:
                    self._db.execute("DELETE FROM journal WHERE seq = ?", (seq,))
                else:
                    self._db.execute("UPDATE journal SET plan = ? WHERE seq = ?", (_json(clean), seq))
            counts["others_touched"] = sum(deleted[t] - own[t] for t in tables)
            return counts

    def count_owner_rows(self, owner: Owner) -> dict[str, int]:
        """Rows of one owner in every table that is keyed by owner (the erasure check)."""
        tables = ("texts", "window", "summaries", "decisions", "ingested", "owners")
        return {t: self._rows(f"SELECT COUNT(*) FROM {t} WHERE tenant_id = ? AND user_id = ?", owner.key)[0][0]
                for t in tables}

    # --- ingestion marks and the write journal -------------------------------
    def ingested(self, owner: Owner, message_ids: list[str]) -> set[str]:
        """Which of these messages of one owner are fully ingested (the commit mark of the write path)."""
        rows = self._rows_in(
            "SELECT message_id FROM ingested WHERE tenant_id = ? AND user_id = ? AND message_id IN ({marks})",
            owner.key, message_ids,
        )
        return {r[0] for r in rows}

    def mark_ingested(self, rows: list[tuple[str, str, str]]) -> None:
        self._tx(("INSERT OR IGNORE INTO ingested VALUES (?, ?, ?)", r) for r in rows)

    def journal_put(self, plan: dict[str, Any]) -> int:
        """Record a write plan before any of it is applied; returns its sequence number (taken inside the
        insert's own transaction, so two writers on one file never read each other's). The plan carries
        this process's writer lease, so no other process replays it while this one lives."""
        with self.transaction():
            cur = self._db.execute("INSERT INTO journal (plan, writer) VALUES (?, ?)", (_json(plan), self._writer.token))
            assert cur.lastrowid is not None  # an INSERT that succeeded always sets it
            return int(cur.lastrowid)

    def journal_done(self, seq: int) -> bool:
        """Delete a finished plan; False when it was already gone (another writer finished it first)."""
        with self.transaction():
            return self._db.execute("DELETE FROM journal WHERE seq = ?", (seq,)).rowcount == 1

    def journal_marks(self, seq: int) -> list[tuple[str, str, str]] | None:
        """The commit marks a journaled plan holds now (an erasure by another writer scrubs its owner's out, see
        :meth:`erase_owner`); None when the plan is gone. Only the marks are read out of the plan (SQLite's JSON)."""
        rows = self._rows("SELECT json_extract(plan, '$.ingested') FROM journal WHERE seq = ?", (seq,))
        return None if not rows else [(t, u, k) for t, u, k in json.loads(rows[0][0] or "[]")]

    def data_version(self) -> int:
        """SQLite's ``PRAGMA data_version``: it changes when another connection (another writer of the file) commits,
        and only then: a writer that sees the same value twice knows nobody else changed the file in between."""
        return int(self._rows("PRAGMA data_version")[0][0])

    def journal_orphans(self) -> list[tuple[int, dict[str, Any]]]:
        """Pending plans whose writer is gone (crashed, killed): the ones a newly opened store rolls forward.
        A plan of a writer that is still running (another process on the same folder) is its own to finish."""
        rows = self._rows("SELECT seq, plan, writer FROM journal ORDER BY seq")
        return [(seq, json.loads(plan)) for seq, plan, writer in rows if not self._writer.alive(writer)]

    def journal_pending(self) -> list[tuple[int, dict[str, Any]]]:
        """Plans recorded but not finished (a crash happened while applying them), oldest first."""
        return [(seq, json.loads(plan)) for seq, plan in self._rows("SELECT seq, plan FROM journal ORDER BY seq")]

    # --- pending erasures ---------------------------------------------------
    def begin_erasure(self, owner: Owner, *, actor: str, detail: dict[str, Any]) -> None:
        """Record, durably (its own committed transaction), that the owner's erasure has begun: before its first delete.
        ``detail`` is what an interrupted erasure needs to finish (never a text of the user). A record already there
        (an erasure interrupted before) is replaced, its ``segments`` kept. On a disk too full for the transaction,
        the :class:`ErasureRoom` is given back and the record written once more; if that fails too, it raises and
        nothing is recorded (the caller deletes nothing)."""
        prior = self.pending_erasure(owner)
        if prior is not None:
            detail = {**detail, "segments": sorted(set(prior.segments) | set(detail.get("segments") or []))}
        row = (*owner.key, time.time(), actor, self._writer.token, _json(detail))
        statement = [("INSERT OR REPLACE INTO erasures VALUES (?, ?, ?, ?, ?, ?)", row)]
        try:
            self._tx(statement)
        except Exception as exc:
            if not (is_disk_full(exc, self.path.parent if self.path else None) and self.room.release()):
                raise
            log.warning("the disk holding %s is full: the room set aside for erasure records was given back", self.path)
            self._tx(statement)

    def end_erasure(self, owner: Owner) -> bool:
        """Remove this store's pending-erasure record of the owner (the erasure ran to its report); False when there
        was none of this store's (another process's erasure of the same owner replaced it, and removes it)."""
        with self.transaction():
            cur = self._db.execute("DELETE FROM erasures WHERE tenant_id = ? AND user_id = ? AND writer = ?",
                                   (*owner.key, self._writer.token))
            return cur.rowcount == 1

    def pending_erasure(self, owner: Owner) -> "PendingErasure | None":
        """The owner's pending-erasure record, if an erasure of the owner began and has not ended (one indexed read:
        every read of an owner asks it)."""
        rows = self._rows("SELECT tenant_id, user_id, at, actor, writer, detail FROM erasures "
                          "WHERE tenant_id = ? AND user_id = ?", owner.key)
        return PendingErasure.of(rows[0]) if rows else None

    def pending_erasures(self) -> list["PendingErasure"]:
        """Every pending-erasure record, oldest first."""
        rows = self._rows("SELECT tenant_id, user_id, at, actor, writer, detail FROM erasures ORDER BY at")
        return [PendingErasure.of(r) for r in rows]

    @property
    def writer_token(self) -> str:
        """This store's writer lease (:class:`WriterLease`): what its journal plans and erasure records carry."""
        return self._writer.token

    def writer_alive(self, token: str) -> bool:
        """Whether the process (the store) of ``token`` still holds its lease; this store's own counts as gone."""
        return self._writer.alive(token)

    # --- audit --------------------------------------------------------------
    def audit(self, action: str, owner: Owner | None, *, actor: str, detail: dict[str, Any]) -> None:
        """Record that something happened to one owner (None: to the whole workspace, kept with an empty tenant and
        user); callers must not put erased content in ``detail``."""
        tenant_id, user_id = ("", "") if owner is None else owner.key
        self._tx([(
            "INSERT INTO audit (at, action, tenant_id, user_id, actor, detail) VALUES (?, ?, ?, ?, ?, ?)",
            (time.time(), action, tenant_id, user_id, actor, json.dumps(detail, ensure_ascii=False)),
        )])

    def audit_log(self) -> list[dict[str, Any]]:
        rows = self._rows("SELECT at, action, tenant_id, user_id, actor, detail FROM audit ORDER BY seq")
        return [
            {"at": a, "action": b, "tenant_id": t, "user_id": u, "actor": c, "detail": json.loads(d)}
            for a, b, t, u, c, d in rows
        ]

    def audit_head(self) -> int:
        """The sequence number of the last audit entry (0 for none)."""
        return self._rows("SELECT COALESCE(MAX(seq), 0) FROM audit")[0][0]

    def audit_after(self, seq: int) -> list[tuple[int, str, str]]:
        """(seq, tenant_id, user_id) of the audit entries after ``seq``, oldest first: a range read of the log's key,
        one lookup when there is none (how another client of this file learns of an erasure)."""
        return [tuple(r) for r in self._rows("SELECT seq, tenant_id, user_id FROM audit WHERE seq > ? ORDER BY seq",
                                             (seq,))]

    # --- write-path decision log --------------------------------------------
    def add_decisions(self, rows: list[tuple[str, str, str, float, dict[str, Any]]]) -> None:
        """Append (tenant_id, user_id, message_id, at, entry) rows atomically; entries hold fact texts,
        so they live here, where erasure overwrites them."""
        self._tx(
            ("INSERT INTO decisions (tenant_id, user_id, message_id, at, entry) VALUES (?, ?, ?, ?, ?)",
             (t, u, m, float(at), json.dumps(e, ensure_ascii=False)))
            for t, u, m, at, e in rows
        )

    def decisions(self, owner: Owner, *, message_id: str | None = None) -> list[dict[str, Any]]:
        """One (tenant, user)'s decision-log entries, oldest first (optionally of one message)."""
        sql = "SELECT entry FROM decisions WHERE tenant_id = ? AND user_id = ?"
        args: tuple = owner.key
        if message_id is not None:
            sql += " AND message_id = ?"
            args += (message_id,)
        return [json.loads(r[0]) for r in self._rows(sql + " ORDER BY seq", args)]

    def count_decisions(self, owner: Owner | None = None) -> int:
        """Decision-log entries in the file: all of them, or one owner's."""
        if owner is None:
            return self._rows("SELECT COUNT(*) FROM decisions")[0][0]
        return self._rows("SELECT COUNT(*) FROM decisions WHERE tenant_id = ? AND user_id = ?", owner.key)[0][0]

    # --- removing some of an owner's rows (MemoryManager.delete_records) ------
    def forget(self, owner: Owner, *, memory_ids: list[str],
               drop_message: Callable[[dict[str, Any]], bool],
               rewrite_entry: Callable[[dict[str, Any]], dict[str, Any] | None]) -> dict[str, int]:
        """Remove some of one owner's rows and the copies of their text, in one transaction (``secure_delete`` is on,
        so what is removed is overwritten in place): the records ``memory_ids`` (the owner's version is bumped), the
        window messages ``drop_message`` is true for, and each decision-log entry as ``rewrite_entry`` returns it
        (None: deleted; an equal entry: left as it is). Costs the records named and the owner's window and log, not
        the file's. Returns how many records, window messages and log entries went, and log entries rewritten."""
        key = owner.key
        with self.transaction():
            gone = self._rows_in("SELECT memory_id FROM texts WHERE memory_id IN ({marks}) AND +tenant_id = ? "
                                 "AND +user_id = ?", (), list(memory_ids), tail=key)
            self._tx(("DELETE FROM texts WHERE memory_id = ?", (m,)) for (m,) in gone)
            if gone:
                self._tx([("UPDATE owners SET version = version + 1 WHERE tenant_id = ? AND user_id = ?", key)])
            window = self._rows("SELECT seq, message FROM window WHERE tenant_id = ? AND user_id = ?", key)
            dropped = [seq for seq, message in window if drop_message(json.loads(message))]
            self._tx(("DELETE FROM window WHERE tenant_id = ? AND user_id = ? AND seq = ?", (*key, seq))
                     for seq in dropped)
            deleted, rewritten = [], []
            for seq, text in self._rows("SELECT seq, entry FROM decisions WHERE tenant_id = ? AND user_id = ?", key):
                entry = json.loads(text)
                clean = rewrite_entry(entry)
                if clean is None:
                    deleted.append(seq)
                elif clean != entry:
                    rewritten.append((json.dumps(clean, ensure_ascii=False), seq))
            self._tx(("DELETE FROM decisions WHERE seq = ?", (seq,)) for seq in deleted)
            self._tx(("UPDATE decisions SET entry = ? WHERE seq = ?", row) for row in rewritten)
            return {"records": len(gone), "window": len(dropped), "decisions": len(deleted),
                    "decisions_rewritten": len(rewritten)}


COPYABLE_TABLES = ("window", "summaries", "ingested", "audit", "decisions", "journal")
"""Tables whose rows carry no file-specific value (records do: their vector ids are keyed by the file's salt)."""


def _check_copyable(table: str) -> None:
    if table not in COPYABLE_TABLES:
        raise ValueError(f"not a copyable table: {table!r}")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


SEGMENT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
"""A Chroma segment id (a UUID): the name of the segment's folder under ``chroma/``."""


@dataclass(frozen=True)
class PendingErasure:
    """A pending-erasure record: an erasure of (tenant_id, user_id) began at ``at`` (asked by ``actor``) in the store
    whose writer lease is ``writer``, and has not ended."""

    tenant_id: str
    user_id: str
    at: float
    actor: str
    writer: str
    detail: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, row: tuple) -> "PendingErasure":
        tenant_id, user_id, at, actor, writer, detail = row
        return cls(tenant_id, user_id, float(at), actor, writer, json.loads(detail))

    @property
    def owner(self) -> tuple[str, str]:
        return (self.tenant_id, self.user_id)

    @property
    def disk_scan(self) -> bool:
        """Whether the erasure was asked to scan the disk (its completion is, too)."""
        return bool(self.detail.get("disk_scan"))

    @property
    def segments(self) -> list[str]:
        """The Chroma segment folders the owner's collection had when the erasure began (an interrupted purge may
        have deleted the collection and left them): only names of the form of a segment id, never a path."""
        return [s for s in self.detail.get("segments") or [] if isinstance(s, str) and SEGMENT_ID.fullmatch(s)]


ROOM_BYTES = 64 * 1024
"""Space the text folder keeps set aside (:class:`ErasureRoom`) for a pending-erasure record on a full disk: the
record's transaction needs SQLite's rollback journal (a header and the two or three pages it changes, about 13 KB)
and at most one new page of the file."""
ROOM_NAME = "erasure-room"


class ErasureRoom:
    """A file of :data:`ROOM_BYTES` (zeros, allocated on the disk) in the text folder, shared by the folder's stores,
    given back when a pending-erasure record cannot be written for want of space, so that the record can be. It
    is taken again whenever the disk has the room: at a store's opening and after each erasure."""

    def __init__(self, folder: Path | None) -> None:
        self.path = None if folder is None else folder / ROOM_NAME

    def keep(self) -> bool:
        """Set the room aside if it is not (best effort: False when the disk cannot take it now; never raises)."""
        if self.path is None:
            return False
        try:
            if self.path.stat().st_size >= ROOM_BYTES:
                return True
        except OSError:
            pass
        part = self.path.with_name(f".{ROOM_NAME}-{uuid.uuid4().hex}")
        try:
            with open(part, "xb") as f:
                allocate = getattr(os, "posix_fallocate", None)
                if allocate is not None:
                    allocate(f.fileno(), 0, ROOM_BYTES)
                else:  # pragma: no cover - not Linux: zeros written take the room as well
                    f.write(bytes(ROOM_BYTES))
                f.flush()
                os.fsync(f.fileno())
            os.replace(part, self.path)
            return True
        except OSError:
            part.unlink(missing_ok=True)
            return False

    def release(self) -> bool:
        """Give the room back to the disk; False when there was none to give."""
        if self.path is None:
            return False
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True


class WriterLease:
    """This process's claim on the plans it journals: an exclusive ``flock`` on ``folder/<token>.lock`` held
    for the TextStore's life. The kernel drops it when the process dies, however it dies, which is how
    another process tells a crashed writer's plans (roll them forward) from a live writer's (leave them)."""

    def __init__(self, folder: Path | None) -> None:
        self.token = uuid.uuid4().hex
        self.folder = folder
        self._file = None
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            self._file = open(folder / f"{self.token}.lock", "w")  # noqa: SIM115 - held for the store's life
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def alive(self, token: str) -> bool:
        """Whether the writer of ``token`` still holds its lease (this process's own lease counts as gone:
        a store reopened in the same process recovers what its predecessor left)."""
        if self.folder is None or not token or token == self.token:
            return False
        path = self.folder / f"{token}.lock"
        try:
            with open(path, "r") as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except FileNotFoundError:
            return False
        except BlockingIOError:
            return True
        path.unlink(missing_ok=True)  # its writer is gone: the lease file is litter
        return False

    def release(self) -> None:
        if self._file is not None and not self._file.closed:
            assert self.folder is not None  # the lease file is only ever opened inside the folder
            self._file.close()
            (self.folder / f"{self.token}.lock").unlink(missing_ok=True)


def _after(step: Callable[[], None]) -> None:
    """Run an after-commit step; its failure is logged, never raised (the transaction has committed)."""
    try:
        step()
    except Exception:  # noqa: BLE001 - a cache left behind is reloaded by version; a raised commit would roll back
        log.exception("after-commit step %r failed", step)
