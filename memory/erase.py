"""erase_user across every path, then a verification that re-queries each path.

Paths: the recent window, the summary, the long-term vectors (Chroma), the
long-term text (TextStore), the write path's decision log, the cold archive,
recall (querying with the user's own texts),
the query-embedding cache and, for a store on disk, the bytes of every file in
the data folder (the user's texts searched as canaries).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .schema import EraseReport, PathCheck, validate_identifier

if TYPE_CHECKING:
    from .manager import MemoryManager

MIN_CANARY_BYTES = 6
"""Shorter texts are not searched for on disk: they would match unrelated bytes."""
MAX_RECALL_PROBES = 25


def erase_user(manager: "MemoryManager", *, tenant_id: str, user_id: str, actor: str = "system") -> EraseReport:
    """Erase one (tenant, user) everywhere and report what each path holds afterwards."""
    validate_identifier(tenant_id, "tenant_id")
    validate_identifier(user_id, "user_id")
    store, texts = manager.store, manager.store.texts
    canaries = user_texts(manager, tenant_id=tenant_id, user_id=user_id)
    others_before = store.count() - store.count(tenant_id, user_id)

    with manager._lock:
        removed = {"long_term_vectors": store.delete_owner(tenant_id, user_id)}
        removed.update(texts.erase_owner(tenant_id, user_id))
        removed["cache"] = manager.clear_caches()
    texts.audit("erase_user", tenant_id, user_id, actor=actor, detail={"removed": removed})

    paths = verify_erased(manager, tenant_id=tenant_id, user_id=user_id, canaries=canaries)
    others_after = store.count()
    return EraseReport(
        tenant_id=tenant_id, user_id=user_id, removed=removed, paths=paths,
        others_before=others_before, others_after=others_after,
    )


def user_texts(manager: "MemoryManager", *, tenant_id: str, user_id: str) -> list[str]:
    """Every text of one user on any track (used as canaries by the verification)."""
    found = [r.content for r in manager.store.records(tenant_id, user_id, scope="all")]
    found += [m.content for m in manager.recent(tenant_id=tenant_id, user_id=user_id)]
    return sorted(set(found))


def verify_erased(manager: "MemoryManager", *, tenant_id: str, user_id: str, canaries: list[str]) -> list[PathCheck]:
    """Re-query every path for the user's data; each PathCheck counts what remained."""
    store = manager.store
    checks = [
        PathCheck("recent_window", len(manager.recent(tenant_id=tenant_id, user_id=user_id))),
        PathCheck("summary", 1 if manager.summary(tenant_id=tenant_id, user_id=user_id) else 0),
        PathCheck("long_term_vectors", store.count(tenant_id, user_id), "Chroma get with the user's where"),
        PathCheck("long_term_text", store.texts.count_texts(tenant_id, user_id), "TextStore rows of the user"),
        PathCheck("decision_log", store.texts.count_decisions(tenant_id, user_id), "write-path decisions of the user"),
        PathCheck("archive", _archived(store, tenant_id, user_id), "archived (cold) vectors of the user"),
    ]
    recalled = 0
    for text in canaries[:MAX_RECALL_PROBES]:
        vec = manager.embedder.embed([text])[0]
        recalled += len(store.query(vec, tenant_id=tenant_id, user_id=user_id, n=5, scope="all"))
    checks.append(PathCheck("recall", recalled, f"{min(len(canaries), MAX_RECALL_PROBES)} probe queries"))
    cached = [q for q in manager.cached_queries() if any(c in q or q in c for c in canaries)]
    checks.append(PathCheck("cache", len(cached), "cached query embeddings mentioning the user's texts"))
    if manager.data_dir is not None:
        shared = _shared_with_others(manager, canaries, erased=(tenant_id, user_id))
        probes = [c for c in canaries if c not in shared and len(c.encode("utf-8")) >= MIN_CANARY_BYTES]
        hits = scan_for_bytes(manager.data_dir, probes)
        detail = f"{len(probes)} texts searched in every file under {manager.data_dir}"
        if hits:
            detail += "; found in " + ", ".join(sorted({str(p) for p, _ in hits}))
        checks.append(PathCheck("disk", len(hits), detail))
    return checks


def _archived(store, tenant_id: str, user_id: str) -> int:
    """Archived vectors of the user, counted from Chroma's metadata (so a vector whose text is gone still counts)."""
    from .store import scope_where

    metas = store.collection.get(where=scope_where(tenant_id, user_id, scope="all"), include=["metadatas"])["metadatas"]
    return sum(1 for m in metas if m.get("archived"))


def _shared_with_others(manager: "MemoryManager", canaries: list[str], *, erased: tuple[str, str]) -> set[str]:
    """Canaries that another owner's data also contains (finding those on disk is no leak)."""
    if not canaries:
        return set()
    others = []
    for tenant_id, user_id in manager.store.texts.owners():
        if (tenant_id, user_id) == erased:
            continue
        others += [r.content for r in manager.store.records(tenant_id, user_id, scope="all")]
        others += [m.content for m in manager.recent(tenant_id=tenant_id, user_id=user_id)]
        others.append(manager.summary(tenant_id=tenant_id, user_id=user_id))
    blob = "\n".join(others)
    return {c for c in canaries if c in blob}


def scan_for_bytes(folder: Path, needles: list[str]) -> list[tuple[Path, str]]:
    """(file, needle) for every needle whose UTF-8 bytes occur in a file under ``folder``."""
    encoded = [(n, n.encode("utf-8")) for n in needles]
    hits: list[tuple[Path, str]] = []
    if not encoded or not Path(folder).exists():
        return hits
    for path in sorted(Path(folder).rglob("*")):
        try:
            if not path.is_file():
                continue
            data = path.read_bytes()
        except OSError:  # removed while we looked (a workspace released meanwhile): nothing left to find
            continue
        hits += [(path, n) for n, b in encoded if b in data]
    return hits
