"""Embedders side by side on one labelled dataset: ranking quality, where each model's similarities
lie, and the threshold that gives a chosen recall or precision with that model.

A threshold is a number on one model's similarity scale: MiniLM's cosines between a question and
an unrelated memory sit near 0 to 0.3, multilingual-e5's near 0.75 to 0.85. "threshold 0.3"
therefore means nothing once the model changes. This module answers "which threshold for my
model" from data: for every (question, memory of its owner) pair it takes the score the mode
gives, splits the pairs into relevant (the question's labelled memories) and irrelevant (the
rest of the owner's pool), and reports

- ``recall@k`` of the ranking (as the study does: no threshold, no decay);
- quantiles of the relevant and of the irrelevant scores;
- ``threshold_for_recall[R]``: the highest threshold that keeps at least R of the relevant
  pairs (pair-level recall, the candidate stage of recall, before top_k and the budget);
- ``threshold_for_precision[P]``: the lowest threshold at which at least P of the pairs that
  pass are relevant (None when no threshold reaches P).

Typical use::

    runs = compare(load_dataset("recall_zh"), runs=[("dense", "minilm"), ("dense", "e5"), ("lexical", None)])
    print(format_comparison(runs))

Every embedder's texts are encoded once, whatever the number of modes it is run in.

**Score scales.** :func:`map_threshold` carries a threshold from one built-in model's scale to
another's by quantile matching: the threshold that passes the same share of the reference
(question, memory) pairs. The reference quantiles are in ``score_scales.json`` beside this module,
written by ``python -m memory compare --write-scales`` over the shipped scenarios (``workshop_en``
and ``seed_demo_zh``, every labelled query against every memory of its owner), plus a scale per
language for the models meant for it (``e5@zh``, over ``workshop_zh`` and ``seed_demo_zh``:
:data:`LANGUAGE_SCALES`). The pooled scale uses no label: relevant and irrelevant pairs together.
The lab uses it so that switching model keeps the meaning of the threshold, not its number.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from memory.core.config import MemoryConfig
from memory.eval.datasets import Dataset
from memory.eval.pairs import load_pairs, pair_similarities, shipped_pair_files
from memory.embed.embedders import Embedder, make_embedder
from memory.core.errors import InputError
from memory.eval.ranking import MODES, Mode, Rankings, check_mode, rank
from memory.eval.study import AT_K, ranking_metrics
from memory.eval.results import AtK
from memory.eval.vectors import KnownVectors

Progress = Callable[[int, int], None]
QUANTILES: tuple[float, ...] = (0.05, 0.25, 0.5, 0.75, 0.95)
"""The quantiles reported of the relevant and the irrelevant scores."""
TARGET_RECALLS: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95)
TARGET_PRECISIONS: tuple[float, ...] = (0.5, 0.8, 0.9)
SCALES_PATH = Path(__file__).with_name("score_scales.json")
SCALE_DATASETS: tuple[str, ...] = ("workshop_en", "seed_demo_zh")
"""The shipped scenarios whose pairs define each model's score scale."""
LANGUAGE_SCALES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {"zh": (("workshop_zh", "seed_demo_zh"), ("e5",))}
"""language -> (its shipped scenarios, the models meant for it): a scale of that model on that language's pairs
alone, named ``e5@zh``. A multilingual model's similarities sit higher on Chinese than on English pairs (e5's
median question-memory cosine: 0.92 on workshop_zh, 0.85 on workshop_en), so one scale for both would carry
MiniLM's threshold to a number that passes far more Chinese noise. MiniLM (an English model) and the lexical
scorer (whose numbers the seed article fixes) keep one scale."""
PERCENTS = np.linspace(0.0, 100.0, 101)


@dataclass(frozen=True)
class Calibration:
    """One (mode, embedder) run over a dataset."""

    mode: Mode
    embedder: str | None
    """The dense embedder's name; None in lexical mode."""
    scorer: str
    """What the score is, in words (cosine of which model, or BM25...)."""
    at_k: dict[int, AtK]
    relevant: np.ndarray = field(repr=False)
    """Scores of every (answerable question, relevant memory) pair."""
    irrelevant: np.ndarray = field(repr=False)
    """Scores of every (answerable question, other memory of its owner) pair."""
    rankings: dict[str, list[str]] = field(default_factory=dict, repr=False)
    """Question id -> memory ids best first (answerable questions), to compare two models' orders."""

    @property
    def label(self) -> str:
        return self.mode if self.embedder is None else f"{self.mode} ({self.embedder})"

    def quantiles(self, which: str) -> dict[float, float | None]:
        scores = self.relevant if which == "relevant" else self.irrelevant
        return {q: (float(np.quantile(scores, q)) if scores.size else None) for q in QUANTILES}

    def threshold_for_recall(self, target: float) -> float | None:
        """The highest threshold keeping at least ``target`` of the relevant pairs (None: no relevant pairs)."""
        if not self.relevant.size:
            return None
        ordered = np.sort(self.relevant)[::-1]
        # rounded first: 0.07 * 100 is 7.000000000000001, whose ceiling would keep one pair too many
        keep = max(int(np.ceil(round(target * ordered.size, 9))), 1)
        return float(ordered[keep - 1])

    def threshold_for_precision(self, target: float) -> float | None:
        """The lowest threshold at which at least ``target`` of the pairs at or above it are relevant."""
        scores = np.concatenate([self.relevant, self.irrelevant])
        is_rel = np.concatenate([np.ones(self.relevant.size), np.zeros(self.irrelevant.size)])
        order = np.argsort(-scores, kind="stable")
        scores, is_rel = scores[order], is_rel[order]
        precision = np.cumsum(is_rel) / np.arange(1, scores.size + 1)
        # A threshold t admits every pair scoring >= t: only the last of a run of equal scores is a real cut.
        cut = np.append(scores[1:] != scores[:-1], True)
        ok = np.flatnonzero(cut & (precision >= target))
        return float(scores[ok[-1]]) if ok.size else None

    def scale(self) -> list[float]:
        """The 0th..100th percentiles of every pair's score (relevant and irrelevant together)."""
        pooled = np.concatenate([self.relevant, self.irrelevant])
        return [round(float(v), 5) for v in np.percentile(pooled, PERCENTS)] if pooled.size else []

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode, "embedder": self.embedder, "scorer": self.scorer,
            "at_k": {str(k): a.to_dict() for k, a in self.at_k.items()},
            "pairs": {"relevant": int(self.relevant.size), "irrelevant": int(self.irrelevant.size)},
            "quantiles": {w: {str(q): _r(v) for q, v in self.quantiles(w).items()} for w in ("relevant", "irrelevant")},
            "threshold_for_recall": {str(t): _r(self.threshold_for_recall(t)) for t in TARGET_RECALLS},
            "threshold_for_precision": {str(t): _r(self.threshold_for_precision(t)) for t in TARGET_PRECISIONS},
        }


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def agreement(a: Calibration, b: Calibration, k: int = 10) -> dict[str, float | None]:
    """How alike two runs order the same questions' pools: the share of questions whose best memory is the
    same, and the mean overlap of the two top-``k`` lists (1.0: the same set)."""
    shared = [q for q in a.rankings if q in b.rankings]
    if not shared:
        return {"top1_same": None, f"top{k}_overlap": None, "questions": 0}
    top1 = sum(a.rankings[q][:1] == b.rankings[q][:1] for q in shared) / len(shared)
    overlap = sum(len(set(a.rankings[q][:k]) & set(b.rankings[q][:k])) / max(min(k, len(a.rankings[q])), 1)
                  for q in shared) / len(shared)
    return {"top1_same": round(top1, 4), f"top{k}_overlap": round(overlap, 4), "questions": len(shared)}


def parse_runs(spec: str) -> list[tuple[str, str | None]]:
    """``"dense:minilm,dense:e5,lexical,hybrid:e5"`` -> [(mode, embedder or None)], validated."""
    runs: list[tuple[str, str | None]] = []
    for part in (p.strip() for p in str(spec).split(",")):
        mode, _, embedder = part.partition(":")
        if mode not in MODES:
            raise InputError(f"--runs: {part!r}: mode must be one of {', '.join(MODES)}")
        if mode == "lexical" and embedder:
            raise InputError(f"--runs: {part!r}: lexical mode takes no embedder")
        if mode != "lexical" and not embedder:
            raise InputError(f"--runs: {part!r}: {mode} needs an embedder, e.g. {mode}:minilm")
        runs.append((mode, embedder or None))
    if len(set(runs)) != len(runs):
        raise InputError(f"--runs: {spec!r} names a run twice")
    return runs


def compare(
    dataset: Dataset,
    *,
    runs: Sequence[tuple[str, str | Embedder | None]],
    progress: Progress | None = None,
) -> list[Calibration]:
    """Score ``dataset`` once per run; embedders given by name are loaded once and encode each text once."""
    if not runs:
        raise InputError("compare needs at least one run")
    loaded: dict[str, KnownVectors] = {}
    report = progress or (lambda done, total: None)
    out = []
    for i, (mode, embedder) in enumerate(runs):
        emb: str | Embedder = "minilm"
        if mode != "lexical":
            if embedder is None:
                raise InputError(f"run {i + 1}: {mode} mode needs an embedder")
            key = embedder if isinstance(embedder, str) else embedder.name
            if key not in loaded:
                loaded[key] = KnownVectors(make_embedder(embedder) if isinstance(embedder, str) else embedder, {})
            emb = loaded[key]
        # rank() reports while it runs, inside this iteration, so the lambda's i is this run's
        ranked = rank(dataset, mode=check_mode(mode), embedder=emb,
                      progress=lambda done, total: report(i * total + done, len(runs) * total))
        out.append(calibrate(ranked))
    return out


def calibrate(ranked: Rankings) -> Calibration:
    """The calibration of one scored dataset (a study's :func:`memory.eval.ranking.rank` output)."""
    relevant: list[float] = []
    irrelevant: list[float] = []
    rankings: dict[str, list[str]] = {}
    for rq in ranked.questions:
        if not rq.question.answerable:
            continue
        rankings[rq.question.id] = rq.ranking
        wanted = set(rq.question.relevant)
        for record, score in rq.candidates.active:
            (relevant if record.message_id in wanted else irrelevant).append(score)
    at_k, _ = ranking_metrics(ranked.questions)
    return Calibration(ranked.mode, ranked.embedder, ranked.scorer, at_k,
                       np.asarray(relevant, dtype=np.float64), np.asarray(irrelevant, dtype=np.float64), rankings)


def format_comparison(runs: Sequence[Calibration], *, source: str = "") -> str:
    """Markdown tables: ranking quality, where the scores lie, thresholds per target."""
    head = [f"Embedders compared on {source}" if source else "Embedders compared", ""]
    quality = ["| run | " + " | ".join(f"recall@{k}" for k in AT_K) + " | questions |",
               "| --- |" + " ---: |" * (len(AT_K) + 1)]
    for c in runs:
        n = next(iter(c.at_k.values())).questions if c.at_k else 0
        quality.append(f"| {c.label} | " + " | ".join(_f(c.at_k[k].recall) for k in AT_K) + f" | {n} |")
    spread = ["| run | relevant: p5 / p50 / p95 | irrelevant: p5 / p50 / p95 | "
              + " | ".join(f"threshold for recall {t:g}" for t in TARGET_RECALLS) + " | "
              + " | ".join(f"threshold for precision {t:g}" for t in TARGET_PRECISIONS) + " |",
              "| --- | --- | --- |" + " ---: |" * (len(TARGET_RECALLS) + len(TARGET_PRECISIONS))]
    for c in runs:
        rel, irr = c.quantiles("relevant"), c.quantiles("irrelevant")
        spread.append(
            f"| {c.label} | {_f(rel[0.05])} / {_f(rel[0.5])} / {_f(rel[0.95])} | "
            f"{_f(irr[0.05])} / {_f(irr[0.5])} / {_f(irr[0.95])} | "
            + " | ".join(_f(c.threshold_for_recall(t)) for t in TARGET_RECALLS) + " | "
            + " | ".join(_f(c.threshold_for_precision(t)) for t in TARGET_PRECISIONS) + " |")
    return "\n".join(head + quality + [""] + spread)


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


# --- score scales ------------------------------------------------------------------

def reference_scales(embedders: Sequence[str], progress: Progress | None = None) -> dict[str, Any]:
    """Each embedder's percentiles over the pairs of :data:`SCALE_DATASETS` (dense mode), and the per-language
    scales of :data:`LANGUAGE_SCALES` (``e5@zh``), as JSON data."""
    jobs = [(tuple(embedders), SCALE_DATASETS, "")]
    jobs += [(tuple(e for e in models if e in embedders), datasets, "@" + lang)
             for lang, (datasets, models) in LANGUAGE_SCALES.items()]
    total = sum(len(datasets) for _, datasets, _ in jobs)
    report = progress or (lambda done, total: None)
    scales: dict[str, list[float]] = {}
    start = 0
    for models, datasets, suffix in jobs:
        for c in _pooled(models, datasets, report, start, total):
            assert c.embedder is not None  # _pooled's runs are dense, each named by its embedder
            scales[c.embedder + suffix] = c.scale()
        start += len(datasets)
    return {"datasets": list(SCALE_DATASETS), "language_datasets": {k: list(v[0]) for k, v in LANGUAGE_SCALES.items()},
            "pair_files": sorted(shipped_pair_files()), "percents": "0..100 step 1",
            "scales": scales, "pair_scales": pair_scales(embedders)}


def _pooled(embedders: Sequence[str], datasets: Sequence[str], report: Progress, start: int, total: int
            ) -> list[Calibration]:
    """One dense run per embedder over every pair of ``datasets`` pooled."""
    from memory.eval.datasets import load_dataset

    # compare() reports while it runs, so each lambda sees its own dataset's i
    per_dataset = [compare(load_dataset(name), runs=[("dense", e) for e in embedders],
                           progress=lambda done, n: report((start + i) * 1000 + 1000 * done // max(n, 1), total * 1000))
                   for i, name in enumerate(datasets)]
    return [Calibration("dense", e, "", {}, np.concatenate([runs[i].relevant for runs in per_dataset]),
                        np.concatenate([runs[i].irrelevant for runs in per_dataset]))
            for i, e in enumerate(embedders)]


def scale_name(embedder: str, language: str, scales: dict[str, np.ndarray] | None = None) -> str:
    """The scale a model's similarities are on for data in ``language``: ``e5@zh`` where that scale exists,
    else the model's own name."""
    scales = load_scales() if scales is None else scales
    named = f"{embedder}@{language}"
    return named if named in scales else embedder


def pair_scales(embedders: Sequence[str]) -> dict[str, list[float]]:
    """Each embedder's percentiles of the similarities of the shipped dedup pairs (fact against fact): the scale
    of the write path's duplicate and conflict bands, which sit far higher than a question's against a memory."""
    pairs = [p for path in shipped_pair_files().values() for p in load_pairs(path)]
    out = {}
    for name in embedders:
        sims = np.asarray(pair_similarities(pairs, make_embedder(name)), dtype=np.float64)
        out[name] = [round(float(v), 5) for v in np.percentile(sims, PERCENTS)]
    return out


def load_scales(path: Path = SCALES_PATH, *, kind: str = "scales") -> dict[str, np.ndarray]:
    """Embedder name -> its 101 percentiles (non-decreasing); {} when the file is missing. ``kind``: ``scales``
    (question against memory: the recall threshold) or ``pair_scales`` (fact against fact: the dedup bands)."""
    if not path.is_file():
        return {}
    return dict(_read_scales(str(path), path.stat().st_mtime_ns, kind))


@functools.lru_cache(maxsize=8)
def _read_scales(path: str, mtime_ns: int, kind: str) -> dict[str, np.ndarray]:
    """The file read once per version (a workspace and every knob of a model switch ask for it)."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return {name: np.maximum.accumulate(np.asarray(q, dtype=np.float64))
            for name, q in raw.get(kind, {}).items() if len(q) == len(PERCENTS)}


def map_threshold(value: float, source: str, target: str, scales: dict[str, np.ndarray] | None = None) -> float | None:
    """``value`` on ``source``'s scale carried to ``target``'s: the threshold passing the same share of the
    reference pairs. ``value`` itself when the models are the same; None when either has no scale.
    ``scales`` defaults to the recall scales; pass ``load_scales(kind="pair_scales")`` for the dedup bands.
    A language's scale (``e5@zh``) missing from ``scales`` falls back to the model's (``e5``)."""
    if source == target:
        return value
    scales = load_scales() if scales is None else scales
    low, high = _scale(source, scales), _scale(target, scales)
    if low is None or high is None:
        return None
    share = float(np.interp(value, low, PERCENTS))
    return float(np.interp(share, PERCENTS, high))


def _scale(name: str, scales: dict[str, np.ndarray]) -> np.ndarray | None:
    return scales.get(name, scales.get(name.partition("@")[0]))


REFERENCE_MODEL = "minilm"
"""The model MemoryConfig's defaults were chosen on: its threshold and bands are on this model's scale."""


def config_for(embedder: str, config: MemoryConfig | None = None, *, language: str = "en") -> MemoryConfig:
    """``config`` (default: MemoryConfig()) with its threshold and dedup bands carried from MiniLM's scale to
    ``embedder``'s for data in ``language`` (:func:`scale_name`), so a model's manager judges with numbers that
    mean on its scale what the defaults mean on MiniLM's. Unchanged for MiniLM and for a model with no reference
    scale (a brought one)."""
    config = config or MemoryConfig()
    values = {}
    target = scale_name(embedder, language)
    for key, kind in (("threshold", "scales"), ("conflict_band", "pair_scales"), ("duplicate_band", "pair_scales")):
        mapped = map_threshold(getattr(config, key), REFERENCE_MODEL, target, load_scales(kind=kind))
        if mapped is not None:
            values[key] = round(min(max(mapped, 0.0), 1.0), 2)
    return config.replace(**values) if values else config
