"""Train the learned judge (memory.write.judges.learned) and write its weights to memory/write/judges/judge_model.json.

Trains on the training-only pair sets (fixtures/training/, written for training by helpers who saw only the verdict
definitions) and the sets the rules were tuned on (memory/scenarios/pairs/dedup_pairs_*, fixtures/independent/dev_* and test_*).
The held-out sets (fixtures/independent/heldout_*, unseen_*, fresh_*, sealed_*, waiting_*, reserve_*,
twins_*, spare_*, probe_*) are refused: they measure the judge, never train it.

    python -m memory.tools.train_judge [--out FILE] [--cv] [--c 0.05]

One regression per language: the pairs the reading finds Chinese, and the rest (memory.write.judges.learned.LANGUAGES).
``--cv`` also reports, for each training-only set held out in turn, how a judge trained on the others decides it:
the honest estimate the training data can give (the held-out sets give the real one). The same data gives the same
weights: the shipped file is this script's output.
Needs scikit-learn (requirements.txt); the judge itself runs on numpy alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import numpy as np
from tqdm import tqdm

from memory.core.config import MemoryConfig
from memory.core.scenario import FIXTURES_DIR
from memory.eval.pairs import PairItem, load_pairs, shipped_pair_files
from memory.write.adjudicate import VERDICTS
from memory.write.features import pair_features
from memory.write.judges.learned import (
    COST, FORMAT, HASH_DIM, LANGUAGES, MODEL_FILE, VECTOR_BLOCKS, shared_embedder, feature_row, pair_language,
    pair_language_of, pair_texts,
)
from memory.write.reading import read_statement

TRAINING_DIR = FIXTURES_DIR / "training"
HELD_OUT = ("heldout_", "unseen_", "fresh_", "sealed_", "waiting_", "reserve_", "twins_", "spare_", "probe_")
"""Pair files no judge is trained on (fixtures/independent/README.md)."""
C_DEFAULT = 0.05
"""Inverse L2 strength of the logistic regression (chosen by --cv on the training-only sets: 0.03 to 1 within a
point or two of each other in outcome accuracy; 0.05 made the fewest data-losing mistakes)."""
VECTORS = {"en": "minilm", "zh": "e5"}
"""Each language's statement model: the lab's store model for that language, so the write path hands the judge the
vectors it has already computed (memory.write.judges.learned.LearnedJudge.offer)."""
SPANS = {"en": "minilm-static", "zh": "e5"}
DIM = 384
"""Both models' dimension (MiniLM-L6 and e5-small): the feature rows of the two languages share their columns."""
"""Each language's changed-span model. English: MiniLM's token table (a lookup, no model run), which decides as well as
spans encoded by the model (6-fold by set on the English training pairs: outcome 0.902 / 4-verdict 0.851 against
0.905 / 0.851); Chinese: e5 (the token table loses 0.010 there: 0.900 against 0.910). docs/judge.md."""


def training_sets() -> dict[str, Path]:
    """name -> path of every set the judge is trained on."""
    sets = {f"training/{p.stem}": p for p in sorted(TRAINING_DIR.glob("*.json"))}
    sets |= shipped_pair_files()  # the teaching sets, memory/scenarios/pairs/
    sets |= {f"independent/{p.stem}": p for p in sorted((FIXTURES_DIR / "independent").glob("*.json"))
             if not p.stem.startswith(HELD_OUT)}
    return sets


def featurize(items: Sequence[PairItem], config: MemoryConfig, vectors: dict[str, str] | None = None,
              spans: dict[str, str] | None = None) -> tuple[np.ndarray, list[str]]:
    """Every pair's feature row and the named features' order. Each pair's statements are embedded with its
    language's model (``vectors``) and its changed spans with the language's span model (``spans``), every text of a
    model in one call, as the judge does at run time (memory.write.judges.learned.LearnedJudge.pair_vectors)."""
    vectors, spans = vectors or VECTORS, spans or SPANS
    pair_text = [pair_texts(it.existing, it.incoming) for it in items]
    langs = [pair_language_of(it.existing, it.incoming) for it in items]
    wanted: dict[str, list[str]] = {}
    for four, lang in zip(pair_text, langs):
        wanted.setdefault(vectors[lang], []).extend(four[:2])
        wanted.setdefault(spans[lang], []).extend(four[2:])
    found: dict[str, dict[str, np.ndarray]] = {}
    for name, texts in wanted.items():
        texts = sorted(dict.fromkeys(texts), key=len)
        embedded = np.asarray(shared_embedder(name).embed(texts), dtype=np.float32).astype(np.float64)
        found[name] = dict(zip(texts, embedded))
    rows: list[np.ndarray] = []
    order: list[str] | None = None
    for it, four, lang in zip(tqdm(items, desc="reading pairs", unit="pair", file=sys.stderr), pair_text, langs):
        v = np.stack([found[vectors[lang]][t] for t in four[:2]] + [found[spans[lang]][t] for t in four[2:]])
        feats = pair_features(read_statement(it.existing), read_statement(it.incoming), float(v[0] @ v[1]), config)
        if order is None:
            order = list(feats)
        rows.append(feature_row(feats, order, v, it.existing, it.incoming))
    assert order is not None
    return np.array(rows), order


def fit(x: np.ndarray, y: np.ndarray, c: float):
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]

    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=5000).fit((x - mean) / scale, y)
    return mean, scale, model


def languages(x: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Each row's language, as the judge tells it at run time (memory.write.judges.learned.pair_language)."""
    col = names.index("chinese")
    return np.array([pair_language({"chinese": v}) for v in x[:, col]])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(MODEL_FILE), help="where to write the weights (default: the shipped file)")
    p.add_argument("--cv", action="store_true", help="also hold out each training-only set in turn and report")
    p.add_argument("--c", type=float, default=C_DEFAULT, help=f"inverse regularisation strength (default {C_DEFAULT})")
    a = p.parse_args(argv)
    config = MemoryConfig()
    sets = training_sets()
    items = {name: [it for it in load_pairs(path) if it.expected is not None] for name, path in sets.items()}
    everything = [it for name in sets for it in items[name]]
    x, names = featurize(everything, config)
    y = np.array([VERDICTS.index(it.expected) for it in everything])
    group = np.array([name for name in sets for _ in items[name]])
    lang = languages(x, names)
    if a.cv:
        report_cv(x, y, group, lang, a.c)
    weights = {}
    for code in LANGUAGES:
        mean, scale, model = fit(x[lang == code], y[lang == code], a.c)
        assert [VERDICTS[i] for i in model.classes_] == list(VERDICTS)
        weights[code] = {"pairs": int((lang == code).sum()), "mean": _round(mean), "scale": _round(scale),
                         "coef": [_round(r) for r in model.coef_], "intercept": _round(model.intercept_)}
    out = {
        "format": FORMAT, "vectors": VECTORS, "spans": SPANS, "features": names, "dim": DIM, "hash_dim": HASH_DIM,
        "vector_blocks": list(VECTOR_BLOCKS), "c": a.c,
        "trained_on": {name: len(items[name]) for name in sets},
        "languages": weights, "cost": [list(r) for r in COST],
    }
    Path(a.out).write_text(json.dumps(out, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{a.out}: trained on {len(everything)} pairs from {len(sets)} sets, {x.shape[1]} features")
    return 0


def _round(values: np.ndarray) -> list[float]:
    return [float(f"{v:.6g}") for v in values]


def report_cv(x: np.ndarray, y: np.ndarray, group: np.ndarray, lang: np.ndarray, c: float) -> None:
    cost = np.array(COST)
    print("| held out | pairs | outcome accuracy | 4-verdict accuracy | silent losses | wrong retirements | dropped |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    truths, decisions = [], []
    for held in sorted(set(group)):
        if not held.startswith("training/"):
            continue
        test = group == held
        code = lang[test][0]  # a training-only set is in one language
        train = (group != held) & (lang == code)
        mean, scale, model = fit(x[train], y[train], c)
        decisions.append(np.argmin(model.predict_proba((x[test] - mean) / scale) @ cost, axis=1))
        truths.append(y[test])
        print(_cv_row(held, truths[-1], decisions[-1]))
    print(_cv_row(f"**all {len(truths)}, each held out in turn**", np.concatenate(truths), np.concatenate(decisions)))


def _cv_row(name: str, truth: np.ndarray, decided: np.ndarray) -> str:
    dup, upd = VERDICTS.index("duplicate"), VERDICTS.index("update")
    kept = truth > upd
    return (f"| {name} | {len(truth)} | {_outcome(truth, decided):.3f} | {(truth == decided).mean():.3f} | "
            f"{int(((truth == upd) & (decided == dup)).sum())} | {int((kept & (decided == upd)).sum())} | "
            f"{int((kept & (decided == dup)).sum())} |")


def _outcome(truth: np.ndarray, decided: np.ndarray) -> float:
    keep = lambda v: np.minimum(v, 2)  # noqa: E731 (coexist and new both keep the fact)
    return float((keep(truth) == keep(decided)).mean())


if __name__ == "__main__":
    raise SystemExit(main())
