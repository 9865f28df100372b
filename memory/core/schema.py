"""Data contracts: messages, memory records (docs/formats.md for the files), recall and erase results.

Times are POSIX seconds (UTC) inside the engine and ISO-8601 strings at the edges
(files, JSON output); :func:`parse_time` and :func:`iso` convert.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from typing import Any, Literal, TypedDict

from memory.core.errors import IdentifierError, InputError

Category = Literal["user_profile", "preference", "episodic_fact", "business_rule"]
SecurityLevel = Literal["public", "tenant_internal", "confidential"]
CATEGORIES: tuple[str, ...] = ("user_profile", "preference", "episodic_fact", "business_rule")
SECURITY_LEVELS: tuple[str, ...] = ("public", "tenant_internal", "confidential")
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")


class OwnerArgs(TypedDict):
    """The keyword arguments that name one (tenant, user), to pass as ``**owner`` to the engine's calls."""

    tenant_id: str
    user_id: str


FOREVER = 253402300799.0
"""valid_until of a record that never expires (9999-12-31T23:59:59Z)."""

MAX_ID_CHARS = 256


MIN_TIME = -62135596800.0
"""The earliest time accepted (0001-01-01T00:00:00Z); FOREVER is the latest."""
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def validate_identifier(value: Any, field_name: str) -> str:
    """Return the identifier to use for ``value`` (its NFC form); raise IdentifierError if it is not a plain,
    non-empty, printable string.

    Identifiers end up inside store filters, so anything that is not a plain string
    (dicts, lists, numbers, None) is rejected: a caller can never widen a filter.
    Strings are taken literally, operators like ``"$ne"`` included. Rejected too: lone
    surrogates (not Unicode text, e.g. a non-UTF-8 byte let through by ``surrogateescape``),
    control and format characters, surrounding whitespace, more than MAX_ID_CHARS characters.

    Normalisation policy: identifiers are Unicode-normalised to NFC on entry, so the NFC and NFD
    spellings of one name ("café" typed on two keyboards) are one tenant or user: what one adds,
    the other reads, and erasing either erases both. Callers must use the returned value, not
    ``value``. Nothing else is folded: case, width and look-alike letters ("аlice" with a Cyrillic
    a) stay distinct identifiers.
    """
    if type(value) is not str:  # noqa: E721 - subclasses of str are rejected on purpose
        raise IdentifierError(f"{field_name} must be a plain string, got {type(value).__name__}")
    if not value or not value.strip():
        raise IdentifierError(f"{field_name} must be a non-empty string")
    if value != value.strip():
        raise IdentifierError(f"{field_name} must not start or end with whitespace: {value[:MAX_ID_CHARS]!r}")
    _no_surrogate(value[: MAX_ID_CHARS * 4], field_name, IdentifierError)
    if len(value) > MAX_ID_CHARS:
        raise IdentifierError(f"{field_name} is longer than {MAX_ID_CHARS} characters")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in value):
        raise IdentifierError(f"{field_name} must not contain control characters: {value!r}")
    if not unicodedata.is_normalized("NFC", value):
        value = unicodedata.normalize("NFC", value)
        if len(value) > MAX_ID_CHARS:
            raise IdentifierError(f"{field_name} is longer than {MAX_ID_CHARS} characters")
    return value


def validate_text(value: Any, field_name: str, *, max_chars: int) -> str:
    """Return ``value`` if it is non-blank Unicode text (no lone surrogate) of at most ``max_chars`` characters."""
    if not isinstance(value, str):
        raise InputError(f"{field_name} must be text, got {type(value).__name__}")
    if not value.strip():
        raise InputError(f"{field_name} must not be empty")
    if len(value) > max_chars:
        raise InputError(f"{field_name} is {len(value):,} characters; the limit is {max_chars:,}")
    _no_surrogate(value, field_name, InputError)
    return value


def _no_surrogate(text: str, field_name: str, error: type[Exception]) -> None:
    """Raise ``error`` naming the field if ``text`` holds a lone surrogate (it cannot be encoded, stored or printed)."""
    m = _SURROGATE.search(text)
    if m:
        raise error(f"{field_name} holds a lone surrogate {ascii(m.group())} at character {m.start()}: "
                    "not valid Unicode text (a non-UTF-8 byte?)")


def parse_time(value: Any, field_name: str) -> float:
    """ISO-8601 string (``Z`` or offset; naive means UTC) or POSIX number -> POSIX seconds.

    The time must be finite and within years 1..9999 (UTC): nan, inf, year 0 and out-of-range
    numbers raise InputError naming ``field_name``.
    """
    if isinstance(value, bool):
        raise InputError(f"{field_name} must be an ISO-8601 time, got bool")
    if isinstance(value, (int, float)):
        try:
            ts = float(value)
        except OverflowError:
            raise InputError(f"{field_name} is out of range (years 1..9999 UTC): a number too large for a time"
                             ) from None
        return _in_range(ts, field_name, f"{ts:g}")
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InputError(f"{field_name} is not an ISO-8601 time (years 1..9999): {value[:64]!r}") from None
    else:
        raise InputError(f"{field_name} must be an ISO-8601 time, got {type(value).__name__}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    try:
        ts = dt.timestamp()
    except (OverflowError, ValueError, OSError):
        raise InputError(f"{field_name} is out of range (years 1..9999 UTC): {str(value)[:64]!r}") from None
    return _in_range(ts, field_name, repr(str(value)[:64]))


def _in_range(ts: float, field_name: str, shown: str) -> float:
    if not math.isfinite(ts):
        raise InputError(f"{field_name} must be a finite time, got {ts!r}")
    if not MIN_TIME <= ts <= FOREVER:
        raise InputError(f"{field_name} is out of range (years 1..9999 UTC): {shown}")
    return ts


def iso(ts: float) -> str:
    """POSIX seconds -> ISO-8601 UTC string with a ``Z``."""
    if ts >= FOREVER:
        return "9999-12-31T23:59:59Z"
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def field_values(obj: Any) -> dict[str, Any]:
    """A dataclass's fields as a dict, one level deep (lists copied, nothing deep-copied): ``asdict`` for the
    flat records the write path serialises thousands of times per batch."""
    return {name: (list(v) if isinstance(v := getattr(obj, name), (list, tuple)) else v)
            for name in _field_names(type(obj))}


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """A dataclass's field names, worked out once per class (``dataclasses.fields`` walks the class on every call)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


@dataclass(frozen=True)
class Message:
    """One chat turn, scoped to a (tenant, user)."""

    tenant_id: str
    """Tenant the message belongs to."""
    user_id: str
    """User within the tenant."""
    content: str
    """The text of the turn."""
    role: str = "user"
    """Who spoke: user, assistant, system or tool."""
    id: str = ""
    """Caller's message id (a scenario's ``m3``); derived from the content when empty."""
    session_id: str = "default"
    """Conversation session."""
    timestamp: float | None = None
    """POSIX seconds; None means "now" by the manager's clock."""
    importance: float | None = None
    """Caller's importance in [0, 1]; None uses the default."""
    labels: tuple[str, ...] = ()
    """Pollution labels from a scenario (noise, private, stale, ...); used by studies, not by recall."""

    def __post_init__(self) -> None:
        """Validate every field (IdentifierError / InputError naming it); ids are stored in NFC form
        (see :func:`validate_identifier`) and the timestamp as a float within years 1..9999."""
        for name in ("tenant_id", "user_id", "session_id"):
            _set(self, name, validate_identifier(getattr(self, name), name))
        if not isinstance(self.role, str) or self.role not in ROLES:
            raise InputError(f"role must be one of {', '.join(ROLES)}, got {self.role!r}")
        if not isinstance(self.content, str):
            raise InputError(f"content must be text, got {type(self.content).__name__}")
        _no_surrogate(self.content, "content", InputError)
        if self.id:
            _set(self, "id", validate_identifier(self.id, "message id"))
        else:
            digest = hashlib.sha1(f"{self.tenant_id}\x1f{self.user_id}\x1f{self.content}".encode()).hexdigest()
            _set(self, "id", f"msg-{digest[:16]}")
        if self.timestamp is not None:
            _set(self, "timestamp", parse_time(self.timestamp, "timestamp"))
        if self.importance is not None:
            imp = self.importance
            if isinstance(imp, bool) or not isinstance(imp, (int, float)) or not 0.0 <= imp <= 1.0:  # nan fails too
                raise InputError(f"importance must be a number in [0, 1], got {_brief(imp)}")
        if not isinstance(self.labels, (tuple, list)) or not all(isinstance(x, str) for x in self.labels):
            raise InputError(f"labels must be a list of strings, got {_brief(self.labels)}")
        for label in self.labels:
            _no_surrogate(label, "labels", InputError)
        if isinstance(self.labels, list):
            _set(self, "labels", tuple(self.labels))


def _set(obj: Any, name: str, value: Any) -> None:
    """Replace a field of a frozen dataclass during its own validation (only when the value changed)."""
    if getattr(obj, name) is not value:
        object.__setattr__(obj, name, value)


def _brief(value: Any) -> str:
    """A short, one-line, printable description of a bad value (never a 5,000-digit int)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an int of about {int(value.bit_length() * 0.30103)} digits"
    return ascii(value)[:80]


@dataclass
class MemoryRecord:
    """A long-term memory and its governance metadata (the A6 article's contract)."""

    memory_id: str
    tenant_id: str
    user_id: str
    content: str
    session_id: str = "default"
    category: Category = "episodic_fact"
    security_level: SecurityLevel = "tenant_internal"
    created_at: float = 0.0
    last_accessed_at: float = 0.0
    valid_until: float = FOREVER
    access_count: int = 0
    last_verified_at: float = 0.0
    """When the write path last saw this fact restated (a duplicate); 0.0 when never (POSIX seconds)."""
    importance: float = 0.5
    version: int = 1
    is_deprecated: bool = False
    superseded_by: str = ""
    supersedes: str = ""
    archived: bool = False
    """Moved to cold storage by the forgetting pass; never recalled, still audited and erasable."""
    role: str = "user"
    message_id: str = ""
    """Id of the message this record was made from (a scenario's ``m3``)."""
    domain_tags: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    context_tags: list[str] = field(default_factory=list)
    source_message_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; times as ISO strings, plus ``id`` (the message id) for scenario users."""
        data = asdict(self)
        for key in ("created_at", "last_accessed_at", "valid_until"):
            data[key] = iso(data[key])
        data["id"] = self.message_id or self.memory_id
        return data


@dataclass(frozen=True)
class ScoreParts:
    """The composite score of a candidate, term by term: score = similarity_part + recency_part + importance_part."""

    similarity: float
    """Raw cosine similarity, higher is more similar."""
    recency: float
    """exp(-decay_rate * age_days) in [0, 1]."""
    importance: float
    """max(importance, access frequency) in [0, 1]."""
    similarity_part: float
    """alpha * similarity."""
    recency_part: float
    """beta * recency."""
    importance_part: float
    """gamma * importance."""

    @property
    def score(self) -> float:
        return self.similarity_part + self.recency_part + self.importance_part


@dataclass(frozen=True)
class Hit:
    """A recalled memory with its similarity and composite score."""

    record: MemoryRecord
    similarity: float
    """Cosine similarity to the query; higher is more similar."""
    score: float
    """The ranking score: composite for governed recall, the similarity for blind recall."""
    parts: ScoreParts | None = None
    """Score breakdown (governed candidates only)."""
    tokens: int = 0
    """Token count of the record's content."""

    def to_dict(self) -> dict[str, Any]:
        rec = self.record
        out = {
            "id": rec.message_id or rec.memory_id,
            "memory_id": rec.memory_id,
            "tenant_id": rec.tenant_id,
            "user_id": rec.user_id,
            "content": rec.content,
            "similarity": round(self.similarity, 6),
            "score": round(self.score, 6),
            "tokens": self.tokens,
        }
        if self.parts is not None:
            out["parts"] = {k: round(v, 6) for k, v in asdict(self.parts).items()}
        return out


Stage = Literal["deprecated", "expired", "archived", "threshold", "top_k", "budget"]
STAGES: tuple[str, ...] = ("deprecated", "expired", "archived", "threshold", "top_k", "budget")


@dataclass(frozen=True)
class Dropped:
    """A candidate that did not reach the context, and the stage that dropped it."""

    hit: Hit
    stage: Stage
    """One of STAGES."""
    reason: str
    """A sentence a person can read (English)."""
    params: dict[str, Any] = field(default_factory=dict, hash=False)
    """The values the reason states (``similarity``, ``threshold``, ``top_k``, ``score``, ``tokens``, ``left``,
    ``budget``, ``superseded_by``), so a UI can say it in its own language from ``stage`` and these."""

    def to_dict(self) -> dict[str, Any]:
        return {**self.hit.to_dict(), "stage": self.stage, "reason": self.reason, "params": dict(self.params)}


@dataclass(frozen=True)
class RecallResult:
    """Blind and governed recall for one query, side by side."""

    query: str
    tenant_id: str
    user_id: str
    blind: list[Hit]
    """Top-k by similarity only: no threshold, no lifecycle filter, no rescoring (still isolated)."""
    governed: list[Hit]
    """What governed recall injects: lifecycle-filtered in the store, thresholded, rescored, cut, budgeted."""
    dropped: list[Dropped]
    """Every candidate seen that is not in ``governed``, with its stage."""
    as_of: float
    """The time the recall was evaluated at (POSIX seconds)."""

    @property
    def governed_tokens(self) -> int:
        return sum(h.tokens for h in self.governed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "as_of": iso(self.as_of),
            "blind": [h.to_dict() for h in self.blind],
            "governed": [h.to_dict() for h in self.governed],
            "dropped": [d.to_dict() for d in self.dropped],
        }


@dataclass(frozen=True)
class Context:
    """The text that would be put into the prompt for one (tenant, user), and where it came from."""

    text: str
    summary: str
    recent: list[Message]
    memories: list[Hit]
    tokens: int
    """Tokens of the whole context."""
    memory_tokens: int
    """Tokens of the injected long-term memories (bounded by the token budget)."""
    token_budget: int


@dataclass(frozen=True)
class PathCheck:
    """One path checked after an erasure and what remained on it."""

    name: str
    remaining: int
    """How many items of the erased user (or, for byte scans, canary hits) were still found."""
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "remaining": self.remaining, "detail": self.detail}


@dataclass(frozen=True)
class EraseReport:
    """What erase_user removed and what each path held afterwards."""

    tenant_id: str
    user_id: str
    removed: dict[str, int]
    """Items removed per path."""
    paths: list[PathCheck]
    others_touched: int
    """Rows of other owners the erasure's deletes removed (records, windows, summaries, decisions, marks,
    registry): the rows deleted minus the owner's own, both counted by key inside the erase's transaction.
    0 unless the erase touched someone else; it costs the owner's rows, not a count of everyone's."""

    @property
    def ok(self) -> bool:
        return all(p.remaining == 0 for p in self.paths) and self.others_touched == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "removed": dict(self.removed),
            "paths": [p.to_dict() for p in self.paths],
            "others_touched": self.others_touched,
            "ok": self.ok,
        }
