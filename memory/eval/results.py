"""Results of a threshold study: metrics per setting, ranking metrics, the recommendation, output.

Produced by :func:`memory.eval.study.sweep`; see that module (and docs/study.md) for the metric
definitions. ``StudyResult.to_dict()`` is the CLI's JSON, ``to_frame()`` a pandas table,
``write(path)`` a .json or .csv file.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from memory.core.errors import InputError
from memory.core.exports import write_csv
from memory.eval.datasets import Unit
from memory.eval.ranking import Mode

_DIGITS = 6
"""Output values are rounded to this many decimals (the same numbers every run)."""


@dataclass(frozen=True)
class Metrics:
    """Metrics of one setting over a group of questions (all of them, or one category)."""

    questions: int
    """Questions in the group."""
    answerable: int
    """Questions with relevant memories (recall is averaged over these)."""
    no_answer: int
    """Questions whose right context is empty."""
    precision: float | None
    """Micro precision over answerable and no-answer questions; None when nothing was injected."""
    recall: float | None
    """Macro recall over answerable questions; None when there are none."""
    f1: float | None
    """2PR / (P + R); 0 when both are 0; None when either is None."""
    pollution_rate: float | None
    """1 - precision."""
    avg_injected: float
    """Mean injected memories per question."""
    avg_tokens: float
    """Mean injected tokens per question."""
    forbidden_hits: int
    """Injected memories that their question lists as forbidden, summed over questions."""
    isolation_leaks: int
    """Injected memories of another (tenant, user); the store's isolation makes this 0."""
    no_answer_empty_rate: float | None
    """Share of no-answer questions with nothing injected; None when there are none."""
    no_answer_avg_injected: float | None
    """Mean injected memories per no-answer question."""
    pollution_by_label: dict[str, float | None]
    """label -> share of all injected memories that carry it (labelled datasets only)."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _rounded(getattr(self, f.name)) for f in fields(Metrics)}


@dataclass(frozen=True)
class SweepRow(Metrics):
    """One setting of the sweep and its metrics."""

    threshold: float
    top_k: int
    decay_rate: float
    by_category: dict[str, Metrics]
    """The same metrics per question category."""

    @property
    def setting(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "top_k": self.top_k, "decay_rate": self.decay_rate}

    def to_dict(self, *, categories: bool = True) -> dict[str, Any]:
        out = {**self.setting, **Metrics.to_dict(self)}
        if categories:
            out["by_category"] = {c: m.to_dict() for c, m in self.by_category.items()}
        return out


@dataclass(frozen=True)
class AtK:
    """Ranking quality at a cut-off k (no threshold, no decay)."""

    k: int
    recall: float | None
    """Mean |top k & relevant| / |relevant| over answerable questions."""
    precision: float | None
    """Mean |top k & relevant| / k over answerable questions."""
    questions: int
    """Answerable questions averaged over."""

    def to_dict(self) -> dict[str, Any]:
        return {"recall": _rounded(self.recall), "precision": _rounded(self.precision), "questions": self.questions}


@dataclass(frozen=True)
class Recommendation:
    """The recommended operating point and the rule that chose it."""

    rule: str
    """``f1`` or ``precision@recall>=R``."""
    description: str
    """The rule in words, tie-breaks included."""
    row: SweepRow | None
    """The chosen setting; None when no setting satisfies the rule."""
    note: str = ""
    """Why nothing was chosen, when nothing was."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "description": self.description, "found": self.row is not None}
        if self.row is not None:
            out.update(self.row.to_dict(categories=False))
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class StudyResult:
    """A whole study: dataset, mode, ranking metrics, the sweep and the recommended point."""

    dataset: str
    """Dataset name (``workshop-en``, ``locomo:locomo-sample.json``)."""
    source: str
    """The file it was read from."""
    unit: Unit
    mode: Mode
    embedder: str | None
    scorer: str
    """What the threshold applies to, in words."""
    questions: int
    answerable: int
    no_answer: int
    dataset_notes: dict[str, int]
    """Repaired or dropped labels of the dataset (see :attr:`Dataset.notes`)."""
    token_budget: int
    at_k: dict[int, AtK]
    at_k_by_category: dict[str, dict[int, AtK]]
    sweep: list[SweepRow]
    """Sorted by decay_rate, top_k, threshold."""
    recommended: Recommendation
    labels: list[str]
    """Pollution labels present in the dataset."""
    pool_missing: int = 0
    """(question, memory) pairs missing from the store's full-pool queries (see Rankings.pool_missing)."""

    @property
    def categories(self) -> list[str]:
        return sorted(self.at_k_by_category, key=category_key)

    def row(self, *, threshold: float, top_k: int, decay_rate: float = 0.0) -> SweepRow:
        """The sweep row of one setting (KeyError when it was not swept)."""
        for r in self.sweep:
            if math.isclose(r.threshold, threshold, abs_tol=1e-9) and r.top_k == top_k and \
                    math.isclose(r.decay_rate, decay_rate, abs_tol=1e-9):
                return r
        raise KeyError(f"no sweep row for threshold={threshold}, top_k={top_k}, decay_rate={decay_rate}")

    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON (same numbers every run: no timings, values rounded to 6 digits)."""
        return {
            "dataset": self.dataset, "source": self.source, "unit": self.unit, "mode": self.mode,
            "embedder": self.embedder, "scorer": self.scorer, "questions": self.questions,
            "answerable": self.answerable, "no_answer": self.no_answer, "dataset_notes": dict(self.dataset_notes),
            "token_budget": self.token_budget, "pool_missing": self.pool_missing,
            "at_k": {str(k): a.to_dict() for k, a in self.at_k.items()},
            "at_k_by_category": {c: {str(k): a.to_dict() for k, a in v.items()} for c, v in self.at_k_by_category.items()},
            "sweep": [r.to_dict() for r in self.sweep],
            "recommended": self.recommended.to_dict(),
        }

    def to_frame(self):
        """The sweep as a pandas DataFrame, one row per setting (per-label pollution as ``pollution_<label>``)."""
        import pandas as pd

        return pd.DataFrame(self._flat_rows(), columns=self._columns())

    def category_frame(self):
        """Per-category metrics of every setting, long format (one row per setting and category)."""
        import pandas as pd

        rows = []
        for r in self.sweep:
            for cat, m in r.by_category.items():
                rows.append({**r.setting, "category": cat, **_flat_metrics(m, self.labels)})
        return pd.DataFrame(rows)

    def write(self, path: str | Path) -> Path:
        """Write the study as ``.json`` (:meth:`to_dict`) or ``.csv`` (the sweep table)."""
        path = check_out_path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() == ".json":
            path.write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        else:  # every text cell made safe for a spreadsheet (memory.core.exports)
            import pandas as pd

            write_csv(pd.DataFrame(self._flat_rows(), columns=self._columns()), path)
        return path

    def _columns(self) -> list[str]:
        head = ["dataset", "unit", "mode", "embedder", "threshold", "top_k", "decay_rate"]
        return head + list(_flat_metrics(self.sweep[0], self.labels))

    def _flat_rows(self) -> list[dict[str, Any]]:
        base = {"dataset": self.dataset, "unit": self.unit, "mode": self.mode, "embedder": self.embedder}
        return [{**base, **r.setting, **_flat_metrics(r, self.labels)} for r in self.sweep]


def check_out_path(path: str | Path) -> Path:
    """The output path, if it ends in .json or .csv (checked before a study starts)."""
    path = Path(path)
    if path.suffix.lower() not in (".json", ".csv"):
        raise InputError(f"--out must end in .json or .csv, got {path.name!r}")
    return path


def format_study(result: StudyResult, *, limit: int = 60) -> str:
    """A plain-text report: ranking metrics, the sweep table (first ``limit`` rows), the recommendation."""
    def f(v: Any) -> str:
        return "  -  " if v is None else f"{v:5.3f}"

    lines = [
        f"dataset: {result.dataset} ({result.unit}), mode: {result.mode}, scorer: {result.scorer}",
        f"questions: {result.questions} ({result.answerable} answerable, {result.no_answer} no-answer)"
        + (f"; notes: {result.dataset_notes}" if result.dataset_notes else ""),
        "", "ranking (no threshold): " + "  ".join(
            f"recall@{k} {f(a.recall)} precision@{k} {f(a.precision)}" for k, a in result.at_k.items()),
        "", " thresh top_k decay  prec recall    f1  injected  na_empty forbidden",
    ]
    for r in result.sweep[:limit]:
        lines.append(f"  {r.threshold:5.3f} {r.top_k:5d} {r.decay_rate:5.3f} {f(r.precision)}  {f(r.recall)} {f(r.f1)}"
                     f"  {r.avg_injected:8.2f}  {f(r.no_answer_empty_rate)}  {r.forbidden_hits:8d}")
    if len(result.sweep) > limit:
        lines.append(f"  ... {len(result.sweep) - limit} more rows (use --json or --out)")
    rec = result.recommended
    lines += ["", f"recommended ({rec.rule}: {rec.description}):"]
    if rec.row is None:
        lines.append(f"  none: {rec.note}")
    else:
        r = rec.row
        lines.append(f"  threshold {r.threshold:g}, top_k {r.top_k}, decay_rate {r.decay_rate:g}: precision {f(r.precision)},"
                     f" recall {f(r.recall)}, F1 {f(r.f1)}, {r.avg_injected:.2f} injected per question")
    return "\n".join(lines)


def _flat_metrics(m: Metrics, labels: list[str]) -> dict[str, Any]:
    out = {k: v for k, v in Metrics.to_dict(m).items() if k != "pollution_by_label"}
    for label in labels:
        out[f"pollution_{label}"] = _rounded(m.pollution_by_label.get(label))
    return out


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, _DIGITS)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def category_key(cat: str) -> tuple[int, str]:
    return (0, f"{int(cat):09d}") if cat.isdigit() else (1, cat)
