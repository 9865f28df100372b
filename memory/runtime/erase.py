"""erase_user across every path, then a verification that re-queries each path.

Paths: the recent window, the summary, the long-term records (TextStore) and the owner's vector
collection (Chroma; on an embedded store also Chroma's own rows and index folders), the write path's
decision log, ingestion marks, pending write plans in the journal, the owner registry, recall
(querying with the user's own texts), the query-embedding cache and, with ``disk_scan``, the bytes of
every file in the data folder (the user's texts, vector ids and vectors searched as canaries).

The deletes cost what the user owns (the user's rows are found by an indexed owner key and the user's
collection is dropped whole) and are the only part that holds the manager's write lock. The verification
runs after the lock is released, so other owners' writers wait for the deletes only; writes of the erased
owner itself wait for the verification too (:meth:`MemoryManager.apply`), so what it reports is the
erasure's result. Two checks read files whole: ``chroma_file`` searches Chroma's database file for the
user's vector ids and vectors (a linear pass; where Chroma's own page reuse left one in unused space, the
rows of the pages holding it are rewritten under the lock, or, if that does not clear it, the file is
rebuilt, and the file is searched again), and ``disk_scan`` searches every file of the data
folder for the user's texts too (the independent check that the targeted ones did not miss a copy).

The disk scan runs once per erasure, last, on the folder as the erasure leaves it (after any clearing of
Chroma's file). Its canaries are the user's texts, every vector id and up to MAX_VECTOR_PROBES vectors: about a
thousand for a user of 400 records. Each file is read once, in pieces of bounded size, and every canary looked
for in that one pass (memory.core.bytesearch: an Aho–Corasick automaton over an anchor of each canary, every
anchor occurrence compared with the whole canary). A canary found is then checked against the other owners'
texts (the same text, or its vector, held by another owner is no leak): that reads every owner's texts, so it is
done only when the scan found something. So the scan costs the folder's bytes once, at the automaton's speed,
plus one comparison per anchor occurrence; not, as before issue 28, one search of the whole folder per canary
and a read of every other owner's texts (such a user in a 13 MB folder: the scan 0.11 s, the erasure with it
0.38 s, where they took 1.2 s and 1.7 s; bench/erase_cost.py). It still reads the whole folder (3.7 s for
620 MB), so it is asked for: the lab and ``erase-audit --data-dir`` do; docs/benchmarks.md, erase_cost.

An erasure that is interrupted (a full disk, a kill, a crash) is finished later, not forgotten: before its first delete
it writes a pending-erasure record in the text store (memory/store/textstore.py: committed, so on the disk, and
writable on a disk filled to the last byte), removed only once it has run to its report. While the record is there
and no erasure of the owner is running, the owner is neither served nor written (:class:`ErasurePendingError`), and
:meth:`MemoryManager.recover` (run when the store is opened) finishes it, audited as ``erase.completed_on_open`` by
the actor ``recovery``. Finishing repeats the deletes (each is idempotent), wipes the Chroma segment folders the
record names (an interrupted purge may have deleted the collection and left them) and, when nothing of the owner was
left to search for (the deletes had committed, so the canaries are gone with them), rebuilds Chroma's file and the
text file, whose unused space may still hold a trace the interrupted verification would have cleared.

The erased owner is one :class:`~memory.core.owner.Owner` throughout (made once, by the manager's public call).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memory.core.bytesearch import CHUNK_BYTES, NeedleSearch
from memory.core.owner import Owner
from memory.core.textcaches import forget_texts, holding_texts, registered_caches
from memory.embed.embedders import Embedder
from memory.store.chroma import MemoryStore
from memory.store.chroma_files import TRACE_VECTORS, rows_with_ids, wipe_folder
from memory.store.journal import Plan
from memory.core.schema import EraseReport, PathCheck

MIN_CANARY_BYTES = 6
"""Shorter texts are not searched for on disk: they would match unrelated bytes."""
MAX_RECALL_PROBES = 25
MAX_VECTOR_PROBES = 200
"""Vectors whose bytes the disk scan looks for (each is 4 x dim bytes: no false match)."""


class Holder(Protocol):
    """What an erasure needs of the one that holds the store (a :class:`memory.runtime.manager.MemoryManager`): this
    module reads nothing else of it, and imports nothing of the manager's."""

    store: MemoryStore
    """The store erased and searched (its own reads: the manager's refuse an owner whose erasure is pending)."""
    embedder: Embedder
    """Embeds the recall probes."""

    @property
    def data_dir(self) -> Path | None:
        """The data folder the disk scan reads (None in memory)."""

    def writing(self, what: str = ...) -> AbstractContextManager[None]:
        """The holder's write lock (bounded wait): the deletes and the file rewrites run under it."""

    def clear_caches(self) -> int:
        """Empty the holder's query cache; how many entries went."""

    def cached_queries(self) -> list[str]:
        """The queries the holder's cache holds."""

    def pending_plans(self) -> list[tuple[int, dict[str, Any]]]:
        """Journaled write plans not committed yet."""

    def owners(self) -> list[tuple[str, str]]:
        """Every owner the workspace holds anything of."""


@dataclass
class Erased:
    """What the deletes did: the evidence read before them, counts removed per path, other owners' rows touched."""

    owner: Owner
    evidence: "Evidence"
    removed: dict[str, int]
    others_touched: int


def delete_everywhere(manager: Holder, owner: Owner, *, actor: str = "system",
                      evidence: "Evidence | None" = None, segments: list[str] | None = None,
                      action: str = "erase_user", audit: dict[str, Any] | None = None) -> Erased:
    """Delete one (tenant, user) from every path; costs what the user owns.

    The caller (:meth:`MemoryManager.erase_user`) holds the manager's write lock and has raised the
    owner's erase epoch, so no write of this owner accepted before the erasure lands after it; it has read the
    ``evidence`` (or it is read here) and written the pending-erasure record. ``segments``: Chroma segment folders
    an interrupted erasure may have left (wiped if still there). The audit entry is ``action`` by ``actor``, with
    ``audit`` added to its detail.
    """
    store = manager.store
    evidence = evidence or Evidence.collect(manager, owner)

    removed: dict[str, int] = store.delete_owner(owner)
    removed["segment_folders"] = _wipe_segments(store, segments or [])
    counts = store.erase_owner_texts(owner, scrub_plan=lambda plan: _scrub(plan, owner))
    others_touched = counts.pop("others_touched")
    removed.update(counts)
    removed["cache"] = manager.clear_caches()
    store.audit(action, owner, actor=actor, detail={"removed": removed, **(audit or {})})
    return Erased(owner, evidence, removed, others_touched)


def _wipe_segments(store: Any, segments: list[str]) -> int:
    """Overwrite and remove the segment folders an interrupted purge left (embedded store only); how many were."""
    folder = store.chroma_dir
    if folder is None:
        return 0
    left = [folder / s for s in segments if (folder / s).is_dir()]
    for path in left:
        wipe_folder(path)
    return len(left)


PAGE_ROUNDS = 2
"""Passes of page rewrites for Chroma file traces before the file is rebuilt whole."""


def verify_deletion(manager: Holder, erased: Erased, *, disk_scan: bool = False,
                    rebuild: bool = False) -> EraseReport:
    """Verify an erasure (without the write lock). A trace in Chroma's file is cleared where it is: the pages
    holding it get their rows rewritten under the lock (tens of rows); only if a trace survives
    PAGE_ROUNDS passes is the file rebuilt whole. Then the file is searched again. The disk scan, if asked for,
    runs once, last: on the folder as the erasure leaves it. ``rebuild`` (an interrupted erasure finished with
    nothing of the user left to search for) rebuilds Chroma's file and the text file first, under the lock."""
    removed = dict(erased.removed, chroma_pages_rewritten=0, chroma_rebuilt=0)
    if rebuild:
        with manager.writing("rebuilding the files after an interrupted erasure"):
            manager.store.rebuild_chroma_file()
            manager.store.rebuild_text_file()
        removed["chroma_rebuilt"] = int(manager.store.chroma_dir is not None)
        removed["text_file_rebuilt"] = int(manager.store.text_file is not None)
    paths = verify_erased(manager, erased.owner, evidence=erased.evidence)
    at = next((i for i, p in enumerate(paths) if p.name == "chroma_file"), None)
    if at is not None and paths[at].remaining:
        clear_chroma_traces(manager, erased.evidence, paths, at, removed)
    if disk_scan and manager.data_dir is not None:
        check, where = _disk_check(manager, erased.evidence, erased=erased.owner)
        text_file = manager.store.text_file
        if text_file is not None and text_file.resolve() in {path.resolve() for path in where}:
            # a copy SQLite's page rebalancing left in the text store's file (seen beside another owner's writer):
            # rebuild the file, then search again
            with manager.writing("rebuilding the text file after an erasure"):
                manager.store.rebuild_text_file()
            removed["text_file_rebuilt"] = 1
            check, _ = _disk_check(manager, erased.evidence, erased=erased.owner)
        paths.append(check)
    return EraseReport(**erased.owner.args, removed=removed, paths=paths, others_touched=erased.others_touched)


def clear_chroma_traces(manager: Holder, evidence: "Evidence", paths: list[PathCheck], at: int,
                         removed: dict[str, int]) -> None:
    """Clear the traces the ``chroma_file`` check (``paths[at]``) found: rewrite the rows of their pages, then, if
    one survives, rebuild the file; ``paths[at]`` becomes the file's state after that, ``removed`` counts both."""
    store, needles = manager.store, _trace_needles(evidence)
    found: list[tuple[bytes, int]] | None = evidence.traces  # the check's own search, not repeated
    for _ in range(PAGE_ROUNDS):
        pages, found = store.chroma_trace_pages(needles, found), None
        if not pages:  # the file was just searched and holds none of them: the check's answer, without a re-read
            paths[at] = PathCheck("chroma_file", 0, paths[at].detail)
            break
        with manager.writing():
            store.rewrite_chroma_pages(pages, skip=set(needles))
        removed["chroma_pages_rewritten"] += len(pages)
    else:
        paths[at] = chroma_file_check(store, evidence)
    if paths[at].remaining:
        with manager.writing():
            store.rebuild_chroma_file()
        removed["chroma_rebuilt"] = 1
        paths[at] = chroma_file_check(store, evidence)


class Evidence:
    """What the user had, read before the erasure: the canaries the verification looks for."""

    def __init__(self, texts: list[str], collection: str | None, vector_ids: list[str],
                 vectors: list[tuple[str, bytes]], segments: list[str] | None = None) -> None:
        self.texts = texts
        self.collection = collection
        self.segments = segments
        """The collection's segment ids in an embedded Chroma (None: not known, every row is looked at)."""
        self.vector_ids = vector_ids
        self.vectors = vectors
        """(record text, raw vector bytes): a vector is as much the user's as its text is."""
        self.traces: list[tuple[bytes, int]] = []
        """Where the last ``chroma_file`` check found the user's ids or vectors in Chroma's file (needle, offset)."""

    @classmethod
    def collect(cls, manager: Holder, owner: Owner) -> "Evidence":
        store = manager.store
        found = user_texts(manager, owner)
        ids, blobs = store.owner_vector_bytes(owner)
        contents = {r.memory_id: r.content for r in store.get(ids[:MAX_VECTOR_PROBES], owner=owner).values()}
        vectors = [(contents[i], b) for i, b in zip(ids, blobs) if b and i in contents]
        collection = store.collection_of(owner)
        return cls(found, collection, store.owner_vector_ids(owner), vectors,
                   store.chroma_segments(collection) if collection else None)


def user_texts(manager: Holder, owner: Owner) -> list[str]:
    """Every text of one user on any track: records, window, summary, decision log, pending write plans."""
    store = manager.store  # the store's own reads: the manager's refuse an owner whose erasure is pending
    found = [r.content for r in store.records(owner, scope="all")]
    found += [m["content"] for m in store.window(owner)]
    summary = store.summary(owner)
    found += [summary] if summary else []
    for entry in store.decisions(owner):  # the fact and the stored fact it was judged against
        found += [entry.get("fact") or "", (entry.get("candidate") or {}).get("text") or ""]
    for _, plan in manager.pending_plans():
        found += _plan_texts(Plan.from_json(plan), owner)
    return sorted({t for t in found if t})


def verify_erased(manager: Holder, owner: Owner, *, evidence: Evidence, disk_scan: bool = False) -> list[PathCheck]:
    """Re-query every path for the user's data; each PathCheck counts what remained."""
    store = manager.store
    rows = store.owner_rows(owner)
    checks = [
        PathCheck("recent_window", rows["window"]),
        PathCheck("summary", rows["summaries"]),
        PathCheck("long_term_text", rows["texts"], "TextStore records of the user"),
        PathCheck("decision_log", rows["decisions"], "write-path decisions of the user"),
        PathCheck("ingested_marks", rows["ingested"], "write-path commit marks of the user"),
        PathCheck("owner_registry", rows["owners"], "the user's collection entry"),
        PathCheck("journal", _journal_mentions(manager, owner), "pending write plans with the user's data"),
        PathCheck("long_term_vectors", _collection_left(store, evidence.collection),
                  "the user's Chroma collection (1 if it still exists)"),
    ]
    if store.chroma_dir is not None:
        checks.append(PathCheck("chroma_rows", rows_with_ids(store.chroma_dir, evidence.vector_ids, evidence.segments),
                                f"rows of Chroma's database with one of the user's {len(evidence.vector_ids)} vector ids"))
        checks.append(chroma_file_check(store, evidence))
    recalled = 0
    for text in evidence.texts[:MAX_RECALL_PROBES]:
        vec = manager.embedder.embed([text])[0]
        recalled += len(store.query(vec, owner=owner, n=5, scope="all"))
    checks.append(PathCheck("recall", recalled, f"{min(len(evidence.texts), MAX_RECALL_PROBES)} probe queries"))
    cached = [q for q in manager.cached_queries() if any(c in q or q in c for c in evidence.texts)]
    checks.append(PathCheck("cache", len(cached), "cached query embeddings mentioning the user's texts"))
    forget_texts(evidence.texts[:MAX_RECALL_PROBES])  # the probes went through the embedder, which may remember them
    held = holding_texts(evidence.texts)  # every cache of the process that holds user text (memory/core/textcaches.py)
    checks.append(PathCheck("caches", sum(n for _, n in held), f"entries of the process's {len(registered_caches())} "
                            "registered text caches holding the user's texts (those that cannot tell are emptied whole)"
                            + "".join(f"; {name}: {n}" for name, n in held)))
    if disk_scan and manager.data_dir is not None:
        checks.append(_disk_check(manager, evidence, erased=owner)[0])
    return checks


def _disk_check(manager: Holder, evidence: Evidence, *, erased: Owner) -> tuple[PathCheck, set[Path]]:
    """The disk check, and the files a trace was found in."""
    data_dir = manager.data_dir
    assert data_dir is not None  # both callers scan the disk only for a manager that has a folder
    canaries = DiskCanaries.of(evidence)
    hits = files_holding(data_dir, canaries.needles())
    also_others = 0
    if hits:  # what another owner also holds is no leak: looked up for what was found only (it reads all owners' texts)
        found = sorted({t for _, needle in hits for t in canaries.texts_of(needle)})
        shared = _shared_with_others(manager, found, erased=erased)
        kept = [(path, needle) for path, needle in hits if not canaries.also_others(needle, shared)]
        also_others, hits = len(hits) - len(kept), kept
    detail = (f"{len(canaries.texts)} texts, {len(canaries.ids)} vector ids and {len(canaries.vectors)} vectors "
              f"searched in every file under {data_dir}, each file read once")
    if also_others:
        detail += f"; {also_others} found that another owner also holds (no leak)"
    if hits:
        detail += "; found in " + ", ".join(sorted({str(path) for path, _ in hits}))
    return PathCheck("disk", len(hits), detail), {Path(path) for path, _ in hits}


@dataclass
class DiskCanaries:
    """What the disk scan looks for: the user's texts (UTF-8) of MIN_CANARY_BYTES or more, every vector id (ASCII),
    and up to MAX_VECTOR_PROBES vectors (raw bytes), each with the texts it embeds."""

    texts: dict[bytes, str]
    ids: set[bytes]
    vectors: dict[bytes, list[str]]

    @classmethod
    def of(cls, evidence: Evidence) -> "DiskCanaries":
        texts = {t.encode("utf-8"): t for t in evidence.texts if len(t.encode("utf-8")) >= MIN_CANARY_BYTES}
        vectors: dict[bytes, list[str]] = {}
        for text, raw in evidence.vectors:
            vectors.setdefault(raw, []).append(text)
        return cls(texts, {v.encode("ascii") for v in evidence.vector_ids}, vectors)

    def needles(self) -> list[bytes]:
        return [*self.texts, *self.ids, *self.vectors]

    def texts_of(self, needle: bytes) -> list[str]:
        """The texts a needle is, or embeds."""
        return ([self.texts[needle]] if needle in self.texts else []) + self.vectors.get(needle, [])

    def also_others(self, needle: bytes, shared: set[str]) -> bool:
        """Whether a needle found on disk may be another owner's: a text in ``shared`` (texts other owners hold too),
        a vector of such texts only (the same text has the same vector); never a vector id (keyed per record)."""
        return needle not in self.ids and all(t in shared for t in self.texts_of(needle))


def _trace_needles(evidence: Evidence) -> list[bytes]:
    return [v.encode("ascii") for v in evidence.vector_ids] + [b for _, b in evidence.vectors]


def chroma_file_check(store: Any, evidence: Evidence) -> PathCheck:
    evidence.traces = store.chroma_traces(_trace_needles(evidence)) or []
    held = len({needle for needle, _ in evidence.traces})
    return PathCheck("chroma_file", held, f"the user's {len(evidence.vector_ids)} vector ids and up to "
                     f"{TRACE_VECTORS} of its vectors searched in every byte of Chroma's database file")


def _collection_left(store: Any, name: str | None) -> int:
    return 1 if name is not None and store.collection_exists(name) else 0


def _journal_mentions(manager: Holder, owner: Owner) -> int:
    return sum(1 for _, plan in manager.pending_plans() if owner.key in Plan.from_json(plan).owners())


def _scrub(plan: dict[str, Any], owner: Owner) -> dict[str, Any] | None:
    """A journaled plan without the owner's part (None when nothing else is left in it)."""
    parsed = Plan.from_json(plan)
    if owner.key not in parsed.owners():
        return plan
    rest = parsed.without({owner.key})
    return rest.to_json() if rest.owners() else None


def _plan_texts(plan: Plan, owner: Owner) -> list[str]:
    mine = [r.content for r in plan.add + plan.update if (r.tenant_id, r.user_id) == owner.key]
    return mine + [m.content for m in plan.window if (m.tenant_id, m.user_id) == owner.key]


def _shared_with_others(manager: Holder, canaries: list[str], *, erased: Owner) -> set[str]:
    """Canaries that another owner's data also contains (finding those on disk is no leak)."""
    if not canaries:
        return set()
    others = []
    for key in manager.owners():
        if key == erased.key:
            continue
        other = Owner(*key)
        others += [r.content for r in manager.store.records(other, scope="all")]
        others += [m["content"] for m in manager.store.window(other)]
        others.append(manager.store.summary(other))
    held = NeedleSearch(_utf8(c) for c in canaries).in_bytes(_utf8("\n".join(others)))  # one pass, not one per canary
    return {c for c in canaries if _utf8(c) in held}


def _utf8(text: str) -> bytes:
    """A text as the bytes looked for: in UTF-8 a text is in another exactly where its bytes are in the other's."""
    return text.encode("utf-8", "surrogatepass")


def scan_for_bytes(folder: Path, needles: list[str] | list[bytes], *,
                   chunk: int = CHUNK_BYTES) -> list[tuple[Path, str]]:
    """(file, needle) for every needle (text as UTF-8, or raw bytes) that occurs in a file under ``folder``:
    :func:`files_holding`, with each needle named by its text or its length."""
    encoded = [(n if isinstance(n, str) else f"<{len(n)} bytes>", n.encode("utf-8") if isinstance(n, str) else n)
               for n in needles]
    found = files_holding(folder, [b for _, b in encoded], chunk=chunk)
    held: dict[Path, set[bytes]] = {}
    for path, needle in found:
        held.setdefault(path, set()).add(needle)
    return [(path, name) for path in held for name, b in encoded if b in held[path]]


def files_holding(folder: Path, needles: list[bytes], *, chunk: int = CHUNK_BYTES) -> list[tuple[Path, bytes]]:
    """(file, needle) for every needle that occurs in a file under ``folder``, files in sorted order.

    Each file is read once, in pieces of ``chunk`` bytes, and every needle looked for in that one pass
    (memory.core.bytesearch): the cost is the folder's bytes plus the needles' anchor matches, not one search of
    the folder per needle."""
    hits: list[tuple[Path, bytes]] = []
    if not needles or not Path(folder).exists():
        return hits
    search = NeedleSearch(needles)
    for path in sorted(Path(folder).rglob("*")):
        try:
            if not path.is_file():
                continue
            found = search.in_file(path, chunk=chunk)
        except OSError:  # removed while we looked (a workspace released meanwhile): nothing left to find
            continue
        hits += [(path, needle) for needle in dict.fromkeys(needles) if needle in found]
    return hits
