"""The judge conformance suite: labelled pair sets any write-path judge must pass.

A judge (:class:`memory.write.adjudicate.Judge`: the rules, a model behind an endpoint, your own) passes a set
when it makes **no silent loss** (an update taken for a duplicate: the new value is dropped), **no wrong
retirement** (a coexisting or new fact taken for an update: a valid fact is retired) and **no dropped fact** (a new
or coexisting fact taken for a duplicate: it is never stored). Those three lose data; the other mistakes (a stale fact kept, a duplicate stored twice) cost context quality and count against accuracy
only. A suite can also ask for an accuracy floor.

The sets: the project's own (``memory/scenarios/pairs/dedup_pairs_*.json``, the lab's teaching sets, which the
rules were written against) and four independent ones (``fixtures/independent/``, not installed), written by helpers
who saw only the four verdicts' definitions, never the rules: ``dev_*`` and ``test_*`` have been looked at while
changing the rules, ``heldout_*`` and ``unseen_*`` are only measured (fixtures/independent/README.md).
``python -m bench judge_independent`` reports every set.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from memory.core.config import MemoryConfig
from memory.core.scenario import FIXTURES_DIR
from memory.embed.embedders import Embedder
from memory.eval.pairs import PairReport, evaluate_pairs, load_pairs, shipped_pair_files
from memory.write.adjudicate import Judge
from memory.write.judges.bands import plain_judge  # noqa: F401 (plain_judge: re-exported)

DATA_LOSING = ("silent_loss", "wrong_retire", "dropped")
"""The mistakes that lose data: a conforming judge makes none of them (``dropped``: a new or coexisting fact taken
for a duplicate, so never stored, loses data as surely as the other two)."""
INDEPENDENT_DIR = FIXTURES_DIR / "independent"


@dataclass(frozen=True)
class SetResult:
    """One judge on one labelled pair set."""

    name: str
    pairs: int
    accuracy: float
    errors: dict[str, int]
    """Mistakes by kind (memory.eval.pairs.ERROR_KINDS)."""
    report: PairReport

    @property
    def outcome_accuracy(self) -> float:
        """Share of pairs whose outcome is right: duplicate, update, or kept (coexist and new both keep the fact)."""
        keep = lambda v: "keep" if v in ("coexist", "new") else v  # noqa: E731
        labelled = self.report.labelled
        return sum(keep(r.decision) == keep(r.expected) for r in labelled) / len(labelled) if labelled else 0.0

    @property
    def data_lost(self) -> int:
        return sum(self.errors[k] for k in DATA_LOSING)

    def passes(self, min_accuracy: float = 0.0) -> bool:
        return self.data_lost == 0 and self.accuracy >= min_accuracy

    def to_dict(self) -> dict[str, Any]:
        return {"set": self.name, "pairs": self.pairs, "accuracy": round(self.accuracy, 4),
                "outcome_accuracy": round(self.outcome_accuracy, 4), "errors": self.errors,
                "data_lost": self.data_lost}


SEALED = ("spare_", "probe_")
"""Sets J (``spare_*``) and K (``probe_*``, written for the learned judge's blind spots: a name or place changed,
confirmations, one value in another unit): frozen on arrival for the next change of a judge, and measured only with
``sealed=True`` (set E, ``fresh_*``, held that place until it measured the second learned judge, set F,
``sealed_*``, the third, set G, ``waiting_*``, the fourth, set H, ``reserve_*``, the fifth)."""


def conformance_sets(*, independent: bool = True, sealed: bool = False) -> dict[str, Path]:
    """name -> path of the labelled pair sets: the shipped ones, then (``independent``) dev_*, fresh_*, heldout_*,
    reserve_*, sealed_*, test_*, twins_*, unseen_* and waiting_*, and (``sealed``)
    sets J and K."""
    sets = shipped_pair_files()
    if independent:
        sets |= {f"independent/{p.stem}": p for p in sorted(INDEPENDENT_DIR.glob("*.json"))
                 if sealed or not p.stem.startswith(SEALED)}
    return sets


def run_conformance(judge: Judge | None, *, embedder: Embedder, sets: dict[str, Path] | None = None,
                    config: MemoryConfig | None = None) -> list[SetResult]:
    """Run ``judge`` (None: the rules) over every set (default :func:`conformance_sets`); one result per set."""
    out = []
    for name, path in (sets if sets is not None else conformance_sets()).items():
        items = [p for p in load_pairs(path) if p.expected is not None]
        report = evaluate_pairs(items, embedder=embedder, config=config, source=str(path), judge=judge)
        accuracy = report.accuracy("governed")
        assert accuracy is not None  # every item kept is labelled
        out.append(SetResult(name, len(items), accuracy, report.errors("governed"), report))
    return out


def format_conformance(results: Sequence[SetResult]) -> str:
    """A Markdown table: accuracy, data-losing mistakes and the rest per set."""
    lines = ["| set | pairs | outcome accuracy | 4-verdict accuracy | silent losses | wrong retirements | dropped "
             "| stale kept | duplicates stored | coexist/new mixed |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        e = r.errors
        lines.append(f"| {r.name} | {r.pairs} | {r.outcome_accuracy:.3f} | {r.accuracy:.3f} | {e['silent_loss']} | {e['wrong_retire']} | "
                     f"{e['dropped']} | {e['stale_kept']} | {e['duplicate_stored']} | {e['other']} |")
    return "\n".join(lines)
