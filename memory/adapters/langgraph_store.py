"""A LangGraph ``BaseStore`` over the governed engine: what an agent puts is written through the operating point's
write path, and what it searches is recalled with the operating point's threshold, so a search returns only items
above the threshold (never k items because k were asked for).

Build it from an operating point (a study's answer: :mod:`memory.eval.operating_point`) and give it to a graph::

    store = GovernedStore("operating-point.json", tenant="acme", location=StoreLocation(data_dir=Path("data")))
    graph = builder.compile(store=store)          # nodes get it as their ``store`` argument or get_store()

**Namespaces.** A namespace is ``(user_id, *rest)`` within the store's tenant: the label at index ``user_at``
(default 0, LangGraph's own ``(user_id, "memories")``; pass ``user_at=1`` for LangMem's ``("memories", user_id)``)
names the user. Every label follows the library's identifier rules (:func:`memory.core.schema.validate_identifier`:
a plain non-empty string without surrounding whitespace or control/format characters, at most 256 characters, kept
in NFC form) as well as LangGraph's (no period). The tenant comes from the store's configuration only: no namespace
or value can name another one. With ``tenant_at=i`` the label at ``i`` must be the store's tenant (for
``(tenant, user, ...)`` layouts), and with ``user="alice"`` every namespace must name that user; a namespace that
breaks a rule raises :class:`NamespaceError` and nothing is read or written. A read names its user: a search prefix
or a ``list_namespaces`` prefix must reach the user label (unless the store is pinned to a user).

**Items.** ``put(namespace, key, value)`` writes the value's text through the write path for that (tenant, user):
the value's ``"content"`` field, else its ``"text"`` field (a string as it is, anything else as JSON), else the JSON
of the whole value; ``index=[paths]`` takes the text at those paths instead, and ``index=False`` stores the item
unsearchable (``get`` and listing still return it). The key is the message id. The whole value (stored as JSON, as
LangGraph's Postgres store does: a tuple comes back as a list) and the item's times are kept in the owner's decision
log (:meth:`MemoryManager.decisions`), one entry per put or delete, in the same journaled write as the
retirements, so ``erase_user`` removes them with everything else of the user. Putting a key again replaces the item:
the old version's records that no other item holds are deprecated, and when one record replaces one (a raw turn, or
a fact the write path did not chain itself) the new one ``supersedes`` the old at version + 1 (``superseded_by``
links back); on the ``facts`` write path an ``update`` decision chains the facts as it always does. A put whose text
did not change writes no new record (only the value). ``created_at`` is the first put of the item (kept when it is
replaced, as LangGraph's Postgres store keeps it), ``updated_at`` the last.

**Replaced and deleted items leave nothing on disk.** Once a put or a delete is written (journaled), what the item's
old version held goes completely (:meth:`MemoryManager.delete_records`): its records that no item holds any more
(text-store rows, vectors, and on an embedded store Chroma's own rows and index files), its message in the recent
window and the summary, the write path's decisions about it, and the item's earlier log entries (the old value);
the log keeps the item's latest entry only (for a delete, one without value or text). So after ``delete`` or a second
``put`` no file of the data folder holds the old text. The cost: on an embedded store the user's collection is made
again without the removed vectors (the user's vectors, not the store's: a delete of one record took 0.6 s for a
user of 10 or of 1,000 MiniLM records, 0.2 s and 3.9 s with the 4,096-dimension lexical embedder, on this machine),
and one read of the text file. A replacing
record keeps the count of versions (``version`` + 1); the replaced one is gone, so no chain links to it.

**Values** are JSON objects of at most ``max_message_chars`` characters of JSON, nested at most MAX_DEPTH deep, with
integers within +-(2**63 - 1) and finite numbers (as a JSON column of Postgres or SQLite keeps them): anything else is
an :class:`~memory.core.errors.InputError` of one line that names the item and the path of the field, and nothing of
the batch is written. A stored value never breaks a filter: a comparison that cannot be made is false.

**Search.** With a query: governed recall (threshold, composite score, ``top_k``, token budget of the operating
point) over the records of the items under the prefix that match the filter; ``score`` is the composite score;
``limit`` and ``offset`` page within the governed list, so a search never returns more than ``top_k`` items and never
an item below the threshold (InMemoryStore returns the top ``limit`` whatever their similarity, and unindexed items
after them): what an agent puts into a prompt from a search is what governance admitted. :meth:`GovernedStore.recall` gives the same recall with every dropped candidate's reason. Without a
query: the items under the prefix that match the filter, in the order they were first put, paged. ``filter`` matches
value fields as InMemoryStore does (equality, nested dicts, ``$eq $ne $gt $gte $lt $lte``).

Batches behave as InMemoryStore's: reads see the store as it was before the batch, then the batch's puts are applied
(the last put of a (namespace, key) wins). ``abatch`` runs ``batch`` in a thread. TTLs are not supported.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore, GetOp, InvalidNamespaceError, Item, ListNamespacesOp, MatchCondition, Op, PutOp, Result, SearchItem,
    SearchOp, get_text_at_path, validate_op_namespace,
)

from memory import (
    Candidates, Change, Embedder, IdentifierError, IngestFailed, Ingestor, InputError, MemoryManager, Message,
    RecallResult, Retire, StoreLocation, Supersede, govern, memory_id_for, validate_identifier, validate_text,
)
from memory.eval import OperatingPoint, load_operating_point

KIND = "langgraph.item"
"""The ``kind`` of the decision-log entries this store writes (one per put or delete of an item)."""
MESSAGE_KEY = "langgraph.item"
"""Their ``message_key``: never a message's identity, so the write path's replay of a message skips them."""
TEXT_FIELDS = ("content", "text")
"""The value fields whose text is written, in this order (the JSON of the whole value when neither is there)."""

MAX_DEPTH = 32
"""How deeply a value may nest (objects and arrays); a deeper one is refused before it is serialised."""
MAX_INT = 2**63 - 1
"""Integers in a value must lie within +-MAX_INT (a JSON column's 64-bit integers); a larger one is refused."""

Owner = tuple[str, str]
ItemKey = tuple[tuple[str, ...], str]
_Value = tuple[dict[str, Any] | None, str | None]
"""A put's value as stored (None: a delete) and the text written through the write path (None: not searchable)."""


class NamespaceError(IdentifierError, InvalidNamespaceError):
    """A namespace that names another tenant, another user than the store's, or an invalid user or label."""


@dataclass(frozen=True)
class _Live:
    """An item as its latest put left it."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    text: str | None
    """What was written through the write path (None: not searchable)."""
    memory_ids: tuple[str, ...]
    """The records that hold the item's text (a raw record, or the facts the write path kept)."""
    created_at: float
    updated_at: float
    order: int
    """Listing order: the ``first`` of this lifetime's first put (its position in the log for entries without it)."""
    session: str = ""
    """The session of the message that wrote ``text`` ("" when none): with the key, the message's identity."""
    revision: int = 0


@dataclass
class _Write:
    """One put or delete of a batch, on its way into the log."""

    namespace: tuple[str, ...]
    key: str
    op: Literal["put", "delete"]
    revision: int
    prev: _Live | None
    value: dict[str, Any] | None = None
    text: str | None = None
    memory_ids: tuple[str, ...] = ()
    message: Message | None = None
    """The message written through the write path (None when nothing new is written)."""
    created_at: float = 0.0
    session: str = ""
    """The session of the message that holds the item's text (the new message's, or the previous one's)."""
    first: int = 0
    """Listing order (kept from the previous put of the item)."""


class GovernedStore(BaseStore):
    """LangGraph's ``BaseStore`` over a :class:`MemoryManager` built from an operating point (see the module).

    Args:
        point: an :class:`OperatingPoint`, or the path of an operating-point file; None: the defaults.
        tenant: the only tenant this store reads and writes (an identifier).
        location: where the memory lives; default :meth:`StoreLocation.from_env` (the data folder).
        workspace: the workspace (one per application sharing a data folder).
        embedder: the point's model, already loaded (it must be the model the point names).
        user_at: index of the namespace label that names the user (0 or more).
        tenant_at: index of a label that must be the store's tenant, or None (namespaces do not name tenants).
        user: pin the store to one user: every namespace must name it.
    """

    def __init__(self, point: OperatingPoint | str | Path | None = None, *, tenant: str,
                 location: StoreLocation | None = None, workspace: str = "langgraph", embedder: Embedder | None = None,
                 user_at: int = 0, tenant_at: int | None = None, user: str | None = None) -> None:
        for name, index in (("user_at", user_at), ("tenant_at", tenant_at)):
            if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
                raise InputError(f"{name} must be a whole number >= 0, got {index!r}")
        if tenant_at is not None and tenant_at == user_at:
            raise InputError(f"tenant_at and user_at must be different labels, both are {user_at}")
        self.tenant = validate_identifier(tenant, "tenant")
        self.user = None if user is None else validate_identifier(user, "user")
        self.user_at = user_at
        self.tenant_at = tenant_at
        if point is None:
            point = OperatingPoint()
        elif not isinstance(point, OperatingPoint):
            point = load_operating_point(point)
        self.point: OperatingPoint = point
        manager, ingestor = point.open(location=location or StoreLocation.from_env(), workspace=workspace,
                                       embedder=embedder)
        self.manager: MemoryManager = manager
        self.ingestor: Ingestor | None = ingestor
        self._lock = threading.RLock()  # one batch's writes at a time: a put reads the log, then appends to it

    # --- the interface ------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:
            if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
                raise ValueError(f"Unknown operation type: {type(op)}")
            validate_op_namespace(op)
        results: list[Result] = []
        puts: dict[ItemKey, tuple[str, PutOp, _Value]] = {}
        for op in ops:  # reads see the store as it was before the batch (as InMemoryStore's do)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                user, namespace, key = self._put_target(op)
                puts.pop((namespace, key), None)
                puts[(namespace, key)] = (user, op, self._value(op, key))  # the last put of an item wins
                results.append(None)
        by_user: dict[str, list[tuple[tuple[str, ...], str, _Value]]] = {}  # every put checked: now write
        for (namespace, key), (user, op, value) in puts.items():
            by_user.setdefault(user, []).append((namespace, key, value))
        for user, mine in by_user.items():
            self._write(user, mine)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # --- beyond the interface -------------------------------------------------
    def recall(self, namespace_prefix: tuple[str, ...], query: str, *, filter: dict[str, Any] | None = None,
               reinforce: bool = False) -> RecallResult:
        """What ``search(namespace_prefix, query=query, filter=filter)`` ranks: governed recall over the records of
        the items under the prefix that match the filter, with the stage and reason of every dropped candidate."""
        user, prefix = self._owner(tuple(namespace_prefix), prefix=True)
        live = self._select(self._state(user)[0], prefix, filter)
        return self._recall(user, live, query, reinforce=reinforce)

    def close(self) -> None:
        """Stop the write path's worker and close the store's files."""
        if self.ingestor is not None:
            self.ingestor.close()
        self.manager.close()

    def __enter__(self) -> "GovernedStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- namespaces -----------------------------------------------------------
    def _owner(self, namespace: tuple[str, ...], *, prefix: bool = False) -> tuple[str, tuple[str, ...]]:
        """The user a namespace (or a search prefix) names, and the namespace in stored (NFC) form."""
        if not isinstance(namespace, tuple):
            raise NamespaceError(f"a namespace is a tuple of strings, got {type(namespace).__name__}")
        labels = tuple(self._label(label, i, namespace) for i, label in enumerate(namespace))
        self._check_tenant(labels)
        if len(labels) > self.user_at:
            return self._check_user(labels[self.user_at], labels), labels
        if prefix and self.user is not None:
            return self.user, labels
        what = "a search prefix" if prefix else "a namespace"
        raise NamespaceError(f"{what} names its user at label {self.user_at} (user_at); {_shown(namespace)} has "
                             f"{len(labels)} label(s)")

    @staticmethod
    def _label(label: Any, i: int, namespace: tuple[Any, ...]) -> str:
        try:
            return validate_identifier(label, f"label {i}")
        except IdentifierError as exc:
            raise NamespaceError(f"namespace {_shown(namespace)}: {exc}") from None

    def _check_tenant(self, path: tuple[str, ...]) -> None:
        """With ``tenant_at``: the label there (when the path reaches it and it is not "*") is this store's tenant."""
        at = self.tenant_at
        if at is None or len(path) <= at or path[at] == "*":
            return
        if self._label(path[at], at, path) != self.tenant:
            raise NamespaceError(f"namespace {_shown(path)} names tenant {path[at]!r} at label {at}; this store "
                                 f"serves tenant {self.tenant!r} only")

    def _check_user(self, label: str, path: tuple[str, ...]) -> str:
        user = self._label(label, self.user_at, path)
        if self.user is not None and user != self.user:
            raise NamespaceError(f"namespace {_shown(path)} names user {user!r}; this store serves user "
                                 f"{self.user!r} only")
        return user

    def _put_target(self, op: PutOp) -> tuple[str, tuple[str, ...], str]:
        if not op.namespace:
            raise NamespaceError("Namespace cannot be empty.")
        if op.namespace[0] == "langgraph":
            raise NamespaceError(f'Root label for namespace cannot be "langgraph". Got: {_shown(op.namespace)}')
        if op.ttl is not None:
            raise NotImplementedError(f"TTL is not supported by {type(self).__name__}; set ttl=None")
        user, namespace = self._owner(tuple(op.namespace))
        return user, namespace, validate_identifier(op.key, "key")

    # --- reads ------------------------------------------------------------------
    def _state(self, user: str, key: str | None = None) -> tuple[dict[ItemKey, _Live], dict[ItemKey, int]]:
        """The user's live items (of one key, with ``key``) and how many puts and deletes each item has had."""
        entries = self.manager.decisions(tenant_id=self.tenant, user_id=user, message_id=key)
        live: dict[ItemKey, _Live] = {}
        revisions: dict[ItemKey, int] = {}
        for position, e in enumerate(entries):
            if e.get("kind") != KIND:
                continue
            ik = (tuple(e["namespace"]), e["key"])
            revision = int(e["revision"])
            revisions[ik] = max(revisions.get(ik, 0), revision)
            if e["op"] == "delete":
                live.pop(ik, None)
                continue
            prev = live.get(ik)
            if "session" in e:
                session = str(e["session"])
            elif prev is not None and prev.text == e["text"]:  # a log written before sessions were logged
                session = prev.session
            else:
                session = _session(ik[0], revision) if e["text"] is not None else ""
            order = int(e.get("first", prev.order if prev else position))
            live[ik] = _Live(ik[0], ik[1], e["value"], e["text"], tuple(e["memory_ids"]), float(e["created_at"]),
                             float(e["updated_at"]), order, session, revision)
        return live, revisions

    def _get(self, op: GetOp) -> Item | None:
        user, namespace = self._owner(tuple(op.namespace))
        key = validate_identifier(op.key, "key")
        found = self._state(user, key)[0].get((namespace, key))
        return None if found is None else _item(found)

    @staticmethod
    def _select(live: dict[ItemKey, _Live], prefix: tuple[str, ...], filter: dict[str, Any] | None) -> list[_Live]:
        n = len(prefix)
        chosen = [it for it in live.values() if it.namespace[:n] == prefix
                  and all(_matches(it.value.get(k), v) for k, v in (filter or {}).items())]
        return sorted(chosen, key=lambda it: it.order)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        user, prefix = self._owner(tuple(op.namespace_prefix), prefix=True)
        live = self._select(self._state(user)[0], prefix, op.filter)
        start, stop = max(op.offset, 0), max(op.offset, 0) + max(op.limit, 0)
        if not op.query:
            return [_search_item(it, None) for it in live[start:stop]]
        result = self._recall(user, live, op.query, reinforce=True)
        holders: dict[str, list[_Live]] = {}
        for it in live:
            for mid in it.memory_ids:
                holders.setdefault(mid, []).append(it)
        best: dict[ItemKey, tuple[float, _Live]] = {}
        for hit in result.governed:  # an item scores as its best governed record
            for it in holders.get(hit.record.memory_id, ()):
                ik = (it.namespace, it.key)
                if ik not in best or hit.score > best[ik][0]:
                    best[ik] = (hit.score, it)
        ranked = sorted(best.values(), key=lambda si: (-si[0], si[1].order))
        return [_search_item(it, score) for score, it in ranked[start:stop]]

    def _recall(self, user: str, live: list[_Live], query: str, *, reinforce: bool) -> RecallResult:
        """Governed recall of one user, its pool narrowed to the records of ``live`` before it is ranked (so
        ``top_k`` counts these items' records only)."""
        manager = self.manager
        cands = manager.candidates(query, tenant_id=self.tenant, user_id=user, include_blind=False, exact=True)
        mine = {mid for it in live for mid in it.memory_ids}
        pool = Candidates(query=cands.query, tenant_id=cands.tenant_id, user_id=cands.user_id, as_of=cands.as_of,
                          hot=[], active=[(r, s) for r, s in cands.active if r.memory_id in mine])
        result = govern(pool, manager.config, token_counter=manager.token_counter)
        if reinforce and result.governed:
            manager.reinforce(result.governed, at=result.as_of)
        return result

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = [MatchCondition(c.match_type, tuple(p if p == "*" else self._label(p, i, tuple(c.path))
                                                         for i, p in enumerate(c.path)))
                      for c in op.match_conditions or ()]
        user = self.user
        for cond in conditions:
            path = tuple(cond.path)
            if cond.match_type != "prefix":
                continue
            self._check_tenant(path)
            if len(path) > self.user_at and path[self.user_at] != "*":
                user = self._check_user(path[self.user_at], path)
        if user is None:
            raise NamespaceError(f"list_namespaces reads one user's namespaces: give a prefix that names the user "
                                 f"at label {self.user_at} (user_at), or pin the store to a user")
        namespaces = {it.namespace for it in self._state(user)[0].values()}
        chosen = [ns for ns in namespaces if all(_path_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset : op.offset + op.limit]

    # --- writes -------------------------------------------------------------------
    def _value(self, op: PutOp, key: str) -> _Value:
        """A put's value as it is stored and its text (None, None for a delete); InputError when unusable."""
        if op.value is None:
            return None, None
        value = _json_value(op.value, key, self.manager.config.max_message_chars)
        text = item_text(value, op.index)
        if text is not None:
            validate_text(text, f"item {key!r} text", max_chars=self.manager.config.max_message_chars)
        return value, text

    def _write(self, user: str, ops: list[tuple[tuple[str, ...], str, _Value]]) -> None:
        """Apply one user's puts and deletes: new texts through the write path, then the retirements and the log
        entries in one journaled write."""
        manager, owner = self.manager, (self.tenant, user)
        with self._lock:
            epochs = manager.epochs([owner])
            live, revisions = self._state(user)
            now = manager.clock()
            first = max((it.order for it in live.values()), default=-1)  # a new item lists after every live one
            planned = [self._plan(user, namespace, key, put, live.get((namespace, key)),
                                  revisions.get((namespace, key), 0) + 1, now, first + 1 + i)
                       for i, (namespace, key, put) in enumerate(ops)]
            writes = [w for w in planned if w is not None]
            failure = self._write_texts([w for w in writes if w.message is not None])
            if failure is not None:
                failed = {memory_id_for(m) for m, _ in failure.failures}
                writes = [w for w in writes if w.message is None or memory_id_for(w.message) not in failed]
            after = dict(live)
            for w in writes:
                if w.op == "delete":
                    after.pop((w.namespace, w.key), None)
                else:
                    after[(w.namespace, w.key)] = _Live(w.namespace, w.key, w.value or {}, w.text, w.memory_ids,
                                                        w.created_at, now, 0)
            before = {mid for it in live.values() for mid in it.memory_ids}
            held = {mid for it in after.values() for mid in it.memory_ids}
            with manager.writing():  # the retirements, the log and the removal of the old: nothing falls between
                manager.revise(self._retirements(writes, before, held), tenant_id=self.tenant, user_id=user,
                               log=[(w.key, now, self._entry(user, w, now)) for w in writes], epochs=epochs)
                self._forget_old(user, writes, sorted(before - held))
        if failure is not None:
            raise failure

    def _forget_old(self, user: str, writes: list[_Write], gone: list[str]) -> None:
        """What the batch's replaced and deleted items held, removed completely (the write is journaled already,
        so a crash here leaves the old text, never loses the new): the records no item holds any more, each old
        version's message (window, summary, the write path's decisions) and the items' earlier log entries."""
        old = [w for w in writes if w.prev is not None]
        if not old:
            return
        messages = [Message(tenant_id=self.tenant, user_id=user, content=w.prev.text, id=w.key,
                            session_id=w.prev.session, timestamp=w.prev.updated_at)
                    for w in old if w.prev is not None and w.prev.text is not None and w.prev.session
                    and (w.op == "delete" or w.message is not None)]  # not when the text stays (the same message)
        latest = {(w.namespace, w.key): w.revision for w in old}

        def stale(entry: dict[str, Any]) -> bool:  # an earlier log entry of a written item
            if entry.get("kind") != KIND:
                return False
            revision = latest.get((tuple(entry.get("namespace") or ()), str(entry.get("key"))))
            return revision is not None and int(entry.get("revision", 0)) < revision

        self.manager.delete_records(gone, tenant_id=self.tenant, user_id=user, messages=messages, entries=stale,
                                    actor="langgraph")

    def _plan(self, user: str, namespace: tuple[str, ...], key: str, put: _Value, prev: _Live | None, revision: int,
              now: float, first: int) -> _Write | None:
        value, text = put
        if value is None:
            return None if prev is None else _Write(namespace, key, "delete", revision, prev, created_at=now)
        w = _Write(namespace, key, "put", revision, prev, value, text, created_at=prev.created_at if prev else now,
                   first=prev.order if prev else first)
        if text is not None and prev is not None and prev.text == text:
            w.memory_ids = prev.memory_ids  # the same text: nothing new to remember, only the value changed
            w.session = prev.session
        elif text is not None:
            w.session = _session(namespace, revision)
            w.message = Message(tenant_id=self.tenant, user_id=user, content=text, id=key, session_id=w.session,
                                timestamp=now)
        return w

    def _write_texts(self, writes: list[_Write]) -> IngestFailed | None:
        """Write the new texts through the operating point's write path; set each write's records."""
        if not writes:
            return None
        messages = [w.message for w in writes if w.message is not None]
        if self.ingestor is None:
            for w, record in zip(writes, self.manager.add_many(messages)):
                w.memory_ids = (record.memory_id,)
            return None
        failure = None
        try:
            entries = self.ingestor.ingest_many(messages)
        except IngestFailed as exc:  # the others were stored: log them, then raise
            failure, entries = exc, exc.entries
        held: dict[str, list[str]] = {}
        for e in entries:
            ids = held.setdefault(e.message_key, [])
            if e.memory_id not in ids:
                ids.append(e.memory_id)
        for w in writes:
            assert w.message is not None
            w.memory_ids = tuple(held.get(memory_id_for(w.message), ()))
        return failure

    @staticmethod
    def _retirements(writes: list[_Write], before: set[str], held: set[str]) -> list[Change]:
        """What the batch retires, as the runtime's lifecycle changes (:mod:`memory.runtime.versions`). ``before``:
        the records items held before the batch; ``held``: after it. A replaced item's records no item holds any more
        are retired; when one record replaces one (a raw turn, or a single fact the write path did not chain itself),
        the new one supersedes the old without a link (it counts the versions; the old one is removed next,
        :meth:`_forget_old`). A deleted item's records are retired to the archive (no read returns them, should their
        removal not happen)."""
        changes: list[Change] = []
        for w in writes:
            if w.prev is None:
                continue
            gone = [mid for mid in w.prev.memory_ids if mid not in held]
            changes += [Retire(mid, archive=w.op == "delete") for mid in gone]
            if w.op == "put" and len(gone) == 1 and len(w.memory_ids) == 1 and w.memory_ids[0] not in before:
                changes.append(Supersede(gone[0], w.memory_ids[0], link=False))
        return changes

    def _entry(self, user: str, w: _Write, now: float) -> dict[str, Any]:
        return {
            "kind": KIND, "message_key": MESSAGE_KEY, "tenant_id": self.tenant, "user_id": user, "message_id": w.key,
            "op": w.op, "namespace": list(w.namespace), "key": w.key, "revision": w.revision, "value": w.value,
            "text": w.text, "fact": w.text or "", "memory_ids": list(w.memory_ids), "created_at": w.created_at,
            "updated_at": now, "session": w.session, "first": w.first,
        }


def item_text(value: Mapping[str, Any], index: Literal[False] | list[str] | None = None) -> str | None:
    """The text of a value that is written through the write path (None: the item is not searchable).

    ``index=False``: None. ``index=[paths]``: the texts at those paths (LangGraph's path syntax), one per line.
    Otherwise the ``content`` field, else the ``text`` field (a string as it is, anything else as JSON), else the
    JSON of the whole value.
    """
    if index is False:
        return None
    if index:
        texts = [t for path in index for t in get_text_at_path(value, path) if t.strip()]
        return "\n".join(texts) if texts else None
    for name in TEXT_FIELDS:
        field = value.get(name)
        if isinstance(field, str) and field.strip():
            return field
        if field is not None and not isinstance(field, str):
            return json.dumps(field, ensure_ascii=False, sort_keys=True)
    return json.dumps(dict(value), ensure_ascii=False, sort_keys=True)


def _session(namespace: tuple[str, ...], revision: int) -> str:
    """The session of the message an item's put writes: one per (namespace, revision)."""
    return "lg-" + hashlib.sha1(json.dumps([list(namespace), revision], ensure_ascii=False).encode("utf-8")
                                ).hexdigest()[:20]


def _json_value(value: Any, key: str, max_chars: int) -> dict[str, Any]:
    """The value as it is stored and returned: its JSON form (string keys, JSON values)."""
    if not isinstance(value, Mapping):
        raise InputError(f"item {key!r}: the value must be a mapping, got {type(value).__name__}")
    _check_shape(value, key, max_chars)
    try:
        text = json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(f"item {key!r}: the value must be JSON (string keys, JSON values): {exc}") from None
    if len(text) > max_chars:
        raise InputError(f"item {key!r}: the value is {len(text):,} characters of JSON; the limit is {max_chars:,}")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _check_shape(value: Mapping[str, Any], key: str, max_chars: int) -> None:
    """Depth and numbers of a value, walked without recursion (a value 5,000 deep must not exhaust the stack), at
    most about ``max_chars`` nodes (each is at least a character of the JSON the size check counts afterwards)."""
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    seen = 0
    while stack:
        node, path, depth = stack.pop()
        seen += 1
        if seen > max_chars:
            raise InputError(f"item {key!r}: the value has more than {max_chars:,} fields and elements; the limit "
                             f"is {max_chars:,} characters of JSON")
        if isinstance(node, bool) or node is None or isinstance(node, str):
            continue
        if isinstance(node, int):
            if not -MAX_INT <= node <= MAX_INT:
                raise InputError(f"item {key!r}: value{path or ''} is an integer of {_digits(node)} digits; integers "
                                 f"must lie within +-(2**63 - 1)")
            continue
        if isinstance(node, float):
            if not math.isfinite(node):
                raise InputError(f"item {key!r}: value{path} is {node!r}; numbers must be finite")
            continue
        if isinstance(node, (Mapping, list, tuple)):
            if depth > MAX_DEPTH:
                raise InputError(f"item {key!r}: value{_cut(path)} nests deeper than {MAX_DEPTH} levels")
            children = node.items() if isinstance(node, Mapping) else enumerate(node)
            for name, child in children:
                step = f"[{name}]" if isinstance(node, (list, tuple)) else f"[{_shown_key(name)}]"
                stack.append((child, path + step if len(path) < 200 else path, depth + 1))


def _digits(n: int) -> str:
    """How many decimal digits ``n`` has, without converting it (Python refuses to print 5,000 digits)."""
    return f"{len(str(abs(n))):,}" if n.bit_length() < 10_000 else f"about {int(n.bit_length() * 0.30103):,}"


def _shown_key(name: Any) -> str:
    return ascii(name)[:40] if isinstance(name, str) else f"<{type(name).__name__} key>"


def _cut(path: str) -> str:
    return path if len(path) <= 120 else path[:117] + "..."


def _item(it: _Live) -> Item:
    return Item(value=it.value, key=it.key, namespace=it.namespace, created_at=_time(it.created_at),
                updated_at=_time(it.updated_at))


def _search_item(it: _Live, score: float | None) -> SearchItem:
    return SearchItem(it.namespace, it.key, it.value, _time(it.created_at), _time(it.updated_at), score=score)


def _time(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def _shown(namespace: Any) -> str:
    """A namespace for an error message: printable, one line, at most 160 characters."""
    return ascii(namespace)[:160]


def _path_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether a namespace matches a list_namespaces condition ("*" matches any label)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    if condition.match_type not in ("prefix", "suffix"):
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(p == "*" or p == label for p, label in zip(path, part))


def _matches(value: Any, wanted: Any) -> bool:
    """A value field against a filter value: equality, nested dicts, lists element-wise, ``$`` operators."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(value, op, arg) for op, arg in wanted.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return isinstance(value, (list, tuple)) and len(value) == len(wanted) and all(
            _matches(a, b) for a, b in zip(value, wanted))
    return bool(value == wanted)


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"Unsupported operator: {op}")
    a, b = _number(value), _number(arg)
    if a is None or b is None:  # not comparable (a value stored before the limits: a huge number, a string)
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _number(value: Any) -> int | float | None:
    """A filter operand as a number, compared exactly (an int of any size against a float is exact in Python, where
    ``float()`` of a 400-digit integer raises OverflowError); a numeric string as InMemoryStore's ``float()`` reads
    it; None when it is no number."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return value if not (isinstance(value, float) and math.isnan(value)) else None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if math.isnan(number) else number
