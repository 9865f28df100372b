"""Server mode: which text folder a workspace on a ``chroma run`` server keeps its texts in. One, for every client.

On a server, a workspace's vectors live on the server and everything else (texts, windows, summaries, the owner
registry that names each owner's collection) in a local data folder. Two clients of one workspace with different
folders would be two memories under one name: an erasure through one deletes what *its* folder registers, and the
other still returns everything (measured, issue 50: 5 erasures verified, the other client still returned all 36
erased messages and held 36 canaries). So the server records which folder each workspace is bound to, at its first
use, and a client that opens the workspace with another folder is refused at open, before it writes anything, with
one line naming the folder to use (:func:`bind`). Clients sharing the folder share every text and every erasure.

* A folder is known by a random id in a marker file (:data:`FOLDER_ID_FILE`), written at its first use in server
  mode, whole or not at all (written aside, then linked into place: of two clients creating it at once, the second
  reads the first's id). The id is compared, not the path: one folder can be reached by several paths (a symlink,
  a mount), and two machines can each have a folder of one path. The resolved path is kept for the message.
* The server's registry is one collection (:data:`REGISTRY`) with one record per workspace key
  (:func:`memory.store.chroma.workspace_key`: a hash, so the server learns no workspace name), whose metadata is the
  folder's id and path. Chroma's ``add`` keeps an id's first record and ignores later ones, so of two clients binding
  a fresh workspace at once, both read the same record back: one is bound, the other refused. No lock, no window.
* A workspace is bound, not the whole server: one server may serve independent workspaces that share no owner,
  collection or text (the lab gives each lab its own folder; the reliability check one folder per round).
* :meth:`memory.store.chroma.MemoryStore.drop` unbinds its workspace, so the name can be bound again.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from typing import Any

from memory.core.errors import MemoryLabError

REGISTRY = "memory-lab-registry"
"""The server's collection of bindings: record id = workspace key, metadata = the bound folder's id and path."""
FOLDER_ID_FILE = "folder-id"
"""The marker file in a data folder that holds the folder's id (created at its first use in server mode)."""
_ID = re.compile(r"[0-9a-f]{32}")
_SPOT = [[1.0]]
"""Chroma stores no record without a vector: each binding has this one (the registry is never queried by vector)."""


def bind(client: Any, *, key: str, workspace: str, folder: Path, server: str) -> str:
    """Bind the workspace of ``key`` on the server of ``client`` to ``folder`` at its first use; returns the
    folder's id. A workspace bound to another folder raises MemoryLabError (one line: the bound folder, what to do)
    and this call writes nothing, in the folder or on the server, unless it raced another client binding the same
    fresh workspace (then it leaves the folder's marker, which identifies the folder all the same)."""
    registry = _registry(client)
    bound = _bound(registry, key)
    here = folder_id(folder, create=bound is None)
    if bound is None:
        registry.add(ids=[key], embeddings=_SPOT, metadatas=[{"folder_id": here, "folder": _shown(folder)}])
        bound = _bound(registry, key)  # the first add of the key wins, ours or another client's
    if here is None or bound is None or bound["folder_id"] != here:  # a folder without an id is a new one
        raise MemoryLabError(_refusal(bound, workspace=workspace, folder=folder, server=server))
    return here


def unbind(client: Any, *, key: str, folder_id: str) -> None:
    """Forget the workspace's binding if it is to the folder of ``folder_id`` (a dropped workspace's name can then be
    bound to another folder); another folder's binding is left as it is."""
    _registry(client).delete(ids=[key], where={"folder_id": folder_id})


def folder_id(folder: Path, *, create: bool) -> str | None:
    """The id of a data folder, from its marker file; with ``create``, made at the first call (None without it, when
    the folder has none yet). The marker is written aside and linked into place: it is whole or absent, and of two
    processes creating it at once, both return the first one's id."""
    marker = Path(folder) / FOLDER_ID_FILE
    found = _read(marker)
    if found is not None or not create:
        return found
    marker.parent.mkdir(parents=True, exist_ok=True)
    aside = marker.with_name(f".{FOLDER_ID_FILE}-{uuid.uuid4().hex}")
    try:
        with open(aside, "x", encoding="ascii") as out:
            out.write(uuid.uuid4().hex + "\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(aside, marker)
        except FileExistsError:  # another process made it first: its id is the folder's
            pass
    finally:
        aside.unlink(missing_ok=True)
    made = _read(marker)
    assert made is not None  # linked whole by this call or another
    return made


def _read(marker: Path) -> str | None:
    try:
        text = marker.read_text(encoding="ascii", errors="replace").strip()
    except FileNotFoundError:
        return None
    if not _ID.fullmatch(text):
        raise MemoryLabError(f"{marker} does not hold a folder id this library wrote (32 hex digits): restore it, or "
                             "remove it only if no Chroma server's workspace is bound to this folder")
    return text


def _registry(client: Any) -> Any:
    try:
        return client.get_or_create_collection(REGISTRY, embedding_function=None)
    except Exception:  # noqa: BLE001 - another client created it between Chroma's check and its insert
        return client.get_collection(REGISTRY, embedding_function=None)


def _bound(registry: Any, key: str) -> dict[str, Any] | None:
    metas = registry.get(ids=[key], include=["metadatas"])["metadatas"] or []
    return dict(metas[0]) if metas and metas[0] else None


def _shown(folder: Path) -> str:
    return str(Path(folder).resolve())


def _refusal(bound: dict[str, Any] | None, *, workspace: str, folder: Path, server: str) -> str:
    """The one line a client opening a workspace bound to another folder gets."""
    if bound is None:  # not reached: an add that reads back nothing is Chroma's fault
        return f"the Chroma server at {server} did not record the text folder of workspace {workspace!r}; try again"
    where = str(bound.get("folder", "?"))
    texts = f"the Chroma server at {server} keeps the texts of workspace {workspace!r}"
    if where == _shown(folder):
        return (f"{texts} in {where}, but the folder there now is not that one (it was removed or replaced, and the "
                "texts with it); use another server or workspace")
    return (f"{texts} in another folder, {where} (bound at its first use); open it with that data folder (--data-dir "
            "or MEMORY_DATA_DIR), or use another server or workspace")
