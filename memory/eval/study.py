"""Threshold tuning studies: sweep threshold x top_k x decay_rate over a labelled dataset.

Typical use::

    from memory.eval.study import run_study
    result = run_study("locomo:../shared/datasets/locomo/locomo-sample.json", mode="hybrid",
                       thresholds="0.1:0.9:0.05", top_ks=[5, 10], decay_rates=[0.0])
    result.recommended.row, result.to_frame(), result.to_dict()

Every question's pool is scored once (:func:`memory.eval.ranking.rank`: each text encoded once,
exact cosines); each setting then re-runs :func:`memory.runtime.recall.govern` on the part of those
pools it can keep (sorted once per decay rate, :mod:`memory.eval.pools`), so a sweep costs
about one pass.

Metrics of one setting (docs/study.md has the full definitions):

* ``precision`` (micro): relevant injected items / all injected items, over *labelled*
  questions (answerable ones and no-answer ones, whose every injected item is pollution);
  None when nothing was injected. ``pollution_rate`` = 1 - precision.
* ``recall`` (macro): mean over answerable questions of |injected & relevant| / |relevant|.
* ``f1``: harmonic mean of that precision and recall.
* ``avg_injected`` / ``avg_tokens``: mean items / tokens injected per question (all questions).
* ``pollution_by_label``: share of all injected items that carry each pollution label.
* ``forbidden_hits``: injected items listed as forbidden for their question (summed);
  ``isolation_leaks``: injected items of another (tenant, user) (must always be 0).
* ``no_answer_empty_rate``: share of no-answer questions that got an empty context.

Ranking metrics (no threshold, no decay): ``recall@k`` (macro) and ``precision@k``
(|top k & relevant| / k, averaged) for k in 1, 5, 10 over answerable questions.

Questions that are neither answerable nor no-answer (e.g. LoCoMo questions whose evidence
is missing) count in the averages of injected items only.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from memory.core.config import MemoryConfig
from memory.eval.datasets import Dataset, DataQuestion, Unit, load_dataset
from memory.embed.embedders import Embedder
from memory.core.errors import InputError
from memory.runtime.recall import govern
from memory.eval.ranking import HYBRID_WEIGHT, Mode, RankedQuestion, Rankings, rank
from memory.core.schema import Hit
from memory.eval.pools import CompositePool, composite_pools
from memory.eval.results import (  # noqa: F401 - re-exported: the study API in one import
    AtK, Metrics, Recommendation, StudyResult, SweepRow, category_key, check_out_path, format_study,
)
from memory.core.tokens import TokenCounter, count_tokens

Progress = Callable[[int, int], None]
AT_K: tuple[int, ...] = (1, 5, 10)
DEFAULT_THRESHOLDS = "0.1:0.9:0.05"
DEFAULT_TOP_KS = "5,10"
DEFAULT_DECAY_RATES = "0"
NO_BUDGET = MemoryConfig.range_of("token_budget")[1]
"""token_budget used when a study sets none: large enough never to drop a memory."""


# --- ranges and rules -------------------------------------------------------------

def parse_range(spec: Any, *, name: str, integer: bool = False) -> tuple[Any, ...]:
    """``"start:stop:step"`` (stop included), ``"a,b,c"``, one number, or a sequence of numbers.

    Values come back sorted and de-duplicated; an empty range, a non-finite number or more than
    MAX_SWEEP_POINTS values raise InputError naming ``name`` (checked before any list is built).
    """
    kind = "whole number" if integer else "number"
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        values = [spec]
    elif isinstance(spec, str):
        text = spec.strip()
        if not text:
            raise InputError(f"{name}: the range is empty (give start:stop:step or a comma list)")
        if ":" in text:
            values = _stepped(text, name)
        else:
            _at_most(text.count(",") + 1, name, "the comma list")
            values = [_number(p, name, text) for p in text.split(",")]
    elif isinstance(spec, Iterable):
        items = list(itertools.islice(spec, MAX_SWEEP_POINTS + 1))
        _at_most(len(items), name, "the sequence", more=len(items) > MAX_SWEEP_POINTS)
        values = [_number(p, name, spec) if isinstance(p, str) else p for p in items]
    else:
        raise InputError(f"{name}: expected start:stop:step, a comma list or numbers, got {type(spec).__name__}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InputError(f"{name}: {_brief(v)} is not a finite {kind}")
        if integer and float(v) != int(v):
            raise InputError(f"{name}: {v!r} is not a whole number")
    if not values:
        raise InputError(f"{name}: the range {_brief(spec)} is empty")
    clean = sorted({int(v) if integer else round(float(v), 10) for v in values})
    return tuple(clean)


MAX_SWEEP_POINTS = 1_000
"""Most values one swept parameter may take (0:1:0.001 is 1,001 points: too many; 0:1:0.002 fits)."""
MAX_SWEEP_SETTINGS = 10_000
"""Most settings (threshold x top_k x decay_rate) one sweep may run."""


def _at_most(count: int | float, name: str, what: str = "", *, more: bool = False) -> None:
    """Raise InputError naming ``name`` when ``count`` values (``more``: more than that) pass MAX_SWEEP_POINTS."""
    if more or not count <= MAX_SWEEP_POINTS:  # also true for nan
        if more:
            many = f"more than {MAX_SWEEP_POINTS:,}"
        elif count < 1e12:
            many = f"{count:,.0f}"
        else:
            many = f"about {count:.2g}" if math.isfinite(count) else "unboundedly many"
        raise InputError(f"{name}: {what or 'the range'} gives {many} values; the limit is {MAX_SWEEP_POINTS:,} "
                         "(use a larger step)")


def _brief(value: Any) -> str:
    """A short one-line rendering of a bad value (never a 5,000-digit number)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an int of about {int(value.bit_length() * 0.30103)} digits"
    return ascii(value)[:60]


def _number(part: Any, name: str, whole: Any) -> float:
    try:
        return float(part.strip())
    except ValueError:
        raise InputError(f"{name}: {_brief(part.strip())} in {_brief(whole)} is not a number") from None


def _stepped(text: str, name: str) -> list[float]:
    parts = text.split(":")
    if len(parts) != 3:
        raise InputError(f"{name}: {_brief(text)} must be start:stop:step")
    start, stop, step = (_number(p, name, text) for p in parts)
    for label, v in (("start", start), ("stop", stop), ("step", step)):
        if not math.isfinite(v):
            raise InputError(f"{name}: the {label} of {_brief(text)} must be a finite number, got {v!r}")
    if not step > 0:
        raise InputError(f"{name}: the step of {_brief(text)} must be > 0")
    if start > stop:
        raise InputError(f"{name}: the range {_brief(text)} is empty (start > stop)")
    span = (stop - start) / step  # may overflow to inf for a tiny step: refused by _at_most
    _at_most(math.floor(span + 1e-9) + 1 if math.isfinite(span) else math.inf, name, f"the range {_brief(text)}")
    count = int(math.floor(span + 1e-9)) + 1
    return [round(start + i * step, 10) for i in range(count)]


@dataclass(frozen=True)
class Rule:
    """How the recommended operating point is chosen."""

    kind: str
    """``f1`` or ``precision``."""
    min_recall: float = 0.0
    """For ``precision``: the recall a setting must reach to be considered."""

    @property
    def name(self) -> str:
        return "f1" if self.kind == "f1" else f"precision@recall>={self.min_recall:g}"

    @property
    def description(self) -> str:
        if self.kind == "f1":
            return ("highest F1; ties go to higher precision, then fewer injected items, "
                    "a higher threshold, a smaller top_k, a smaller decay rate")
        return (f"highest precision among settings with recall >= {self.min_recall:g}; ties go to higher recall, "
                "then fewer injected items, a higher threshold, a smaller top_k, a smaller decay rate")


_RULE = re.compile(r"precision@recall>=([0-9.]+)")


def parse_rule(rule: str | Rule) -> Rule:
    """``"f1"`` or ``"precision@recall>=R"`` with R in [0, 1]."""
    if isinstance(rule, Rule):
        return rule
    text = str(rule).strip().replace(" ", "")
    if text == "f1":
        return Rule("f1")
    m = _RULE.fullmatch(text)
    if m:
        try:
            r = float(m.group(1))
        except ValueError:
            r = -1.0
        if 0.0 <= r <= 1.0:
            return Rule("precision", r)
    raise InputError(f"rule must be 'f1' or 'precision@recall>=R' with R in [0, 1], got {rule!r}")


# --- the runner --------------------------------------------------------------------

def run_study(
    dataset: Dataset | str | Path,
    *,
    mode: Mode = "dense",
    embedder: str | Embedder = "minilm",
    thresholds: Any = DEFAULT_THRESHOLDS,
    top_ks: Any = DEFAULT_TOP_KS,
    decay_rates: Any = DEFAULT_DECAY_RATES,
    unit: Unit = "turns",
    rule: str | Rule = "f1",
    token_budget: int | None = None,
    hybrid_weight: float = HYBRID_WEIGHT,
    progress: Progress | None = None,
) -> StudyResult:
    """Load (if given a spec), score every question once, sweep, recommend.

    ``dataset`` is a :class:`Dataset` or a spec for :func:`load_dataset` (``unit`` applies then).
    Ranges are parsed by :func:`parse_range` and validated before any work starts.
    ``progress(done, total)`` covers writing the memories, scoring the questions and the settings.
    """
    grid = _grid(thresholds, top_ks, decay_rates)
    parsed_rule = parse_rule(rule)
    budget = _budget(token_budget)
    data = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, unit=unit)
    n_settings = len(grid[0]) * len(grid[1]) * len(grid[2])
    ranked_total = len(data.memories) + len(data.questions)
    report = progress or (lambda done, total: None)
    rankings = rank(data, mode=mode, embedder=embedder, hybrid_weight=hybrid_weight,
                    progress=lambda done, _t: report(done, ranked_total + n_settings))
    return sweep(rankings, thresholds=grid[0], top_ks=grid[1], decay_rates=grid[2], rule=parsed_rule,
                 token_budget=budget, progress=lambda done, _t: report(ranked_total + done, ranked_total + n_settings))


def sweep(
    rankings: Rankings,
    *,
    thresholds: Any = DEFAULT_THRESHOLDS,
    top_ks: Any = DEFAULT_TOP_KS,
    decay_rates: Any = DEFAULT_DECAY_RATES,
    rule: str | Rule = "f1",
    token_budget: int | None = None,
    token_counter: TokenCounter = count_tokens,
    progress: Progress | None = None,
) -> StudyResult:
    """Re-run :func:`govern` on already-scored pools for every setting (nothing is embedded here)."""
    thresholds, top_ks, decay_rates = _grid(thresholds, top_ks, decay_rates)
    parsed_rule = parse_rule(rule)
    budget = _budget(token_budget)
    data = rankings.dataset
    labels_of = {(m.owner, m.id): m.labels for m in data.memories}
    labels = data.labels
    counter = _memo(token_counter)
    settings = [(d, k, t) for d in decay_rates for k in top_ks for t in thresholds]
    base = MemoryConfig(token_budget=budget)
    rows: list[SweepRow] = []
    ordered: dict[float, list[CompositePool]] = {}
    outcomes: dict[tuple, _Outcome] = {}
    pools = [rq.candidates for rq in rankings.questions]
    for done, (decay, top_k, threshold) in enumerate(settings, start=1):
        config = base.replace(threshold=threshold, top_k=top_k, decay_rate=decay)
        if decay not in ordered:  # the composite order depends on the decay rate only
            ordered, outcomes = {decay: composite_pools(pools, config)}, {}
        overall = _Tally(labels)
        per_cat: dict[str, _Tally] = {}
        for i, (rq, pool) in enumerate(zip(rankings.questions, ordered[decay])):
            q = rq.question
            kept = pool.top(config.threshold, config.top_k)
            # the kept candidates all pass and all fit top_k, so they alone decide what govern returns
            key = (i, tuple(r.memory_id for r, _ in kept.active))
            if key not in outcomes:
                outcomes[key] = _Outcome.of(q, govern(kept, config, token_counter=counter).governed, labels_of)
            overall.add(q, outcomes[key])
            per_cat.setdefault(q.category, _Tally(labels)).add(q, outcomes[key])
        m = overall.metrics()
        rows.append(SweepRow(**_metric_fields(m), threshold=threshold, top_k=top_k, decay_rate=decay,
                             by_category={c: per_cat[c].metrics() for c in sorted(per_cat, key=category_key)}))
        if progress:
            progress(done, len(settings))
    at_k, at_k_by_cat = ranking_metrics(rankings.questions)
    return StudyResult(
        dataset=data.name, source=data.source, unit=data.unit, mode=rankings.mode, embedder=rankings.embedder,
        scorer=rankings.scorer, questions=len(data.questions), answerable=sum(q.answerable for q in data.questions),
        no_answer=sum(q.no_answer for q in data.questions), dataset_notes=dict(data.notes), token_budget=budget,
        at_k=at_k, at_k_by_category=at_k_by_cat, sweep=rows, recommended=recommend(rows, parsed_rule), labels=labels,
        pool_missing=rankings.pool_missing,
    )


def _metric_fields(m: Metrics) -> dict[str, Any]:
    return {f.name: getattr(m, f.name) for f in fields(Metrics)}


def validate_options(
    *, thresholds: Any, top_ks: Any, decay_rates: Any, rule: str | Rule = "f1", token_budget: int | None = None,
) -> None:
    """Raise InputError (naming the parameter) for an empty or out-of-range sweep, a bad rule or budget."""
    _grid(thresholds, top_ks, decay_rates)
    parse_rule(rule)
    _budget(token_budget)


def _grid(thresholds: Any, top_ks: Any, decay_rates: Any) -> tuple[tuple, tuple, tuple]:
    grid = (
        parse_range(thresholds, name="threshold"),
        parse_range(top_ks, name="top_k", integer=True),
        parse_range(decay_rates, name="decay_rate"),
    )
    settings = len(grid[0]) * len(grid[1]) * len(grid[2])
    if settings > MAX_SWEEP_SETTINGS:
        raise InputError(f"the sweep has {settings:,} settings ({len(grid[0])} thresholds x {len(grid[1])} top_k x "
                         f"{len(grid[2])} decay rates); the limit is {MAX_SWEEP_SETTINGS:,}")
    # validate every value against MemoryConfig's ranges now, naming the parameter
    for name, values in zip(("threshold", "top_k", "decay_rate"), grid):
        for v in values:
            try:
                MemoryConfig().replace(**{name: v})
            except Exception as exc:
                raise InputError(f"{name}: {exc}") from None
    return grid


def _budget(token_budget: int | None) -> int:
    if token_budget is None:
        return int(NO_BUDGET)
    try:
        return MemoryConfig(token_budget=token_budget).token_budget
    except Exception as exc:
        raise InputError(f"token_budget: {exc}") from None


def _memo(counter: TokenCounter) -> TokenCounter:
    cache: dict[str, int] = {}

    def count(text: str) -> int:
        if text not in cache:
            cache[text] = counter(text)
        return cache[text]

    return count


@dataclass(frozen=True)
class _Outcome:
    """What one question's governed hits count for (the same hits count the same in every setting)."""

    injected: int
    tokens: int
    leaks: int
    """Hits of another (tenant, user)."""
    forbidden: int
    found: int
    """Hits among the question's relevant ids."""
    labels: Counter[str]
    """Pollution labels of the hits."""

    @classmethod
    def of(cls, q: DataQuestion, hits: Sequence[Hit], labels_of: dict) -> "_Outcome":
        ids = [h.record.message_id for h in hits]
        forbidden, relevant = set(q.forbidden), set(q.relevant)
        labels: Counter[str] = Counter()
        for i in ids:
            labels.update(labels_of.get((q.owner, i), ()))
        return cls(
            injected=len(hits), tokens=sum(h.tokens for h in hits),
            leaks=sum((h.record.tenant_id, h.record.user_id) != q.owner for h in hits),
            forbidden=sum(i in forbidden for i in ids), found=sum(i in relevant for i in ids), labels=labels,
        )


class _Tally:
    """Counts for one setting over a group of questions."""

    def __init__(self, labels: list[str]) -> None:
        self.labels = labels
        self.questions = self.answerable = self.no_answer = 0
        self.recall_sum = 0.0
        self.labelled_injected = self.relevant_injected = 0
        self.injected = self.tokens = self.forbidden = self.leaks = 0
        self.no_answer_empty = self.no_answer_injected = 0
        self.label_counts: Counter[str] = Counter()

    def add(self, q: DataQuestion, o: _Outcome) -> None:
        self.questions += 1
        self.injected += o.injected
        self.tokens += o.tokens
        self.leaks += o.leaks
        self.forbidden += o.forbidden
        self.label_counts.update(o.labels)
        if q.answerable:
            self.answerable += 1
            self.recall_sum += o.found / len(set(q.relevant))
            self.relevant_injected += o.found
            self.labelled_injected += o.injected
        elif q.no_answer:
            self.no_answer += 1
            self.no_answer_empty += not o.injected
            self.no_answer_injected += o.injected
            self.labelled_injected += o.injected

    def metrics(self) -> Metrics:
        precision = self.relevant_injected / self.labelled_injected if self.labelled_injected else None
        recall = self.recall_sum / self.answerable if self.answerable else None
        if recall is None:
            f1 = None
        elif precision is None or precision + recall == 0:  # nothing injected: recall is 0 too
            f1 = 0.0
        else:
            f1 = 2 * precision * recall / (precision + recall)
        n = max(self.questions, 1)
        return Metrics(
            questions=self.questions, answerable=self.answerable, no_answer=self.no_answer,
            precision=precision, recall=recall, f1=f1,
            pollution_rate=None if precision is None else 1.0 - precision,
            avg_injected=self.injected / n, avg_tokens=self.tokens / n,
            forbidden_hits=self.forbidden, isolation_leaks=self.leaks,
            no_answer_empty_rate=self.no_answer_empty / self.no_answer if self.no_answer else None,
            no_answer_avg_injected=self.no_answer_injected / self.no_answer if self.no_answer else None,
            pollution_by_label={
                label: (self.label_counts[label] / self.injected if self.injected else None) for label in self.labels
            },
        )


def ranking_metrics(questions: Sequence[RankedQuestion]) -> tuple[dict[int, AtK], dict[str, dict[int, AtK]]]:
    groups: dict[str, list[tuple[list[str], set[str]]]] = {}
    everything: list[tuple[list[str], set[str]]] = []
    for rq in questions:
        q = rq.question
        groups.setdefault(q.category, [])
        if q.answerable:
            item = (rq.ranking, set(q.relevant))
            everything.append(item)
            groups[q.category].append(item)

    def at(items: list[tuple[list[str], set[str]]]) -> dict[int, AtK]:
        out = {}
        for k in AT_K:
            found = [sum(i in rel for i in ranking[:k]) for ranking, rel in items]
            n = len(items)
            out[k] = AtK(
                k=k,
                recall=sum(f / len(rel) for f, (_, rel) in zip(found, items)) / n if n else None,
                precision=sum(f / k for f in found) / n if n else None,
                questions=n,
            )
        return out

    return at(everything), {c: at(groups[c]) for c in sorted(groups, key=category_key)}


def recommend(rows: Sequence[SweepRow], rule: str | Rule = "f1") -> Recommendation:
    """Choose the operating point by ``rule`` (see :class:`Rule` for the tie-breaks)."""
    rule = parse_rule(rule)
    if not rows:
        raise InputError("recommend: the sweep has no settings")

    def tail(r: SweepRow) -> tuple:
        return (r.avg_injected, -r.threshold, r.top_k, r.decay_rate)

    if rule.kind == "f1":
        pool = [r for r in rows if r.f1 is not None]
        if not pool:
            return Recommendation(rule.name, rule.description, None, "no setting has an F1 (no answerable questions)")
        best = min(pool, key=lambda r: (-_present(r.f1), -(r.precision or 0.0), *tail(r)))
        return Recommendation(rule.name, rule.description, best)
    pool = [r for r in rows if r.recall is not None and r.precision is not None and r.recall >= rule.min_recall - 1e-12]
    if not pool:
        with_recall = [r for r in rows if r.recall is not None]
        if not with_recall:
            return Recommendation(rule.name, rule.description, None, "no answerable questions, so no recall")
        top = max(with_recall, key=lambda r: _present(r.recall))
        note = (f"no setting reaches recall >= {rule.min_recall:g}; the best recall is {top.recall:.3f} "
                f"(threshold {top.threshold:g}, top_k {top.top_k}, decay_rate {top.decay_rate:g})")
        return Recommendation(rule.name, rule.description, None, note)
    best = min(pool, key=lambda r: (-_present(r.precision), -_present(r.recall), *tail(r)))
    return Recommendation(rule.name, rule.description, best)


def _present(metric: float | None) -> float:
    """A metric of a row the caller kept because it has that metric."""
    assert metric is not None
    return metric
