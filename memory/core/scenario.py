"""Scenario files (docs/formats.md): load, validate with pydantic, turn into Messages.

A malformed file raises :class:`DataFileError` whose message names the file,
the item (``messages[3] (id 'm4')``) and the field. Unknown fields are kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from memory.core.errors import DataFileError, MemoryLabError, TooManyMessagesError
from memory.core.safefile import read_regular_file, shown
from memory.core.config import MemoryConfig
from memory.core.owner import Owner
from memory.core.schema import ROLES, Message, parse_time, validate_identifier, validate_text

_T = TypeVar("_T")

SCENARIOS_DIR = Path(__file__).resolve().parents[1] / "scenarios"
"""The shipped lesson scenarios (``memory/scenarios/*.json``): package data, installed with the library (pip
unpacks a wheel into a folder, so they are plain files beside the modules). Listed by :func:`shipped_scenarios`.
The Dedup page's teaching pair sets sit in its ``pairs/`` folder (memory.eval.pairs.PAIRS_DIR), not listed here."""
FIXTURES_DIR = Path(__file__).resolve().parents[2] / "fixtures"
"""The repository's ``fixtures/`` folder: the judge's training and held-out pair sets (``training/``,
``independent/``), read from a checkout by the training script and the benches. Not installed."""
MAX_QUERY_CHARS = int(MemoryConfig.range_of("max_message_chars")[1])  # an int field: its bounds are whole
"""The longest query a scenario may hold (the engine's own upper bound on a text)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class ScenarioMessage(_Strict):
    id: str
    tenant_id: str
    user_id: str
    content: str
    timestamp: str
    role: str = "user"
    session_id: str = "default"
    labels: list[str] = []
    importance: float | None = None


class ScenarioQuery(_Strict):
    id: str
    tenant_id: str
    user_id: str
    query: str
    relevant: list[str] = []
    forbidden: list[str] = []
    as_of: str | None = None


class _ScenarioFile(_Strict):
    name: str
    language: str = "en"
    messages: list[ScenarioMessage]
    queries: list[ScenarioQuery] = []


@dataclass(frozen=True)
class Scenario:
    """A validated scenario: messages to replay and labelled queries."""

    name: str
    language: str
    messages: list[Message]
    queries: list[ScenarioQuery]
    source: str
    """The file (or upload name) it came from."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Unknown top-level fields, kept."""

    def owners(self) -> list[tuple[str, str]]:
        """Every (tenant_id, user_id) in the messages, in first-seen order."""
        seen: dict[tuple[str, str], None] = {}
        for m in self.messages:
            seen.setdefault((m.tenant_id, m.user_id), None)
        return list(seen)

    def message(self, message_id: str) -> Message:
        for m in self.messages:
            if m.id == message_id:
                return m
        raise KeyError(message_id)

    @property
    def last_time(self) -> float:
        return max((m.timestamp or 0.0) for m in self.messages)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file."""
    return parse_scenario(read_data_file(path, "scenario file"), source=str(path))


def parse_scenario(raw: bytes | str, *, source: str, max_messages: int | None = None) -> Scenario:
    """Validate scenario JSON given as bytes or text; ``source`` names it in errors.

    With ``max_messages``, a file of more messages is refused (TooManyMessagesError) before any is validated.
    """
    data = load_json(raw, source)
    count = len(data["messages"]) if isinstance(data, dict) and isinstance(data.get("messages"), list) else 0
    if max_messages is not None and count > max_messages:
        raise TooManyMessagesError(f"{shown(source)}: field 'messages' holds {count:,} messages; the limit is "
                                   f"{max_messages:,}", count=count, limit=max_messages)
    try:
        parsed = _ScenarioFile.model_validate(data)
    except ValidationError as exc:
        raise DataFileError(_describe(exc, data, source)) from None
    where = shown(source)
    messages: list[Message] = []
    seen: set[str] = set()
    for i, m in enumerate(parsed.messages):
        item = f"{where}: messages[{i}] (id {m.id[:64]!r})"
        if m.role not in ROLES:
            raise DataFileError(f"{item}: field 'role' must be one of {', '.join(ROLES)}, got {m.role[:32]!r}")
        if not m.content.strip():
            raise DataFileError(f"{item}: field 'content' is empty")
        message = _guard(item, lambda: Message(
            tenant_id=m.tenant_id, user_id=m.user_id, content=m.content, role=m.role, id=m.id,
            session_id=m.session_id, timestamp=parse_time(m.timestamp, "timestamp"),
            importance=m.importance, labels=tuple(m.labels),
        ))
        if message.id in seen:  # ids are compared in NFC form, like every identifier
            raise DataFileError(f"{item}: field 'id' repeats an earlier message id")
        seen.add(message.id)
        messages.append(message)
    owner = {m.id: (m.tenant_id, m.user_id) for m in messages}
    queries: list[ScenarioQuery] = []
    for i, q in enumerate(parsed.queries):
        item = f"{where}: queries[{i}] (id {q.id[:64]!r})"
        q = q.model_copy(update=_guard(item, lambda: {
            "id": validate_identifier(q.id, "id"),
            **Owner.of(q.tenant_id, q.user_id).args,
            "relevant": [validate_identifier(mid, "relevant") for mid in q.relevant],
            "forbidden": [validate_identifier(mid, "forbidden") for mid in q.forbidden],
        }))
        if not q.query.strip():
            raise DataFileError(f"{item}: field 'query' is empty")
        _guard(item, lambda: validate_text(q.query, "query", max_chars=MAX_QUERY_CHARS))
        if q.as_of is not None:
            _guard(item, lambda: parse_time(q.as_of, "as_of"))
        for name in ("relevant", "forbidden"):
            for mid in getattr(q, name):
                if mid not in owner:
                    raise DataFileError(f"{item}: field {name!r} names unknown message id {mid[:64]!r}")
        for mid in q.relevant:
            if owner[mid] != (q.tenant_id, q.user_id):
                raise DataFileError(f"{item}: field 'relevant' names {mid!r}, a message of another (tenant, user)")
        queries.append(q)
    extra = {k: v for k, v in data.items() if k not in _ScenarioFile.model_fields}
    return Scenario(parsed.name, parsed.language, messages, queries, source, extra)


def shipped_scenarios() -> dict[str, Path]:
    """name (file stem) -> path of every shipped scenario (:data:`SCENARIOS_DIR`), sorted by name."""
    return {p.stem: p for p in sorted(SCENARIOS_DIR.glob("*.json"))}


def read_data_file(path: str | Path, what: str) -> bytes:
    """The bytes of a data file, or a one-line DataFileError naming the file (``what`` says what kind of file).

    Only a regular file under the size cap is read (see :func:`memory.core.safefile.read_regular_file`):
    devices, FIFOs, folders, kernel pseudo-files and oversized files are refused before any byte is read.
    """
    return read_regular_file(path, what=what)


def load_json(raw: bytes | str, source: str) -> Any:
    """Parse JSON text; every malformed input is a one-line DataFileError naming ``source`` (and the item).

    Refused: bytes that are not UTF-8, invalid JSON, ``NaN``/``Infinity`` literals, numbers of more than
    Python's 4,300 digits, nesting deeper than MAX_JSON_DEPTH, and strings holding a lone surrogate
    (a ``\\ud800`` escape with no pair: not Unicode text, it cannot be stored or printed).
    """
    where = shown(source)
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DataFileError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise DataFileError(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise DataFileError(f"{where}: JSON nested too deeply (the limit is {MAX_JSON_DEPTH} levels)") from None
    except ValueError as exc:  # a number past the int/str conversion limit, or a NaN/Infinity literal
        reason = "a number has more than 4,300 digits" if "digits" in str(exc) else str(exc).splitlines()[0][:120]
        raise DataFileError(f"{where}: unusable JSON value: {reason}") from None
    _check_tree(data, where, surrogates=_SURROGATE_HINT.search(raw) is not None)
    return data


MAX_JSON_DEPTH = 64
"""Deepest nesting of lists and objects a data file may have (LoCoMo needs 5)."""
_SURROGATE_HINT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _check_tree(data: Any, where: str, *, surrogates: bool) -> None:
    """Refuse nesting deeper than MAX_JSON_DEPTH and (when ``surrogates``) any string with a lone surrogate,
    naming the JSON path of the offending item. Iterative: a deep document cannot exhaust the stack."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        node, at, depth = stack.pop()
        if isinstance(node, dict):
            children = [(_key_path(at, k), v) for k, v in node.items()]
            if surrogates:
                for k in node:
                    _no_surrogate(k, where, f"{at or 'top level'}: a key")
        elif isinstance(node, list):
            children = [(f"{at}[{i}]", v) for i, v in enumerate(node)]
        else:
            if surrogates and isinstance(node, str):
                _no_surrogate(node, where, at or "top level")
            continue
        if depth >= MAX_JSON_DEPTH:
            at = at if len(at) <= 80 else at[:40] + "..." + at[-37:]
            raise DataFileError(f"{where}: {at or 'top level'}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
        stack.extend((child, path, depth + 1) for path, child in children)


def _key_path(at: str, key: str) -> str:
    name = key if key.isidentifier() else ascii(key)
    return f"{at}.{name}" if at else name


def _no_surrogate(text: str, where: str, at: str) -> None:
    m = _SURROGATE.search(text)
    if m:
        raise DataFileError(f"{where}: {at}: lone surrogate {ascii(m.group())} at character {m.start()} "
                            "(not valid Unicode text)")


def _guard(item: str, build: Callable[[], _T]) -> _T:
    """``build()``, called at once (so a lambda may close over the loop's current item), with a
    MemoryLabError restated as a DataFileError naming ``item``."""
    try:
        return build()
    except MemoryLabError as exc:
        raise DataFileError(f"{item}: {exc}") from None


def _describe(exc: ValidationError, data: Any, source: str) -> str:
    """The first validation error as 'file: item: field ...: problem'."""
    err = exc.errors()[0]
    loc = list(err["loc"])
    if not isinstance(data, dict):
        return f"{source}: the top level must be a JSON object with 'name' and 'messages'"
    item = "top level"
    if len(loc) >= 2 and isinstance(loc[1], int):
        section, index = loc[0], loc[1]
        entry = data.get(section, [])[index] if isinstance(data.get(section), list) else None
        ident = entry.get("id") if isinstance(entry, dict) else None
        item = f"{section}[{index}]" + (f" (id {ident!r})" if ident is not None else "")
        loc = loc[2:]
    field_name = ".".join(str(p) for p in loc) or "(the item itself)"
    problem = "is required" if err["type"] == "missing" else err["msg"].lower()
    return f"{source}: {item}: field {field_name!r} {problem}"


def replay(manager, scenario: Scenario, *, progress: Callable[[int, int], None] | None = None) -> None:
    """Add every message of a scenario to a MemoryManager, in file order."""
    manager.add_many(scenario.messages, progress=progress)
