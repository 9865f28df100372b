"""The learned judge: the pair's reading (:mod:`memory.write.features`) and the two statements' vectors, weighed by a
model trained on labelled pairs, then a decision that avoids losing data.

How it decides one (stored, incoming) pair:

1. **Read** both statements (:func:`memory.write.reading.read_statement`) and ask the language-neutral questions of
   :func:`memory.write.features.pair_features` (same attribute? values in conflict? an end or a change announced?
   conditions, another person, a habit beside one occurrence? which rules would fire?).
2. **Embed** both statements with the language's model (English: all-MiniLM-L6-v2, the library's and the lab's
   English store model; Chinese: multilingual-e5-small, the lab's Chinese store model), so where the store's model is
   that model its vectors are reused (:meth:`LearnedJudge.offer`: the write path hands over the vectors it has
   computed and read), and take their element-wise product and distance. Represent what changed too
   (:func:`memory.write.features.changed_spans`: "moved to 4" / "is at 3", "也" / "", "no longer") by the unit mean of
   its word pieces in MiniLM's token table (:class:`memory.embed.embedders.StaticTokenEmbedder`: no model run), so a
   change, an end or an addition weighs the same in words the training pairs never used. Which models a language
   reads is in the weights file (``vectors``, ``spans``): a pair gets the same verdict in every lab and entry point.
3. **Weigh**: a multinomial logistic regression over those numbers gives the probability of each verdict; one set
   of weights per language (English, Chinese: the reading says which), since the same question weighs differently in
   each (a shared-character overlap is not a shared-word overlap).
4. **Decide** by expected cost, not by the most probable verdict: taking an update or a new fact for a duplicate
   loses it, taking a valid fact for an update retires it, so those mistakes cost more than keeping a stale or a
   duplicate fact (:data:`COST`). The verdict with the least expected cost wins.

The weights are a small JSON file shipped beside this module (``judge_model.json``), written by
``python -m memory.tools.train_judge`` from the training-only pair sets in ``fixtures/training/`` and the tuning
sets; the held-out sets (``fixtures/independent/heldout_*``, ``unseen_*``, ``fresh_*``) are never trained on.

When the learned verdict is the rules' verdict, the decision carries the rule's reason (it names the attribute,
values and contexts); when it differs, the reason is ``learned.overruled`` with the verdict's probability and the
rule's reason inside, so a reader sees what the rules said and that the model disagreed.
"""

from __future__ import annotations

import json
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from memory.core.config import DEFAULT_CONFIG, MemoryConfig
from memory.core.errors import ConfigError
from memory.core.reasons import FALLBACK_PREFIX, Reason
from memory.core.textcaches import TextMemo
from memory.embed.embedders import STATIC_SUFFIX
from memory.write.adjudicate import VERDICTS, Verdict, judge_reason, plain_rule
from memory.write.features import changed_spans, changed_wording, pair_features
from memory.write.reading import read_statement

MODEL_FILE = Path(__file__).with_name("judge_model.json")
FORMAT = 4
LANGUAGES = ("en", "zh")
"""One set of weights per language; a pair is Chinese when the reading says so (the ``chinese`` feature)."""
VECTOR_BLOCKS = ("prod", "absdiff", "added", "removed")
"""The vector features after the named ones: a*b and |a-b| of the two statements' unit vectors, then the unit
vectors of what only the incoming and what only the stored statement says (memory.write.features.changed_spans)."""
HASH_DIM = 2048
"""Then the changed wording (memory.write.features.changed_wording): counts of the units only the incoming statement
has, then of those only the stored one has, each hashed (crc32) into this many buckets."""

SAME_COSINE = 1e-6
"""The judge's own cosine and the caller's are the same cosine (float32 vectors scored in float32 or float64) within
this: the rules' decision the features computed is the caller's too (LearnedJudge._rules)."""

COST: tuple[tuple[float, ...], ...] = (
    # decided:  duplicate update coexist new      (rows: the true verdict)
    (0.0, 1.0, 1.0, 1.0),   # duplicate: storing it again or retiring an equal fact loses nothing
    (6.0, 0.0, 2.0, 2.0),   # update: taken for a duplicate = a silent loss; kept beside = a stale fact stays live
    (6.0, 6.0, 0.0, 0.3),   # coexist: a duplicate drops it, an update retires a valid fact
    (6.0, 6.0, 0.3, 0.0),   # new: likewise; coexist and new both keep the fact
)
"""Expected-cost weights of the decision: the data-losing mistakes (memory.eval.conformance.DATA_LOSING) cost six
times a stale or duplicated fact."""


@dataclass(frozen=True)
class Weights:
    """One language's regression: standardisation, then one row of coefficients per verdict."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    """(4, n_features): one row per verdict, in VERDICTS order."""
    intercept: np.ndarray

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Each verdict's probability for feature rows ``x`` (n, n_features)."""
        return _softmax(((x - self.mean) / self.scale) @ self.coef.T + self.intercept)

    def probabilities_sparse(self, dense: np.ndarray, columns: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """:meth:`probabilities` of one row given as its leading ``dense`` part and, after it, the ``counts`` at
        ``columns`` (the changed wording's hashed counts, almost all zero): the standardisation folded into the
        coefficients once (``coef / scale``, ``intercept - (coef / scale) @ mean``), so the 4,096 hashed columns are
        never built. The same numbers as the dense row's, to float rounding."""
        folded, offset = self._folded()
        logits = folded[:, : len(dense)] @ dense + folded[:, columns] @ counts + offset
        return _softmax(logits[None, :])[0]

    def _folded(self) -> tuple[np.ndarray, np.ndarray]:
        cached = self.__dict__.get("_fold")
        if cached is None:
            folded = self.coef / self.scale
            cached = (folded, self.intercept - folded @ self.mean)
            object.__setattr__(self, "_fold", cached)
        return cached


def _softmax(logits: np.ndarray) -> np.ndarray:
    logits = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class JudgeModel:
    """The weights of a trained judge (``judge_model.json``)."""

    vectors: dict[str, str]
    """language -> the embedder whose vectors of the two statements its weights read (``minilm``, ``e5``)."""
    spans: dict[str, str]
    """language -> the embedder of the changed spans (``minilm-static``: memory.embed.embedders.StaticTokenEmbedder)."""
    features: tuple[str, ...]
    """The named features, in order (memory.write.features.pair_features)."""
    dim: int
    """Vector dimension: ``len(VECTOR_BLOCKS) * dim`` vector numbers follow the named features."""
    hash_dim: int
    """Buckets of each changed-wording block (two blocks end the features)."""
    weights: dict[str, Weights]
    """language (LANGUAGES) -> its regression."""
    cost: np.ndarray
    trained_on: dict[str, int]

    def probabilities(self, x: np.ndarray, language: str) -> np.ndarray:
        """Each verdict's probability for feature rows ``x`` (n, n_features) of pairs in ``language``."""
        return self.weights[language].probabilities(x)

    def decide(self, p: np.ndarray) -> np.ndarray:
        """The least expected cost verdict's index for each row of probabilities."""
        return np.argmin(p @ self.cost, axis=1)


def load_model(path: str | Path = MODEL_FILE) -> JudgeModel:
    """Read and check a model file; ConfigError naming the file and the field that is wrong."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a readable judge model ({exc})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a judge model is a JSON object")
    if raw.get("format") != FORMAT:
        raise ConfigError(f"{path}: field 'format' must be {FORMAT}, got {raw.get('format')!r}")
    try:
        features = tuple(str(f) for f in raw["features"])
        dim, hash_dim = int(raw["dim"]), int(raw["hash_dim"])
        width = len(features) + len(VECTOR_BLOCKS) * dim + 2 * hash_dim
        languages = raw["languages"]
        if not isinstance(languages, dict):
            raise ConfigError(f"{path}: field 'languages' must map each of {', '.join(LANGUAGES)} to its weights")
        weights = {lang: Weights(**{key: _array(path, languages.get(lang), f"languages.{lang}.{key}", key, shape)
                                    for key, shape in (("mean", (width,)), ("scale", (width,)),
                                                       ("coef", (len(VERDICTS), width)), ("intercept", (len(VERDICTS),)))})
                   for lang in LANGUAGES}
        for lang, w in weights.items():
            if np.any(w.scale <= 0):
                raise ConfigError(f"{path}: field 'languages.{lang}.scale' must be positive")
        cost = _array(path, raw, "cost", "cost", (len(VERDICTS), len(VERDICTS)))
        return JudgeModel(_names(path, raw, "vectors"), _names(path, raw, "spans"), features, dim, hash_dim, weights, cost,
                          {str(k): int(v) for k, v in raw["trained_on"].items()})
    except KeyError as exc:
        raise ConfigError(f"{path}: field {exc.args[0]!r} is required") from None
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{path}: {exc}") from None


def _names(path: Path, raw: dict, field: str) -> dict[str, str]:
    """``raw[field]``: an embedder name for each language; ConfigError naming the file and field otherwise."""
    value = raw[field]
    if not isinstance(value, dict) or any(not isinstance(value.get(lang), str) or not value[lang] for lang in LANGUAGES):
        raise ConfigError(f"{path}: field {field!r} must name an embedder for each of {', '.join(LANGUAGES)}")
    return {lang: value[lang] for lang in LANGUAGES}


def _array(path: Path, raw: Any, field: str, key: str, shape: tuple[int, ...]) -> np.ndarray:
    """``raw[key]`` as finite float64 numbers of ``shape``; ConfigError naming the file and ``field`` otherwise."""
    if not isinstance(raw, dict) or key not in raw:
        raise ConfigError(f"{path}: field {field!r} is required")
    try:
        value = np.asarray(raw[key], dtype=np.float64)
    except (TypeError, ValueError):
        value = np.asarray(np.nan)
    if value.shape != shape or not np.all(np.isfinite(value)):
        raise ConfigError(f"{path}: field {field!r} must be finite numbers of shape {shape}, got {value.shape}")
    return value


def vector_features(a: np.ndarray, b: np.ndarray, added: np.ndarray, removed: np.ndarray) -> np.ndarray:
    """The vector part of a pair's features (VECTOR_BLOCKS): a*b and |a-b| of the statements' unit vectors, then the
    vectors of their changed spans."""
    return np.concatenate([a * b, np.abs(a - b), added, removed])


def pair_language(features: dict[str, float]) -> str:
    """The language whose weights decide a pair: Chinese when the reading found Chinese (memory.write.features)."""
    return "zh" if features["chinese"] else "en"


def hashed_counts(units: Sequence[str], dim: int) -> np.ndarray:
    out = np.zeros(dim)
    for unit in units:
        out[zlib.crc32(unit.encode("utf-8")) % dim] += 1.0
    return out


def feature_row(features: dict[str, float], names: Sequence[str], vecs: np.ndarray, existing: str, incoming: str,
                hash_dim: int = HASH_DIM) -> np.ndarray:
    """One pair's whole feature row: the named features, the vector blocks, the changed wording. ``vecs`` holds the
    unit vectors of :func:`pair_texts` (existing, incoming, added span, removed span)."""
    added, removed = changed_wording(existing, incoming)
    return np.concatenate([np.fromiter((features[n] for n in names), dtype=np.float64, count=len(names)),
                           vector_features(*vecs), hashed_counts(added, hash_dim), hashed_counts(removed, hash_dim)])


def sparse_feature_row(features: dict[str, float], names: Sequence[str], vecs: np.ndarray, existing: str,
                       incoming: str, hash_dim: int = HASH_DIM) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`feature_row` as (its dense leading part, the columns of the changed wording's non-zero counts, those
    counts): what :meth:`Weights.probabilities_sparse` reads."""
    added, removed = changed_wording(existing, incoming)
    dense = np.concatenate([np.fromiter((features[n] for n in names), dtype=np.float64, count=len(names)),
                            vector_features(*vecs)])
    cols: dict[int, float] = {}
    for offset, units in ((len(dense), added), (len(dense) + hash_dim, removed)):
        for unit in units:
            col = offset + zlib.crc32(unit.encode("utf-8")) % hash_dim
            cols[col] = cols.get(col, 0.0) + 1.0
    return dense, np.fromiter(cols, dtype=np.int64, count=len(cols)), np.fromiter(cols.values(), dtype=np.float64,
                                                                                   count=len(cols))


def pair_texts(existing: str, incoming: str) -> tuple[str, str, str, str]:
    """The four texts the judge embeds for a pair: both statements and both changed spans."""
    return (existing, incoming, *changed_spans(existing, incoming))


_MODELS: dict[Path, JudgeModel] = {}
_MODELS_LOCK = threading.Lock()
_EMBEDDERS: dict[str, Any] = {}


def _shared_model(path: Path) -> JudgeModel:
    with _MODELS_LOCK:
        if path not in _MODELS:
            _MODELS[path] = load_model(path)
        return _MODELS[path]


def shared_embedder(name: str) -> Any:
    """The process's one embedder of that name for the judge (``minilm-static``: MiniLM's token table)."""
    from memory.embed.embedders import SentenceTransformerEmbedder, StaticTokenEmbedder, make_embedder

    with _MODELS_LOCK:
        if name not in _EMBEDDERS:
            if name.endswith(STATIC_SUFFIX):
                inner = make_embedder(name[: -len(STATIC_SUFFIX)])
                if not isinstance(inner, SentenceTransformerEmbedder):
                    raise ConfigError(f"judge model: {name!r} is not a sentence-transformers model's token table")
                _EMBEDDERS[name] = StaticTokenEmbedder(inner)
            else:
                _EMBEDDERS[name] = make_embedder(name)
        return _EMBEDDERS[name]


_VECTORS: TextMemo[np.ndarray] = TextMemo(maxsize=8192, name="learned judge vectors", tells=False)
"""(model, text) -> unit vector (float32: 8,192 of them hold 12.6 MB): the statements the judge has read or been
handed (:meth:`LearnedJudge.offer`) and their changed spans (memory.write.features.changed_spans: lowercased, joined
with " … "). The spans are not any user's text as stored, and an offered vector carries no owner, so the memo cannot
tell whose an entry is: erase_user empties it whole (memory/core/textcaches.py)."""


_SPANS: TextMemo[np.ndarray] = TextMemo(maxsize=8192, name="learned judge span vectors", tells=False)
"""(model, changed span) -> its vector from a token table (memory.embed.embedders.StaticTokenEmbedder): cheap to
compute, but one call per pair costs more than the lookup, so a batch's spans are computed in one call
(:meth:`LearnedJudge.prepare`) and kept here, apart from :data:`_VECTORS` so that they never push out a statement's
model vector. Emptied whole by erase_user, like :data:`_VECTORS`."""


def pair_language_of(existing: str, incoming: str) -> str:
    """The language whose weights and models judge a pair: Chinese when either statement reads as Chinese (the
    same answer as :func:`pair_language` on the pair's features)."""
    return "zh" if "zh" in (read_statement(existing).language, read_statement(incoming).language) else "en"


class LearnedJudge:
    """The learned judge behind the :class:`~memory.write.adjudicate.Judge` seam (module docstring)."""

    name = "learned"

    def __init__(self, model_file: str | Path = MODEL_FILE) -> None:
        self.model = _shared_model(Path(model_file))

    def models(self) -> frozenset[str]:
        """The embedders whose statement vectors the judge reads (one per language): a write path whose store uses
        one of them hands its vectors over (:meth:`offer`)."""
        return frozenset(self.model.vectors.values())

    def offer(self, model: str, texts: Sequence[str], vectors: Sequence[np.ndarray] | np.ndarray) -> None:
        """Vectors of ``texts`` already computed with the embedder named ``model`` (a write path's facts, its stored
        candidates' vectors read from the store): kept for the judge's statements when it reads that model, so they
        are not encoded twice. Ignored for any other model."""
        if model not in self.models():
            return
        for text, vec in zip(texts, vectors):
            v = np.asarray(vec, dtype=np.float32)
            if v.shape == (self.model.dim,):
                _VECTORS.put((model, text), v)

    def vectors(self, texts: Sequence[str], model: str | None = None) -> np.ndarray:
        """Unit vectors of ``texts`` from the embedder named ``model`` (default: the English statements' model): from
        the memo, the rest in one call, shortest first."""
        name = model or self.model.vectors["en"]
        memo = _SPANS if name.endswith(STATIC_SUFFIX) else _VECTORS
        hits = [memo.get((name, t)) for t in texts]
        if all(h is not None for h in hits):  # the write path's case: prepared or handed over
            return np.array(hits, dtype=np.float64)
        found: dict[str, Any] = dict(zip(texts, hits))
        todo = sorted((t for t, v in found.items() if v is None), key=len)
        if todo:
            for text, vec in zip(todo, shared_embedder(name).embed(todo)):
                found[text] = np.asarray(vec, dtype=np.float32)
                memo.put((name, text), found[text])
        return np.stack([found[t] for t in texts]).astype(np.float64)

    def pair_vectors(self, existing: str, incoming: str) -> np.ndarray:
        """The four vectors of a pair's features (:func:`pair_texts`): the statements from the language's model, the
        changed spans from its span model."""
        language = pair_language_of(existing, incoming)
        texts = pair_texts(existing, incoming)
        statements, spans = self.model.vectors[language], self.model.spans[language]
        if statements == spans:  # one model call for the four texts
            return self.vectors(texts, statements)
        return np.concatenate([self.vectors(texts[:2], statements), self.vectors(texts[2:], spans)])

    def prepare(self, texts: Sequence[str], pairs: Sequence[tuple[str, str]] = ()) -> None:
        """Embed what the memo lacks of the (stored, incoming) ``pairs``' texts (:func:`pair_texts`), one call per
        model for the whole batch: a write path calls it with a batch's facts and candidates before judging them.
        ``texts`` (statements not yet paired) are embedded for the language each reads as."""
        todo: dict[str, list[str]] = {}
        for text in texts:
            todo.setdefault(self.model.vectors[pair_language_of(text, text)], []).append(text)
        for existing, incoming in pairs:
            language = pair_language_of(existing, incoming)
            four = pair_texts(existing, incoming)
            todo.setdefault(self.model.vectors[language], []).extend(four[:2])
            todo.setdefault(self.model.spans[language], []).extend(four[2:])
        for name, mine in todo.items():
            self.vectors(list(dict.fromkeys(mine)), name)

    def probabilities(self, existing: str, incoming: str, similarity: float, *,
                      config: MemoryConfig | None = None) -> dict[str, float]:
        """Each verdict's probability for one pair."""
        p, _ = self._weigh(existing, incoming, similarity, config or DEFAULT_CONFIG)
        return {v: float(x) for v, x in zip(VERDICTS, p)}

    def _weigh(self, existing: str, incoming: str, similarity: float, cfg: MemoryConfig,
               decided: list | None = None) -> tuple[np.ndarray, float]:
        vecs = self.pair_vectors(existing, incoming)
        own = float(vecs[0] @ vecs[1])
        feats = pair_features(read_statement(existing), read_statement(incoming), own, cfg, decided)
        dense, columns, counts = sparse_feature_row(feats, self.model.features, vecs, existing, incoming,
                                                    self.model.hash_dim)
        return self.model.weights[pair_language(feats)].probabilities_sparse(dense, columns, counts), own

    def __call__(self, existing: str, incoming: str, similarity: float, *,
                 config: MemoryConfig | None = None) -> tuple[Verdict, Reason]:
        cfg = config or DEFAULT_CONFIG
        decided: list = []
        p, own = self._weigh(existing, incoming, similarity, cfg, decided)
        verdict: Verdict = VERDICTS[int(self.model.decide(p[None, :])[0])]  # type: ignore[assignment]
        rules_verdict, rules_why = self._rules(existing, incoming, similarity, own, decided, cfg)
        if verdict == rules_verdict:
            return verdict, rules_why
        params: dict[str, Any] = {"verdict": verdict, "confidence": f"{p[VERDICTS.index(verdict)]:.0%}",
                                  "rules_verdict": rules_verdict, "fallback_code": rules_why.code,
                                  "fallback_text": rules_why.text()}
        params |= {FALLBACK_PREFIX + k: v for k, v in rules_why.params.items()}
        return verdict, Reason("learned.overruled", params, rules_why.plain)

    @staticmethod
    def _rules(existing: str, incoming: str, similarity: float, own: float, decided: list, cfg: MemoryConfig
               ) -> tuple[Verdict, Reason]:
        """The rules' verdict and reason at the caller's cosine: the first rule the features found firing when the
        judge's own cosine is the caller's (a store of the judge's model: the write path's usual case), so the rules
        run once per pair; else the rules asked again at the caller's cosine (judge_reason)."""
        if decided and abs(own - similarity) <= SAME_COSINE:
            rule, params = decided[0]
            band = plain_rule(similarity, cfg)
            return rule.verdict, Reason(rule.id, params, (similarity, band) if band != rule.verdict else None)
        return judge_reason(existing, incoming, similarity, config=cfg)
