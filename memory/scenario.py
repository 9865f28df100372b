"""Scenario files (DESIGN.md section 4): load, validate with pydantic, turn into Messages.

A malformed file raises :class:`DataFileError` whose message names the file,
the item (``messages[3] (id 'm4')``) and the field. Unknown fields are kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import DataFileError, MemoryLabError
from .schema import ROLES, Message, parse_time, validate_identifier

FIXTURES_DIR = Path(__file__).resolve().parent.parent / "fixtures"


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


def parse_scenario(raw: bytes | str, *, source: str) -> Scenario:
    """Validate scenario JSON given as bytes or text; ``source`` names it in errors."""
    data = _load_json(raw, source)
    try:
        parsed = _ScenarioFile.model_validate(data)
    except ValidationError as exc:
        raise DataFileError(_describe(exc, data, source)) from None
    messages: list[Message] = []
    seen: set[str] = set()
    for i, m in enumerate(parsed.messages):
        item = f"{source}: messages[{i}] (id {m.id!r})"
        if m.id in seen:
            raise DataFileError(f"{item}: field 'id' repeats an earlier message id")
        seen.add(m.id)
        if m.role not in ROLES:
            raise DataFileError(f"{item}: field 'role' must be one of {', '.join(ROLES)}, got {m.role!r}")
        if not m.content.strip():
            raise DataFileError(f"{item}: field 'content' is empty")
        messages.append(_guard(item, lambda m=m: Message(
            tenant_id=m.tenant_id, user_id=m.user_id, content=m.content, role=m.role, id=m.id,
            session_id=m.session_id, timestamp=parse_time(m.timestamp, "timestamp"),
            importance=m.importance, labels=tuple(m.labels),
        )))
    owner = {m.id: (m.tenant_id, m.user_id) for m in messages}
    for i, q in enumerate(parsed.queries):
        item = f"{source}: queries[{i}] (id {q.id!r})"
        _guard(item, lambda q=q: (validate_identifier(q.tenant_id, "tenant_id"), validate_identifier(q.user_id, "user_id")))
        if not q.query.strip():
            raise DataFileError(f"{item}: field 'query' is empty")
        if q.as_of is not None:
            _guard(item, lambda q=q: parse_time(q.as_of, "as_of"))
        for name in ("relevant", "forbidden"):
            for mid in getattr(q, name):
                if mid not in owner:
                    raise DataFileError(f"{item}: field {name!r} names unknown message id {mid!r}")
        for mid in q.relevant:
            if owner[mid] != (q.tenant_id, q.user_id):
                raise DataFileError(f"{item}: field 'relevant' names {mid!r}, a message of another (tenant, user)")
    extra = {k: v for k, v in data.items() if k not in _ScenarioFile.model_fields}
    return Scenario(parsed.name, parsed.language, messages, list(parsed.queries), source, extra)


def shipped_scenarios() -> dict[str, Path]:
    """name (file stem) -> path of every scenario in fixtures/ (pair files excluded)."""
    return {p.stem: p for p in sorted(FIXTURES_DIR.glob("*.json")) if not p.stem.startswith("dedup_pairs")}


def read_data_file(path: str | Path, what: str) -> bytes:
    """The bytes of a data file, or a DataFileError naming the file (``what`` says what kind of file)."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None


def _load_json(raw: bytes | str, source: str) -> Any:
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DataFileError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DataFileError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def _guard(item: str, build: Callable[[], Any]) -> Any:
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
