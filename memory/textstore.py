"""TextStore: the one place raw text lives (record contents, recent windows, summaries, audit log).

Chroma holds vectors and filterable metadata only. Raw text is kept here, in
SQLite with ``secure_delete`` on and a VACUUM after every erasure, so erased
text is overwritten in the file rather than left in free pages: a plain Chroma
``delete`` (even after ``chroma vacuum``) leaves the document's text in
``chroma.sqlite3``, so documents never go there.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

_SCHEMA = """
CREATE TABLE IF NOT EXISTS texts (
    memory_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, user_id TEXT NOT NULL,
    content TEXT NOT NULL, extras TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS texts_owner ON texts (tenant_id, user_id);
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
    seq INTEGER PRIMARY KEY AUTOINCREMENT, plan TEXT NOT NULL
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
"""


class TextStore:
    """Thread-safe SQLite store for every piece of raw text, keyed by (tenant_id, user_id)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._depth = 0
        self._db = sqlite3.connect(
            str(self.path) if self.path else ":memory:", check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA secure_delete = ON")
        self._db.execute("PRAGMA journal_mode = DELETE")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

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
                self._db.execute("ROLLBACK")
                raise
            self._depth = 0
            self._db.execute("COMMIT")

    def _tx(self, statements: Iterable[tuple[str, tuple]]) -> None:
        with self.transaction():
            for sql, args in statements:
                self._db.execute(sql, args)

    def _rows(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _rows_in(self, sql: str, args: tuple, ids: list[str], *, chunk: int = 500) -> list[tuple]:
        """Run ``sql`` (with ``{marks}`` for an IN list) over ``ids`` in chunks SQLite accepts."""
        out: list[tuple] = []
        for start in range(0, len(ids), chunk):
            part = ids[start : start + chunk]
            out += self._rows(sql.format(marks=",".join("?" * len(part))), (*args, *part))
        return out

    # --- record texts -----------------------------------------------------
    def put_texts(self, rows: list[tuple[str, str, str, str, dict[str, Any]]]) -> None:
        """Insert or replace (memory_id, tenant_id, user_id, content, extras) rows atomically."""
        self._tx(
            ("INSERT OR REPLACE INTO texts VALUES (?, ?, ?, ?, ?)", (m, t, u, c, json.dumps(x, ensure_ascii=False)))
            for m, t, u, c, x in rows
        )

    def get_texts(self, memory_ids: list[str]) -> dict[str, tuple[str, str, str, dict[str, Any]]]:
        """memory_id -> (tenant_id, user_id, content, extras) for the ids that exist."""
        rows = self._rows_in(
            "SELECT memory_id, tenant_id, user_id, content, extras FROM texts WHERE memory_id IN ({marks})",
            (), memory_ids,
        )
        return {m: (t, u, c, json.loads(x)) for m, t, u, c, x in rows}

    def delete_texts(self, memory_ids: list[str]) -> None:
        self._tx(("DELETE FROM texts WHERE memory_id = ?", (m,)) for m in memory_ids)

    def count_texts(self, tenant_id: str | None = None, user_id: str | None = None) -> int:
        if tenant_id is None:
            return self._rows("SELECT COUNT(*) FROM texts")[0][0]
        return self._rows(
            "SELECT COUNT(*) FROM texts WHERE tenant_id = ? AND user_id = ?", (tenant_id, user_id)
        )[0][0]

    def owner_ids(self, tenant_id: str, user_id: str) -> list[str]:
        rows = self._rows("SELECT memory_id FROM texts WHERE tenant_id = ? AND user_id = ?", (tenant_id, user_id))
        return [r[0] for r in rows]

    # --- recent window ----------------------------------------------------
    def window(self, tenant_id: str, user_id: str) -> list[dict[str, Any]]:
        rows = self._rows(
            "SELECT message FROM window WHERE tenant_id = ? AND user_id = ? ORDER BY seq", (tenant_id, user_id)
        )
        return [json.loads(r[0]) for r in rows]

    def push_window(self, tenant_id: str, user_id: str, messages: list[dict[str, Any]], *, keep: int
                    ) -> list[dict[str, Any]]:
        """Append messages in order; pop and return the oldest ones beyond ``keep`` (the same ones, in the same
        order, as pushing them one by one would), atomically."""
        with self.transaction():
            current = self.window(tenant_id, user_id)
            seq = self._rows(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM window WHERE tenant_id = ? AND user_id = ?",
                (tenant_id, user_id),
            )[0][0]
            current += messages
            overflow = current[: max(len(current) - keep, 0)]
            statements = [
                ("INSERT INTO window VALUES (?, ?, ?, ?)",
                 (tenant_id, user_id, seq + i, json.dumps(message, ensure_ascii=False)))
                for i, message in enumerate(messages)
            ]
            if overflow:
                statements.append((
                    "DELETE FROM window WHERE tenant_id = ? AND user_id = ? AND seq IN "
                    "(SELECT seq FROM window WHERE tenant_id = ? AND user_id = ? ORDER BY seq LIMIT ?)",
                    (tenant_id, user_id, tenant_id, user_id, len(overflow)),
                ))
            self._tx(statements)
            return overflow

    # --- summaries ----------------------------------------------------------
    def summary(self, tenant_id: str, user_id: str) -> tuple[str, list[str]]:
        rows = self._rows("SELECT text, source_ids FROM summaries WHERE tenant_id = ? AND user_id = ?", (tenant_id, user_id))
        return (rows[0][0], json.loads(rows[0][1])) if rows else ("", [])

    def set_summary(self, tenant_id: str, user_id: str, text: str, source_ids: list[str]) -> None:
        self._tx([(
            "INSERT OR REPLACE INTO summaries VALUES (?, ?, ?, ?)",
            (tenant_id, user_id, text, json.dumps(source_ids, ensure_ascii=False)),
        )])

    # --- owners -------------------------------------------------------------
    def owners(self) -> list[tuple[str, str]]:
        """Every (tenant_id, user_id) with anything stored here."""
        rows = self._rows(
            "SELECT tenant_id, user_id FROM texts UNION SELECT tenant_id, user_id FROM window "
            "UNION SELECT tenant_id, user_id FROM summaries ORDER BY 1, 2"
        )
        return [(t, u) for t, u in rows]

    def erase_owner(self, tenant_id: str, user_id: str) -> dict[str, int]:
        """Delete every row of one (tenant, user) in one transaction, then VACUUM; return counts removed."""
        with self._lock:
            counts = {
                "long_term_text": self.count_texts(tenant_id, user_id),
                "recent_window": len(self.window(tenant_id, user_id)),
                "summary": 1 if self.summary(tenant_id, user_id)[0] else 0,
                "decision_log": self.count_decisions(tenant_id, user_id),
            }
            key = (tenant_id, user_id)
            self._tx([
                ("DELETE FROM texts WHERE tenant_id = ? AND user_id = ?", key),
                ("DELETE FROM window WHERE tenant_id = ? AND user_id = ?", key),
                ("DELETE FROM summaries WHERE tenant_id = ? AND user_id = ?", key),
                ("DELETE FROM decisions WHERE tenant_id = ? AND user_id = ?", key),
                ("DELETE FROM ingested WHERE tenant_id = ? AND user_id = ?", key),
            ])
            self.compact()
            return counts

    def compact(self) -> None:
        """VACUUM: rebuild the file so no free page keeps old bytes."""
        with self._lock:
            self._db.execute("VACUUM")

    # --- ingestion marks and the write journal -------------------------------
    def ingested(self, tenant_id: str, user_id: str, message_ids: list[str]) -> set[str]:
        """Which of these messages of one owner are fully ingested (the commit mark of the write path)."""
        rows = self._rows_in(
            "SELECT message_id FROM ingested WHERE tenant_id = ? AND user_id = ? AND message_id IN ({marks})",
            (tenant_id, user_id), message_ids,
        )
        return {r[0] for r in rows}

    def mark_ingested(self, rows: list[tuple[str, str, str]]) -> None:
        self._tx(("INSERT OR IGNORE INTO ingested VALUES (?, ?, ?)", r) for r in rows)

    def journal_put(self, plan: dict[str, Any]) -> int:
        """Record a write plan before any of it is applied; returns its sequence number."""
        with self._lock:
            self._tx([("INSERT INTO journal (plan) VALUES (?)", (json.dumps(plan, ensure_ascii=False),))])
            return self._rows("SELECT MAX(seq) FROM journal")[0][0]

    def journal_done(self, seq: int) -> None:
        self._tx([("DELETE FROM journal WHERE seq = ?", (seq,))])

    def journal_pending(self) -> list[tuple[int, dict[str, Any]]]:
        """Plans recorded but not finished (a crash happened while applying them), oldest first."""
        return [(seq, json.loads(plan)) for seq, plan in self._rows("SELECT seq, plan FROM journal ORDER BY seq")]

    # --- audit --------------------------------------------------------------
    def audit(self, action: str, tenant_id: str, user_id: str, *, actor: str, detail: dict[str, Any]) -> None:
        """Record that something happened; callers must not put erased content in ``detail``."""
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

    # --- write-path decision log --------------------------------------------
    def add_decisions(self, rows: list[tuple[str, str, str, float, dict[str, Any]]]) -> None:
        """Append (tenant_id, user_id, message_id, at, entry) rows atomically; entries hold fact texts,
        so they live here, where erasure overwrites them."""
        self._tx(
            ("INSERT INTO decisions (tenant_id, user_id, message_id, at, entry) VALUES (?, ?, ?, ?, ?)",
             (t, u, m, float(at), json.dumps(e, ensure_ascii=False)))
            for t, u, m, at, e in rows
        )

    def decisions(self, tenant_id: str, user_id: str, *, message_id: str | None = None) -> list[dict[str, Any]]:
        """One (tenant, user)'s decision-log entries, oldest first (optionally of one message)."""
        sql = "SELECT entry FROM decisions WHERE tenant_id = ? AND user_id = ?"
        args: tuple = (tenant_id, user_id)
        if message_id is not None:
            sql += " AND message_id = ?"
            args += (message_id,)
        return [json.loads(r[0]) for r in self._rows(sql + " ORDER BY seq", args)]

    def count_decisions(self, tenant_id: str | None = None, user_id: str | None = None) -> int:
        if tenant_id is None:
            return self._rows("SELECT COUNT(*) FROM decisions")[0][0]
        return self._rows(
            "SELECT COUNT(*) FROM decisions WHERE tenant_id = ? AND user_id = ?", (tenant_id, user_id)
        )[0][0]
