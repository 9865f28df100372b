"""Dedup pair files (docs/formats.md): load, validate, and compare the plain rule with the governed one.

A pair file is a JSON list of ``{"id", "existing", "incoming", "expected"?}``;
``expected`` is one of duplicate, update, coexist, new. Malformed files raise
:class:`DataFileError` naming the file, the item and the field.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from memory.write.adjudicate import VERDICTS, Judge, Verdict, judge_reason, plain_rule, prepare_judge
from memory.core.reasons import Reason
from memory.core.config import MemoryConfig
from memory.embed.embedders import Embedder
from memory.core.errors import DataFileError
from memory.core.scenario import SCENARIOS_DIR, load_json, read_data_file

MAX_TEXT_CHARS = 10_000
PAIRS_DIR = SCENARIOS_DIR / "pairs"
"""The teaching pair sets (``memory/scenarios/pairs/dedup_pairs_*.json``, 107 pairs each): package data beside the
lesson scenarios, so an installed lab's Dedup page offers them. Listed by :func:`shipped_pair_files`. The judge's
training and held-out sets stay in the repository's ``fixtures/`` (memory.core.scenario.FIXTURES_DIR)."""

ERROR_KINDS: dict[str, str] = {
    "silent_loss": "an update taken for a duplicate: the new value is dropped",
    "wrong_retire": "a coexisting or new fact retires a valid one",
    "stale_kept": "an update taken for new/coexist: the stale fact stays recallable",
    "dropped": "a new or coexisting fact taken for a duplicate: it is never stored",
    "duplicate_stored": "a duplicate stored again (or retiring its twin)",
    "other": "coexist/new confusion (both facts are kept either way)",
}


class PairItem(BaseModel):
    """One pair as written in the file (unknown fields such as ``note`` are kept)."""

    model_config = ConfigDict(extra="allow", strict=True)
    id: str
    existing: str
    incoming: str
    expected: Literal["duplicate", "update", "coexist", "new"] | None = None


_PAIRS = TypeAdapter(list[PairItem])


@dataclass(frozen=True)
class PairResult:
    """The plain and the governed decision for one pair."""

    id: str
    existing: str
    incoming: str
    similarity: float
    """Cosine similarity of the two texts with the chosen embedder (higher is more similar)."""
    plain_rule: str
    """The two-band rule: duplicate, update or new."""
    decision: Verdict
    """The governed decision: duplicate, update, coexist or new."""
    why: Reason
    """Why the governed rule decided so: the rule that fired and its parameters."""
    expected: str | None = None
    """The label from the file, when present."""

    @property
    def reason(self) -> str:
        """Why, in English."""
        return self.why.text()

    def to_dict(self) -> dict[str, Any]:
        out = {"id": self.id, "existing": self.existing, "incoming": self.incoming,
               "similarity": round(self.similarity, 6), "plain_rule": self.plain_rule, "decision": self.decision,
               "reason": self.reason, **self.why.to_dict()}
        if self.expected is not None:
            out["expected"] = self.expected
        return out


@dataclass(frozen=True)
class PairReport:
    """Every pair's decisions, and the accuracy of both rules where labels exist."""

    source: str
    embedder: str
    results: list[PairResult]
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def labelled(self) -> list[PairResult]:
        return [r for r in self.results if r.expected is not None]

    def accuracy(self, rule: Literal["plain", "governed"]) -> float | None:
        """Share of labelled pairs decided as expected; None when no pair has a label."""
        labelled = self.labelled
        if not labelled:
            return None
        pick = (lambda r: r.plain_rule) if rule == "plain" else (lambda r: r.decision)
        return sum(pick(r) == r.expected for r in labelled) / len(labelled)

    def errors(self, rule: Literal["plain", "governed"]) -> dict[str, int]:
        """Mistakes by kind (see ERROR_KINDS); every kind is present, zero when it never happens."""
        counts = Counter({k: 0 for k in ERROR_KINDS})
        for r in self.labelled:
            assert r.expected is not None  # labelled: only the pairs that have an expected decision
            got = r.plain_rule if rule == "plain" else r.decision
            if got != r.expected:
                counts[error_kind(r.expected, got)] += 1
        return dict(counts)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "embedder": self.embedder, "config": self.config,
                               "pairs": [r.to_dict() for r in self.results]}
        if self.labelled:
            out["labelled"] = len(self.labelled)
            out["accuracy"] = {"plain": self.accuracy("plain"), "governed": self.accuracy("governed")}
            out["errors"] = {"plain": self.errors("plain"), "governed": self.errors("governed")}
        return out


def error_kind(expected: str, got: str) -> str:
    """Classify a wrong decision by what it does to the store."""
    if expected == "update" and got == "duplicate":
        return "silent_loss"
    if expected in ("coexist", "new") and got == "update":
        return "wrong_retire"
    if expected == "update":
        return "stale_kept"
    if expected in ("coexist", "new") and got == "duplicate":
        return "dropped"
    if expected == "duplicate":
        return "duplicate_stored"
    return "other"


def load_pairs(path: str | Path) -> list[PairItem]:
    """Read and validate a pair file."""
    return parse_pairs(read_data_file(path, "pair file"), source=str(path))


def parse_pairs(raw: bytes | str, *, source: str) -> list[PairItem]:
    """Validate pair JSON given as bytes or text; ``source`` names it in errors."""
    data = load_json(raw, source)
    if not isinstance(data, list):
        raise DataFileError(f"{source}: the top level must be a JSON list of pairs, got {type(data).__name__}")
    if not data:
        raise DataFileError(f"{source}: the file holds no pairs")
    try:
        pairs = _PAIRS.validate_python(data)
    except ValidationError as exc:
        raise DataFileError(_describe(exc, data, source)) from None
    seen: set[str] = set()
    for i, p in enumerate(pairs):
        item = f"{source}: pairs[{i}] (id {p.id!r})"
        if not p.id.strip():
            raise DataFileError(f"{source}: pairs[{i}]: field 'id' is empty")
        if p.id in seen:
            raise DataFileError(f"{item}: field 'id' repeats an earlier pair id")
        seen.add(p.id)
        for name in ("existing", "incoming"):
            text = getattr(p, name)
            if not text.strip():
                raise DataFileError(f"{item}: field {name!r} is empty")
            if len(text) > MAX_TEXT_CHARS:
                raise DataFileError(f"{item}: field {name!r} is {len(text):,} characters; the limit is {MAX_TEXT_CHARS:,}")
    return pairs


def pair_similarities(pairs: Sequence[PairItem], embedder: Embedder) -> list[float]:
    """Cosine similarity of every pair (higher is more similar), in one batched embedding call."""
    vecs = embedder.embed([p.existing for p in pairs] + [p.incoming for p in pairs])
    n = len(pairs)
    return [float(vecs[i] @ vecs[n + i]) for i in range(n)]


def decide_pairs(
    pairs: Sequence[PairItem], similarities: Sequence[float], *, config: MemoryConfig, source: str, embedder: str,
    judge: Judge | None = None,
) -> PairReport:
    """The plain rule and the governed decision (``judge``, default the rules) of every pair at the config's bands;
    nothing is embedded, so moving the bands only re-runs this."""
    decide = judge or judge_reason
    prepare_judge(decide, [t for p in pairs for t in (p.existing, p.incoming)], [(p.existing, p.incoming) for p in pairs])
    results = []
    for p, sim in zip(pairs, similarities):
        verdict, why = decide(p.existing, p.incoming, sim, config=config)
        if verdict not in VERDICTS:
            raise ValueError(f"judge {decide!r} returned verdict {verdict!r} for pair {p.id!r}")
        results.append(PairResult(p.id, p.existing, p.incoming, sim, plain_rule(sim, config), verdict, why,
                                  p.expected))
    return PairReport(source=source, embedder=embedder, results=results,
                      config={"duplicate_band": config.duplicate_band, "conflict_band": config.conflict_band})


def evaluate_pairs(
    pairs: list[PairItem], *, embedder: Embedder, config: MemoryConfig | None = None, source: str = "pairs",
    judge: Judge | None = None,
) -> PairReport:
    """Similarity of every pair (one batched embedding call), the plain rule and the governed decision."""
    return decide_pairs(pairs, pair_similarities(pairs, embedder), config=config or MemoryConfig(),
                        source=source, embedder=embedder.name, judge=judge)


def shipped_pair_files() -> dict[str, Path]:
    """name (file stem: ``dedup_pairs_en``, ``dedup_pairs_zh``) -> path of every shipped teaching pair set
    (:data:`PAIRS_DIR`), sorted by name. The one place that lists them: the lab's Dedup page, the conformance
    suite (memory.eval.conformance), the score-scale writer and the judge's training script (whose ``trained_on``
    map, in memory/write/judges/judge_model.json, is keyed by these names)."""
    return {p.stem: p for p in sorted(PAIRS_DIR.glob("dedup_pairs_*.json"))}


def _describe(exc: ValidationError, data: list, source: str) -> str:
    err = exc.errors()[0]
    loc = list(err["loc"])
    index = loc[0] if loc and isinstance(loc[0], int) else None
    entry = data[index] if index is not None and index < len(data) else None
    ident = entry.get("id") if isinstance(entry, dict) else None
    item = f"pairs[{index}]" + (f" (id {ident!r})" if isinstance(ident, str) else "")
    field_name = ".".join(str(p) for p in loc[1:]) or "(the item itself)"
    if err["type"] == "missing":
        problem = "is required"
    elif err["type"] == "literal_error":
        problem = f"must be one of {', '.join(VERDICTS)}, got {json.dumps(err.get('input'), ensure_ascii=False)}"
    elif err["type"] == "model_type":
        problem = "must be an object with id, existing, incoming"
    else:
        problem = err["msg"].lower()
    return f"{source}: {item}: field {field_name!r} {problem}"
