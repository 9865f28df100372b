"""Labelled datasets for threshold studies: one form for the project's scenarios and LoCoMo files.

A :class:`Dataset` is memories (id, owner ``(tenant, user)``, text, time, pollution labels)
and questions (owner, text, relevant ids, forbidden ids, category, no-answer flag, as-of time).
Ids are unique within an owner; questions only ever refer to memories of their own owner
(``forbidden`` ids of other owners are kept, they simply can never be recalled).

Loaders (:func:`load_dataset` picks one from a spec string):

* ``PATH`` (or the stem of a shipped scenario, e.g. ``workshop_en``): a scenario file
  (docs/formats.md) read with :func:`memory.core.scenario.load_scenario`; a query with no
  ``relevant`` ids is a no-answer question (the right context is empty).
* ``locomo:PATH``: a LoCoMo-format file. One user per conversation (tenant ``locomo``,
  user = ``sample_id``). ``unit="turns"``: every dialogue turn is a memory, id = its ``dia_id``,
  text ``"Speaker: text"`` (plus ``[shared a photo: caption]`` when the turn has a
  ``blip_caption``), time = the session's ``date_time``. ``unit="facts"``: the sample's
  ``observation`` facts are the memories (ids ``O<session>:<n>``), each mapped back to its
  source ``dia_id``\\ s; a question's relevant facts are those whose source turn is in its
  evidence. ``evidence`` ids name relevant turns; category 5 (adversarial) is a no-answer
  question. Every question is asked as of the conversation's last session.

LoCoMo evidence is sometimes malformed (``"D8:6; D9:17"`` in one string, an empty list,
ids that name no turn); such cases are repaired or dropped and counted in
:attr:`Dataset.notes`, never silently. A malformed file raises :class:`DataFileError`
naming the file, the item and the field.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from memory.core.errors import DataFileError, InputError
from memory.core.schema import Message, parse_time
from memory.core.scenario import Scenario, load_json, load_scenario, read_data_file, shipped_scenarios

Unit = Literal["turns", "facts"]
UNITS: tuple[str, ...] = ("turns", "facts")
LOCOMO_PREFIX = "locomo:"
LOCOMO_TENANT = "locomo"
NO_ANSWER_CATEGORY = 5
"""LoCoMo's adversarial category: the question has no answer in the conversation."""


@dataclass(frozen=True)
class DataMemory:
    """One memory of a labelled dataset."""

    id: str
    """Unique within its owner (a scenario's ``m3``, a LoCoMo ``D1:3`` or ``O1:4``)."""
    tenant_id: str
    user_id: str
    text: str
    timestamp: float
    """POSIX seconds the memory was written."""
    labels: tuple[str, ...] = ()
    """Pollution labels (``noise``, ``private``, ``stale``, ...); empty when the data has none."""
    session_id: str = "default"
    role: str = "user"
    sources: tuple[str, ...] = ()
    """Ids of the turns a fact was derived from (``facts`` unit); empty for turns."""

    @property
    def owner(self) -> tuple[str, str]:
        return (self.tenant_id, self.user_id)

    def to_message(self) -> Message:
        """The memory as a Message for :meth:`MemoryManager.add_many`."""
        return Message(
            tenant_id=self.tenant_id, user_id=self.user_id, content=self.text, role=self.role, id=self.id,
            session_id=self.session_id, timestamp=self.timestamp, labels=self.labels,
        )


@dataclass(frozen=True)
class DataQuestion:
    """One labelled question, asked by one owner."""

    id: str
    tenant_id: str
    user_id: str
    text: str
    relevant: tuple[str, ...]
    """Ids of the owner's memories that answer it (empty for no-answer questions)."""
    forbidden: tuple[str, ...]
    """Ids that must never be injected for it (stale facts, other users' data)."""
    category: str
    """Free-form group for per-category breakdowns (LoCoMo: ``"1"`` .. ``"5"``)."""
    no_answer: bool
    """True when the right context is empty (LoCoMo category 5, a scenario query with no relevant ids)."""
    as_of: float
    """POSIX seconds the question is asked at (ages and expiry are relative to it)."""

    @property
    def owner(self) -> tuple[str, str]:
        return (self.tenant_id, self.user_id)

    @property
    def answerable(self) -> bool:
        """Counts for precision and recall: not a no-answer question and has at least one relevant id."""
        return not self.no_answer and bool(self.relevant)


@dataclass(frozen=True)
class Dataset:
    """Memories and labelled questions in one form, whatever file they came from."""

    name: str
    source: str
    """The file it was read from."""
    kind: str
    """``scenario`` or ``locomo``."""
    unit: Unit
    """``turns`` or ``facts``."""
    memories: tuple[DataMemory, ...]
    questions: tuple[DataQuestion, ...]
    notes: dict[str, int] = field(default_factory=dict)
    """Counts of repaired or dropped labels (e.g. ``evidence_split``, ``evidence_missing``)."""

    def owners(self) -> list[tuple[str, str]]:
        return sorted({m.owner for m in self.memories})

    def memories_of(self, owner: tuple[str, str]) -> list[DataMemory]:
        return [m for m in self.memories if m.owner == owner]

    @property
    def labels(self) -> list[str]:
        """Every pollution label used by some memory, sorted."""
        return sorted({label for m in self.memories for label in m.labels})

    def summary(self) -> dict[str, Any]:
        """Counts for a header line or JSON output."""
        return {
            "name": self.name, "source": self.source, "kind": self.kind, "unit": self.unit,
            "owners": len(self.owners()), "memories": len(self.memories), "questions": len(self.questions),
            "answerable": sum(q.answerable for q in self.questions),
            "no_answer": sum(q.no_answer for q in self.questions), "notes": dict(self.notes),
        }


def load_dataset(spec: str | Path, *, unit: Unit = "turns") -> Dataset:
    """``locomo:PATH``, a scenario file path, or the stem of a shipped scenario (``workshop_en``)."""
    _check_unit(unit)
    text = str(spec)
    if text.startswith(LOCOMO_PREFIX):
        return load_locomo(text[len(LOCOMO_PREFIX):], unit=unit)
    path = Path(text)
    if not path.exists() and text in shipped_scenarios():
        path = shipped_scenarios()[text]
    if unit != "turns":
        raise InputError(f"unit {unit!r} needs a LoCoMo dataset (locomo:PATH); scenario files only have turns")
    return scenario_dataset(path)


def _check_unit(unit: object) -> None:
    if unit not in UNITS:
        raise InputError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")


def is_locomo(raw: bytes) -> bool:
    """Whether JSON bytes look like a LoCoMo file (a list of samples) rather than a scenario (an object).

    Only the first character is looked at; the loader then validates the whole file."""
    return raw.lstrip(b"\xef\xbb\xbf").lstrip()[:1] == b"["


# --- scenarios ------------------------------------------------------------------

def scenario_dataset(source: str | Path | Scenario) -> Dataset:
    """A project scenario (a file, or one already loaded, such as the lab's upload) as a Dataset: messages are
    memories, queries are questions."""
    scenario = source if isinstance(source, Scenario) else load_scenario(source)
    memories = tuple(
        DataMemory(
            id=m.id, tenant_id=m.tenant_id, user_id=m.user_id, text=m.content, timestamp=float(m.timestamp or 0.0),
            labels=tuple(m.labels), session_id=m.session_id, role=m.role,
        )
        for m in scenario.messages
    )
    questions = []
    for q in scenario.queries:
        extra = q.model_extra or {}
        no_answer = extra.get("no_answer")
        questions.append(DataQuestion(
            id=q.id, tenant_id=q.tenant_id, user_id=q.user_id, text=q.query, relevant=tuple(q.relevant),
            forbidden=tuple(q.forbidden), category=str(extra.get("category", "default")),
            no_answer=(not q.relevant) if not isinstance(no_answer, bool) else no_answer,
            as_of=scenario.last_time if q.as_of is None else parse_time(q.as_of, "as_of"),
        ))
    return Dataset(scenario.name, scenario.source, "scenario", "turns", memories, tuple(questions), {})


# --- LoCoMo ---------------------------------------------------------------------

class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class _Turn(_Loose):
    speaker: str
    dia_id: str
    text: str
    blip_caption: str | None = None


class _QA(_Loose):
    question: str
    category: int
    evidence: list[Any] | None = None


class _Sample(_Loose):
    sample_id: str
    conversation: dict[str, Any]
    qa: list[Any]
    observation: dict[str, Any] | None = None


_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D\d+:\d+")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %d %B %Y", "%I:%M %p on %d %b %Y")


def load_locomo(path: str | Path, *, unit: Unit = "turns") -> Dataset:
    """Read a LoCoMo-format JSON file (a list of samples) as a Dataset of ``turns`` or ``facts``."""
    _check_unit(unit)
    return parse_locomo(read_data_file(path, "LoCoMo file"), source=str(path), unit=unit)


def parse_locomo(raw: bytes | str, *, source: str, unit: Unit = "turns") -> Dataset:
    """LoCoMo-format JSON given as bytes or text (already read, e.g. through the size cap); ``source`` names
    the file in errors and the dataset (``locomo:<file name>``)."""
    _check_unit(unit)
    data = load_json(raw, source)
    if not isinstance(data, list) or not data:
        raise DataFileError(f"{source}: the top level must be a non-empty JSON list of LoCoMo samples")
    notes: Counter[str] = Counter()
    memories: list[DataMemory] = []
    questions: list[DataQuestion] = []
    seen_samples: set[str] = set()
    for index, item in enumerate(data):
        sample = _validate(_Sample, item, source, f"samples[{index}]")
        where = f"{source}: samples[{index}] (sample_id {sample.sample_id!r})"
        if sample.sample_id in seen_samples:
            raise DataFileError(f"{where}: field 'sample_id' repeats an earlier sample")
        seen_samples.add(sample.sample_id)
        turns, times = _turns(sample, where)
        if unit == "turns":
            mems = turns
        else:
            mems = _facts(sample, where, {m.id for m in turns}, times, notes)
        memories += mems
        questions += _questions(sample, where, {m.id for m in turns}, mems, unit, max(times.values()), notes)
    name = f"locomo:{Path(source).name}"
    return Dataset(name, source, "locomo", unit, tuple(memories), tuple(questions), dict(sorted(notes.items())))


def _validate(model: type[BaseModel], item: Any, source: str, label: str) -> Any:
    try:
        return model.model_validate(item)
    except ValidationError as exc:
        err = exc.errors()[0]
        if not isinstance(item, dict):
            raise DataFileError(f"{source}: {label}: must be a JSON object, got {type(item).__name__}") from None
        ident = item.get("sample_id") or item.get("dia_id")
        named = f"{label} ({'sample_id' if 'sample_id' in item else 'dia_id'} {ident!r})" if ident else label
        field_name = ".".join(str(p) for p in err["loc"]) or "(the item itself)"
        problem = "is required" if err["type"] == "missing" else err["msg"].lower()
        raise DataFileError(f"{source}: {named}: field {field_name!r} {problem}") from None


def _parse_locomo_time(value: Any, where: str, key: str) -> float:
    if not isinstance(value, str):
        raise DataFileError(f"{where}: field 'conversation.{key}' must be a date like '1:56 pm on 8 May, 2023'")
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(value.strip(), fmt).replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            continue
    raise DataFileError(f"{where}: field 'conversation.{key}' is not a date like '1:56 pm on 8 May, 2023': {value!r}")


def _turns(sample: _Sample, where: str) -> tuple[list[DataMemory], dict[int, float]]:
    """Every turn of every session as a memory; and each session's time."""
    conv = sample.conversation
    sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION.fullmatch(k)))
    if not sessions:
        raise DataFileError(f"{where}: field 'conversation' has no session_<n> list of turns")
    times: dict[int, float] = {}
    out: list[DataMemory] = []
    seen: set[str] = set()
    for n in sessions:
        key = f"session_{n}"
        turns = conv[key]
        if not isinstance(turns, list):
            raise DataFileError(f"{where}: field 'conversation.{key}' must be a list of turns")
        if f"{key}_date_time" not in conv:
            raise DataFileError(f"{where}: field 'conversation.{key}_date_time' is required")
        times[n] = _parse_locomo_time(conv[f"{key}_date_time"], where, f"{key}_date_time")
        for i, item in enumerate(turns):
            turn = _validate(_Turn, item, where, f"conversation.{key}[{i}]")
            if turn.dia_id in seen:
                raise DataFileError(f"{where}: conversation.{key}[{i}] (dia_id {turn.dia_id!r}): field 'dia_id' repeats")
            if not turn.text.strip() and not turn.blip_caption:
                raise DataFileError(f"{where}: conversation.{key}[{i}] (dia_id {turn.dia_id!r}): field 'text' is empty")
            seen.add(turn.dia_id)
            text = f"{turn.speaker}: {turn.text}"
            if turn.blip_caption:
                text += f" [shared a photo: {turn.blip_caption}]"
            out.append(DataMemory(
                id=turn.dia_id, tenant_id=LOCOMO_TENANT, user_id=sample.sample_id, text=text,
                timestamp=times[n], session_id=key,
            ))
    return out, times


def _split_ids(value: Any) -> list[str] | None:
    """Dialogue ids inside one evidence or source entry ("D8:6; D9:17" -> two ids); None if it holds none."""
    if isinstance(value, list):
        found = [i for v in value for i in (_split_ids(v) or [])]
        return found or None
    if not isinstance(value, str):
        return None
    found = _DIA_ID.findall(value)
    return found or None


def _facts(sample: _Sample, where: str, turn_ids: set[str], times: dict[int, float], notes: Counter) -> list[DataMemory]:
    """The sample's observation facts, each with the turns it came from."""
    if sample.observation is None:
        raise DataFileError(f"{where}: field 'observation' is required for unit 'facts'")
    out: list[DataMemory] = []
    for key in sorted(sample.observation, key=lambda k: (len(k), k)):
        m = re.fullmatch(r"session_(\d+)_observation", key)
        if not m:
            continue
        n = int(m.group(1))
        if n not in times:
            raise DataFileError(f"{where}: field 'observation.{key}' names a session with no turns")
        by_speaker = sample.observation[key]
        if not isinstance(by_speaker, dict):
            raise DataFileError(f"{where}: field 'observation.{key}' must map speakers to lists of [fact, dia_id]")
        count = 0
        for speaker, facts in by_speaker.items():
            if not isinstance(facts, list):
                raise DataFileError(f"{where}: field 'observation.{key}.{speaker}' must be a list of [fact, dia_id]")
            for i, entry in enumerate(facts):
                label = f"observation.{key}.{speaker}[{i}]"
                if not (isinstance(entry, list) and len(entry) >= 2 and isinstance(entry[0], str) and entry[0].strip()):
                    raise DataFileError(f"{where}: field {label!r} must be [fact text, source dia_id]")
                ids = _split_ids(entry[1]) or []
                if not isinstance(entry[1], str) or len(ids) != 1:
                    notes["fact_source_repaired"] += 1
                known = tuple(i for i in dict.fromkeys(ids) if i in turn_ids)
                if len(known) < len(ids) or not ids:
                    notes["fact_source_unknown"] += 1
                count += 1
                out.append(DataMemory(
                    id=f"O{n}:{count}", tenant_id=LOCOMO_TENANT, user_id=sample.sample_id, text=entry[0],
                    timestamp=times[n], session_id=f"session_{n}", sources=known,
                ))
    return out


def _questions(
    sample: _Sample, where: str, turn_ids: set[str], memories: list[DataMemory], unit: Unit, as_of: float,
    notes: Counter,
) -> list[DataQuestion]:
    by_turn: dict[str, list[str]] = {}
    for m in memories:
        for src in m.sources:
            by_turn.setdefault(src, []).append(m.id)
    out: list[DataQuestion] = []
    for i, item in enumerate(sample.qa):
        qa = _validate(_QA, item, where, f"qa[{i}]")
        label = f"{where}: qa[{i}]"
        if not qa.question.strip():
            raise DataFileError(f"{label}: field 'question' is empty")
        if not 1 <= qa.category <= 5:
            raise DataFileError(f"{label}: field 'category' must be 1..5, got {qa.category}")
        no_answer = qa.category == NO_ANSWER_CATEGORY
        evidence: list[str] = []
        for entry in qa.evidence or []:
            ids = _split_ids(entry)
            if ids is None:
                notes["evidence_unparsable"] += 1
                continue
            if len(ids) > 1 or not isinstance(entry, str) or entry.strip() != ids[0]:
                notes["evidence_split"] += 1
            for e in ids:
                if e in turn_ids:
                    evidence.append(e)
                else:
                    notes["evidence_unknown"] += 1
        evidence = list(dict.fromkeys(evidence))
        relevant: list[str] = []
        if not no_answer:
            if not evidence:
                notes["evidence_missing"] += 1
            if unit == "turns":
                relevant = evidence
            else:
                relevant = sorted({f for e in evidence for f in by_turn.get(e, [])}, key=_fact_order)
                if evidence and not relevant:
                    notes["evidence_without_facts"] += 1
        out.append(DataQuestion(
            id=f"{sample.sample_id}/q{i + 1}", tenant_id=LOCOMO_TENANT, user_id=sample.sample_id, text=qa.question,
            relevant=tuple(relevant), forbidden=(), category=str(qa.category), no_answer=no_answer, as_of=as_of,
        ))
    return out


def _fact_order(fact_id: str) -> tuple[int, int]:
    session, n = fact_id[1:].split(":")
    return int(session), int(n)
