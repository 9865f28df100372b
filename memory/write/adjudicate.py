"""Write-time adjudication: is an incoming fact a duplicate of, an update to, or independent of a stored one?

Two rules side by side:

* :func:`plain_rule` is the A6 article's two cosine bands: ``>= duplicate_band`` is a
  duplicate; ``[conflict_band, duplicate_band)`` is a conflict, which the plain rule
  resolves by retiring the old fact (``update``); below ``conflict_band`` it is ``new``.
* :func:`judge` is the governed rule. It reads both statements
  (:func:`memory.write.reading.read_statement`) and decides on what they *say*; the cosine
  similarity is evidence (used where the reading finds no structure), never the
  verdict. A changed value of the same subject and attribute is an ``update`` whatever
  the cosine; a restatement is a ``duplicate`` whatever the cosine; facts qualified by
  different contexts ``coexist``; a negation flip ("is vegetarian" / "is no longer
  vegetarian") is an ``update``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Literal, Protocol, Sequence

from memory.core.textcaches import text_cache
from memory.core.config import DEFAULT_CONFIG, MemoryConfig
from memory.write.lexicon import (WEAK_CHANGE, WEEKDAYS_EN, additive_marker, change_marker, normalize_values_en,
                                  normalize_values_zh, qualifier_kinds)
from memory.write.lang import language_of, zh
from memory.write.lang.script import MEASURE
from memory.write.reading import Reading, read_statement
from memory.core.reasons import Reason

Verdict = Literal["duplicate", "update", "coexist", "new"]
VERDICTS: tuple[str, ...] = ("duplicate", "update", "coexist", "new")
PRIORITY = {"duplicate": 0, "update": 1, "coexist": 2, "new": 3}
"""When a fact meets several candidates, the strongest relation wins (a duplicate over an update, ...)."""

PLACEHOLDER_SUBJECTS = frozenset({"user", "everything", "it", "this", "that", "all", "all work", "所有工作", "一切"})
PARAPHRASE_OVERLAP = 0.5
"""Share of the shorter statement's content tokens the other must contain to count as a restatement."""
MAX_SUBSTITUTION_TOKENS = 120
"""Longer pairs of statements are not compared for a one-place substitution: difflib's matching is quadratic and
worse on repetitive input (two 4,000-character Chinese clauses took minutes), and a value swap is a short-statement
pattern."""
TOPIC_OVERLAP = 0.3
"""Share of content tokens (the shorter side's) from which two statements are on one topic (second look)."""
TOPIC_COSINE = 0.55
"""Cosine from which two English statements are on one topic (second look; MiniLM's scale)."""
SLOT_COSINE = 0.6
SLOT_OVERLAP_ZH = 0.4
"""One slot, another value (a weak change word then retires): the cosine (English, with shared words) or the shared
wording (Chinese) from which two statements fill one slot."""
QUALIFIED_COSINE = 0.4
QUALIFIED_ONE_SIDE_COSINE = 0.6
"""Cosines from which facts qualified by different kinds of condition are taken for one topic (both sides
qualified, one side qualified with other values)."""
SAME_VALUES_COSINE = 0.6
SAME_VALUES_COSINE_ZH = 0.7
"""Cosines from which a restatement with the same values is a duplicate (MiniLM's scale)."""
SAME_SPECIFICS_COSINE = 0.6
"""Cosine from which two statements naming the same things and values, with nothing apart, are one fact (MiniLM)."""
SAME_CONTENT_COSINE = 0.8
SAME_CONTENT_COSINE_ZH = 0.85
SAME_CONTENT_OVERLAP_ZH = 0.4
"""A restatement with nothing that tells the two apart: from this cosine and shared wording (MiniLM's scale; Chinese,
where MiniLM's cosine says less, asks for more shared wording)."""


@dataclass(frozen=True)
class CandidateRef:
    """The stored fact a decision was taken against."""

    id: str
    """memory_id of the stored record (or the pair id for pair files)."""
    text: str
    """Its content."""

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "text": self.text}


@dataclass(frozen=True)
class Decision:
    """One write-time decision, as logged."""

    fact: str
    """The incoming fact's text."""
    candidate: CandidateRef | None
    """The stored fact it was judged against (None when the store had no candidate)."""
    similarity: float | None
    """Cosine similarity of fact and candidate (higher is more similar); None without a candidate."""
    plain_rule: str
    """What the two-band rule alone would do: duplicate, update or new."""
    decision: Verdict | Literal["bounded"]
    """The governed decision: duplicate, update, coexist or new (``bounded`` for a turn stored raw)."""
    why: Reason
    """The rule that fired and its parameters; a UI renders it in its language."""

    @property
    def reason(self) -> str:
        """Why, in an English sentence a person can read."""
        return self.why.text()

    def to_dict(self) -> dict[str, Any]:
        return {
            "fact": self.fact,
            "candidate": self.candidate.to_dict() if self.candidate else None,
            "similarity": None if self.similarity is None else round(self.similarity, 6),
            "plain_rule": self.plain_rule,
            "decision": self.decision,
            "reason": self.reason,
            **self.why.to_dict(),
        }


def plain_rule(similarity: float | None, config: MemoryConfig | None = None) -> Verdict:
    """The A6 two-band rule: duplicate / update (a conflict retires the old fact) / new."""
    cfg = config or DEFAULT_CONFIG
    if similarity is None or similarity < cfg.conflict_band:
        return "new"
    return "duplicate" if similarity >= cfg.duplicate_band else "update"


def adjudicate(
    fact: str, candidates: Sequence[tuple[CandidateRef, float]], *, config: MemoryConfig | None = None,
    judge: "Judge | None" = None, said: str = "",
) -> Decision:
    """Judge a fact against stored candidates (most similar first) and keep the strongest relation.

    ``plain_rule`` is what the two bands say about the most similar candidate, as the
    A6 gateway would act on it. ``judge`` decides each pair (default :func:`judge_reason`, the rules), reading the
    incoming statement as ``said`` when given (the clause as the speaker said it: :attr:`memory.write.extract.Fact.said`)
    and the decision is about ``fact``.
    """
    cfg = config or DEFAULT_CONFIG
    decide = judge or judge_reason
    if not candidates:
        return Decision(fact, None, None, "new", "new", Reason("new.no_candidate"))
    top_ref, top_sim = candidates[0]
    best: tuple[int, float, CandidateRef, Verdict, Reason] | None = None
    for ref, sim in candidates:
        verdict, reason = decide(ref.text, said or fact, sim, config=cfg)
        if verdict not in PRIORITY:
            raise ValueError(f"judge {decide!r} returned verdict {verdict!r}; expected one of {', '.join(VERDICTS)}")
        key = (PRIORITY[verdict], -sim)
        if best is None or key < (best[0], -best[1]):
            best = (PRIORITY[verdict], sim, ref, verdict, reason)
    assert best is not None
    _, sim, ref, verdict, reason = best
    if verdict == "new":  # report against the nearest candidate
        ref, sim = top_ref, top_sim
    return Decision(fact, ref, sim, plain_rule(top_sim, cfg), verdict, reason)


class Judge(Protocol):
    """Decides one (stored, incoming) pair: the verdict and its :class:`~memory.core.reasons.Reason`.

    :func:`judge_reason` (the rules) is the default; an :class:`~memory.write.ingest.Ingestor` takes another with
    ``judge=...``. The cosine similarity is evidence a judge may use or ignore. A judge may also have a
    ``prepare(texts, pairs)`` method, called with a batch's statements and the (stored, incoming) pairs it will most
    likely be asked before they are judged (:func:`prepare_judge`).
    """

    def __call__(self, existing: str, incoming: str, similarity: float, *,
                 config: MemoryConfig) -> tuple[Verdict, Reason]: ...


def prepare_judge(judge: Judge | None, texts: Sequence[str], pairs: Sequence[tuple[str, str]] = ()) -> None:
    """Let a judge with a model of its own (a ``prepare`` method: memory.write.judges.learned.LearnedJudge) embed the
    statements, and what it needs of the (stored, incoming) ``pairs``, it is about to judge in one call, rather than a
    pair at a time as they come. Only a warm-up: a pair left out is judged the same, just at its own cost."""
    prepare = getattr(judge, "prepare", None)
    if prepare is not None and (texts or pairs):
        prepare(list(dict.fromkeys(texts)), list(dict.fromkeys(pairs)))


def judge_models(judge: Judge | None) -> frozenset[str]:
    """The embedders whose vectors of the statements a judge reads (a ``models`` method:
    memory.write.judges.learned.LearnedJudge); empty for a judge with no model of its own."""
    models = getattr(judge, "models", None)
    return frozenset(models()) if models is not None else frozenset()


def offer_judge(judge: Judge | None, model: str, texts: Sequence[str], vectors: Sequence[Any]) -> None:
    """Hand a judge that reads ``model``'s vectors (:func:`judge_models`) the vectors of ``texts`` a write path has
    already computed or read from the store, so it does not encode them again."""
    if model in judge_models(judge) and texts:
        judge.offer(model, list(texts), list(vectors))  # type: ignore[union-attr]


def judge(existing: str | Reading, incoming: str | Reading, similarity: float, *, config: MemoryConfig | None = None
          ) -> tuple[Verdict, str]:
    """The governed decision for one (stored, incoming) pair and its reason (English)."""
    verdict, reason = judge_reason(existing, incoming, similarity, config=config)
    return verdict, reason.text()


def judge_reason(existing: str | Reading, incoming: str | Reading, similarity: float, *,
                 config: MemoryConfig | None = None) -> tuple[Verdict, Reason]:
    """The rules' decision for one pair, with its :class:`~memory.core.reasons.Reason` (code, parameters, and the plain
    rule's verdict where it disagrees)."""
    cfg = config or DEFAULT_CONFIG
    old = existing if isinstance(existing, Reading) else read_statement(existing)
    new = incoming if isinstance(incoming, Reading) else read_statement(incoming)
    verdict, code, params = _judge(old, new, similarity, cfg)
    band = plain_rule(similarity, cfg)
    return verdict, Reason(code, params, (similarity, band) if band != verdict else None)


@text_cache(maxsize=4096)
def _show(value: str) -> str:
    """A value as a person reads it: its number, time and date tokens spelt out (n1500 -> 1,500, t0630 -> 06:30,
    d0630 -> 06-30)."""
    return _VALUE_TOKEN.sub(_show_token, value) if value else "(none)"


_VALUE_TOKEN = re.compile(r"(?:\b|(?<=[^\W\d_]))([ntd])(\d+)\b")
"""A number, time or date token, also right after a word it was read in (宝马X3 -> 宝马xn3 -> 宝马x3)."""


def _show_token(m: re.Match) -> str:
    kind, digits = m.group(1), m.group(2)
    if kind == "t":
        return f"{digits[:2]}:{digits[2:]}"
    if kind == "d":
        return f"{digits[:2]}-{digits[2:]}"
    return _grouped(digits)


def _grouped(digits: str) -> str:
    """'1500000' -> '1,500,000' for any number of digits (no int: ints stop converting past 4,300 digits)."""
    digits = digits.lstrip("0") or "0"
    head = len(digits) % 3 or 3
    return ",".join([digits[:head]] + [digits[i : i + 3] for i in range(head, len(digits), 3)])


@dataclass(frozen=True)
class Pair:
    """One (stored, incoming) pair as the rules see it: both readings, the cosine and what several rules ask."""

    old: Reading
    new: Reading
    sim: float
    cfg: MemoryConfig

    @cached_property
    def same_attr(self) -> bool:
        """Same subject and the same (read) attribute."""
        return bool(self.old.attribute) and self.old.attribute == self.new.attribute and _subjects_match(self.old, self.new)

    @cached_property
    def both_qualified(self) -> bool:
        """Both are qualified, by different contexts."""
        return self.old.context != self.new.context and bool(self.old.context) and bool(self.new.context)

    @cached_property
    def one_qualified(self) -> bool:
        """Exactly one of them is qualified by a context."""
        return bool(self.old.context) != bool(self.new.context)

    @cached_property
    def complementary(self) -> bool:
        """Qualified by other kinds of one axis of condition (weekdays / weekends, hot / cold, at home / at work): the two
        sides of one condition, so one topic whatever the wording."""
        old, new = self.kinds
        return any({k for k in old if k.startswith(a + ":")} != {k for k in new if k.startswith(a + ":")}
                   for a in {k.split(":")[0] for k in old} & {k.split(":")[0] for k in new})

    @cached_property
    def overlap(self) -> float:
        return _overlap(self.old, self.new)

    @cached_property
    def conflict(self) -> bool:
        """Both state numbers, dates or times, and not the same ones."""
        return _value_conflict(self.old, self.new)

    @cached_property
    def substitution(self) -> tuple[str, str] | None:
        return _substitution(self.old, self.new)

    @cached_property
    def chinese(self) -> bool:
        return "zh" in (self.old.language, self.new.language)

    @cached_property
    def change_marker(self) -> str | None:
        """The incoming statement's change word, when the stored one has none ("moved", "换了")."""
        marker = change_marker(self.new.text)
        return marker if marker and not change_marker(self.old.text) else None

    @cached_property
    def kinds(self) -> tuple[frozenset[str], frozenset[str]]:
        """The kinds of condition each side is qualified by (memory.write.lexicon.QUALIFIERS_EN / _ZH)."""
        return qualifier_kinds(self.old.text), qualifier_kinds(self.new.text)

    @cached_property
    def surface_overlap(self) -> float:
        """Shared wording of the statements as written (English words, Chinese character pairs): what the readers'
        tokens miss where a statement's topic comes first ("爱奇艺会员我已经退订了")."""
        a, b = _surface(self.old.text), _surface(self.new.text)
        return len(a & b) / min(len(a), len(b)) if a and b else 0.0

    @cached_property
    def same_slot(self) -> bool:
        """Close enough to be one slot with another value: shared wording, and (English) close vectors."""
        if self.chinese:
            return self.surface_overlap >= SLOT_OVERLAP_ZH
        return self.sim >= SLOT_COSINE and max(self.overlap, self.surface_overlap) >= TOPIC_OVERLAP

    @cached_property
    def same_topic(self) -> bool:
        """Shared content words or a shared domain (phone, drink, residence, ...), or (English, where the cosine is the
        model's language) close vectors."""
        return max(self.overlap, self.surface_overlap) >= TOPIC_OVERLAP or bool(set(self.old.domains) & set(self.new.domains)) \
            or (not self.chinese and self.sim >= TOPIC_COSINE)

    def change(self) -> dict[str, Any]:
        return {"attribute": self.old.attribute, "old": _show(self.old.value), "new": _show(self.new.value)}


@dataclass(frozen=True)
class Rule:
    """One declarative rule: when it applies, the verdict it gives, and the pairs that show it.

    ``id`` is the reason code a decision carries (``memory.core.reasons``); ``applies`` returns the reason's
    parameters when the rule decides the pair, None when it leaves it to the next rule. ``fires_on`` are
    (stored, incoming) pairs this rule decides; ``leaves`` are look-alike pairs it must leave to another rule.
    tests/test_judge_rules.py runs every rule's own examples, in both languages.
    """

    id: str
    verdict: Verdict
    applies: Callable[[Pair], "dict[str, Any] | None"]
    fires_on: tuple[tuple[str, str], ...]
    leaves: tuple[tuple[str, str], ...] = ()


def _contexts(p: Pair) -> dict[str, Any]:
    return {"old_context": p.old.context, "new_context": p.new.context}


def _if(condition: bool, params: "dict[str, Any] | None" = None) -> "dict[str, Any] | None":
    return (params if params is not None else {}) if condition else None


def _refines(p: Pair) -> "dict[str, Any] | None":
    old, new = p.old, p.new
    refines = p.same_attr and not _values_equal(old.value, new.value) or (
        not p.same_attr and not old.attribute and p.substitution is not None)
    return _if(p.one_qualified and refines, {"context": (new if new.context else old).context})


def _polarity(p: Pair) -> "dict[str, Any] | None":
    old, new = p.old, p.new
    return _if(p.same_attr and old.negated != new.negated,
               {"attribute": old.attribute, "old": _show(old.value or old.attribute), "old_negated": old.negated,
                "new": _show(new.value or new.attribute), "new_negated": new.negated})


def _change_event_rule(p: Pair) -> "dict[str, Any] | None":
    old, new = p.old, p.new
    moved = _change_event(new.text)
    if moved and not old.negated and old.subject == new.subject and not _EVENT_EN.search(old.text) \
            and not _PAST.search(old.text) \
            and not _THIRD_PARTY.search(old.text) and not _THIRD_PARTY.search(new.text) \
            and _mentions(old, moved[0].lower()) and not _mentions(old, moved[1].lower()):
        return {"old": moved[0], "new": moved[1]}
    return None


def _departed(p: Pair) -> "dict[str, Any] | None":
    """The incoming statement says the stored fact's value is gone: the user left, dropped or sold it ("I left Google and
    joined Stripe", "我已经从阿里离职"), or the person it names left ("Tom left, so Rachel is my manager", "王经理走了")."""
    gone = _departure(p.new.text)
    if gone is None or p.old.negated or p.old.ceased or _PAST.search(p.old.text) or _AWAY.search(p.new.text) \
            or not _mentions(p.old, gone.lower()):
        return None
    return {"value": _show(gone)}


def _swapped(p: Pair) -> "dict[str, Any] | None":
    old, new = p.old, p.new
    subst = None if old.attribute and new.attribute else p.substitution
    if subst and (old.single_valued and new.single_valued or new.changed):
        return {"old": _show(subst[0]), "new": _show(subst[1])}
    return None


def _adds(p: Pair) -> "dict[str, Any] | None":
    marker = additive_marker(p.new.text)
    return {"marker": marker} if marker and not p.change_marker else None


def _announced(p: Pair) -> "dict[str, Any] | None":
    old, new = p.old, p.new
    moved = _change_event(new.text)
    left = moved is not None and _mentions(old, moved[0].lower())  # "从钉钉换成飞书" and the stored fact uses 钉钉
    measured = p.change_marker not in WEAK_CHANGE and bool(_measures(old.text) & _measures(new.text)) and p.conflict
    if not p.change_marker or not (p.same_topic or left or measured) or _relations(old.text) != _relations(new.text) \
            or _EVENT_EN.search(old.text) or _PAST.search(old.text):  # someone else's value, or a past one: nothing to retire
        return None
    restated = _same_value_set(p)  # "is in third grade" / "is now in third grade"
    arrived = moved is not None and _mentions(old, moved[1].lower())  # "likes tea" / "switched from coffee to tea"
    if restated or arrived:
        return None
    if p.change_marker in WEAK_CHANGE and not (left or p.conflict or p.same_slot):
        return None  # "started learning Spanish" beside "speaks French": an addition, not a replacement
    return {"marker": p.change_marker}


@text_cache(maxsize=8192)
def _measures(text: str) -> frozenset[str]:
    """What a statement's values measure: "date", "time", a currency or the unit after a number ("kg", "元", "公斤"), so
    that "weighs 82 kg" and "down to 76 kilos" are one measure with another value."""
    chinese = language_of(text).name == "zh"
    norm = normalize_values_zh(text).lower() if chinese else normalize_values_en(text)
    kinds = {"date" for _ in re.finditer(r"(?<![a-z])d\d{4}", norm)} | {"time" for _ in re.finditer(r"(?<![a-z])t\d{4}", norm)}
    for m in MEASURE.finditer(norm):
        unit = m.group(1) or m.group(2)
        if unit:
            kinds.add(_UNITS.get(unit, unit))
    return frozenset(kinds)


_UNITS = {"kilo": "kg", "kilos": "kg", "kilograms": "kg", "kilogram": "kg", "公斤": "kg", "千克": "kg", "pounds": "lb",
          "lbs": "lb", "pound": "lb", "kilometres": "km", "kilometers": "km", "公里": "km", "千米": "km", "元": "¥",
          "块": "¥", "dollars": "$", "euros": "€", "percent": "%"}
"""Spellings of one unit, so that two statements' values are seen to measure one thing."""


def _qualified(p: Pair) -> "dict[str, Any] | None":
    old, new = p.kinds
    if old == new or p.both_qualified:  # the reader found both contexts: coexist.contexts / new.other_contexts decide
        return None
    both = p.complementary and (p.chinese or p.sim >= QUALIFIED_COSINE)
    one = (bool(old) != bool(new)) and bool(p.old.values) and bool(p.new.values) and p.old.values != p.new.values \
        and p.sim >= QUALIFIED_ONE_SIDE_COSINE  # "commute 25 minutes by car" / "40 minutes by train"
    return {"old_kinds": _kinds(old), "new_kinds": _kinds(new)} if both or one else None


def _conditioned(p: Pair) -> "dict[str, Any] | None":
    """The incoming statement opens with a condition of its own (the reader's context) and the stored one is
    conditioned otherwise (its own context, a kind of condition, or "usually"), on one topic: two facts side by side
    ("At night we turn the heating down to 17" beside "set to 20 during the day"), whatever change word the
    condition's clause uses. Not where something stopped, a polarity flipped or a change event names the stored
    value."""
    old, new = p.old, p.new
    old_kinds, new_kinds = p.kinds
    own = bool(new.context) and new.context != old.context and not _stems(new.context) & _stems(old.text) \
        and bool(old.context or old_kinds or _USUAL.search(old.text)) and not _SCHEDULE.search(new.context)
    moved = _change_event(new.text)
    if not own or not p.same_topic or new.ceased or old.negated != new.negated \
            or (moved is not None and _mentions(old, moved[0].lower())):
        return None
    return {"old_context": old.context or _kinds(old_kinds), "new_context": new.context or _kinds(new_kinds)}


_USUAL = re.compile(r"\b(?:usually|normally|typically|generally|ordinarily)\b|平常|平时|通常|正常情况下", re.IGNORECASE)
"""A stored fact said to hold as a rule ("normally two-week sprints", "平常两周一个迭代") beside an incoming exception
under a condition of its own ("over the holidays", "春节前后") is the rule and its exception: both hold."""
_SCHEDULE = re.compile(rf"\b(?:{'|'.join(WEEKDAYS_EN)})\b")
"""A weekday context is when a thing happens ("on Tuesday evenings"), not a condition another fact holds under."""


def _kinds(kinds: frozenset[str]) -> str:
    return ", ".join(sorted(k.split(":")[1] for k in kinds)) or "none"


def _same_value_set(p: Pair) -> bool:
    """Both state the same numbers, dates and times, and some: "月n4500" and "n4500" are one rent, whatever else the
    value's wording holds."""
    return bool(p.old.values) and p.old.values == p.new.values


def _same_specifics(p: Pair) -> "dict[str, Any] | None":
    """Other words for the same named things and values ("Home for me is Lisbon", "我写代码一般用VS Code"): the same
    names, numbers and dates on both sides, close vectors and shared wording, and nothing that tells them apart."""
    old, new = p.old, p.new
    names = _specifics(old, new)
    if not names or names != _specifics(new, old) or p.overlap < TOPIC_OVERLAP or p.sim < SAME_SPECIFICS_COSINE:
        return None
    apart = old.negated != new.negated or old.ceased != new.ceased or old.context != new.context \
        or p.kinds[0] != p.kinds[1] or _relations(old.text) != _relations(new.text) or change_marker(new.text) \
        or additive_marker(new.text) or _attitude(old.text) != _attitude(new.text)
    return None if apart else {"values": ", ".join(_show(v) for v in sorted(names))}


def _specifics(r: Reading, other: Reading) -> frozenset[str]:
    """The named things (English: capitalised words, the first one only where ``other`` names it too; Chinese: words in
    Latin script) and the values."""
    if r.language == "zh":
        names = {m.lower() for m in re.findall(r"[A-Za-z][A-Za-z0-9+#.-]{0,40}(?: [A-Z0-9][A-Za-z0-9+#.-]{0,40})*", r.text)}
    else:
        words = [w.strip(".,;:!?\"()") for w in r.text.split()]
        first = words[0] if words and re.search(rf"(?<!^)\b{re.escape(words[0])}\b", other.text.strip()) else ""
        names = {w.lower().removesuffix("'s") for w in [first] + words[1:]
                 if w[:1].isupper() and w != "I" and not w.startswith("I'")}
    return frozenset(names) | r.values


def _same_values(p: Pair) -> "dict[str, Any] | None":
    close = p.sim >= (SAME_VALUES_COSINE_ZH if p.chinese else SAME_VALUES_COSINE)
    return {"values": ", ".join(_show(v) for v in sorted(p.old.values))} \
        if _same_value_set(p) and p.overlap >= TOPIC_OVERLAP and close else None


def _same_content_rule(p: Pair) -> "dict[str, Any] | None":
    """A restatement in other words: close vectors and shared wording, and nothing that tells them apart (no value,
    condition, polarity, person or change of its own)."""
    old, new = p.old, p.new
    close = p.sim >= SAME_CONTENT_COSINE_ZH and p.surface_overlap >= SAME_CONTENT_OVERLAP_ZH if p.chinese \
        else p.sim >= SAME_CONTENT_COSINE and p.surface_overlap >= TOPIC_OVERLAP
    apart = old.values != new.values or old.negated != new.negated or p.kinds[0] != p.kinds[1] \
        or _relations(old.text) != _relations(new.text) or change_marker(new.text) or additive_marker(new.text) \
        or _attitude(old.text) != _attitude(new.text)
    return {"overlap": round(p.surface_overlap, 4)} if close and not apart else None


@text_cache(maxsize=8192)
def _attitude(text: str) -> int:
    """+1 for a statement of liking, -1 for disliking, 0 for neither ("loves" / "hates" are not one fact)."""
    low = text.lower()
    if _DISLIKE.search(low):
        return -1
    return 1 if _LIKE.search(low) else 0


_LIKE = re.compile(r"\b(?:likes?|loves?|enjoys?|prefers?|adores?|favou?rite)\b|喜欢|爱|偏好")
_DISLIKE = re.compile(r"\b(?:hates?|dislikes?|detests?|loathes?|can'?t stand|cannot stand)\b|讨厌|不喜欢|受不了|反感")


def _other_aspect(p: Pair) -> bool:
    """Same attribute word, other aspect: another purpose ("for source control" / "for communication", "管理代码" /
    "管理需求") or another participle ("built with React" / "deployed on Vercel")."""
    purposes = [_PURPOSE.search(r.text.lower()) for r in (p.old, p.new)]
    if purposes[0] and purposes[1] and \
            (purposes[0].group(1) or purposes[0].group(2)) != (purposes[1].group(1) or purposes[1].group(2)):
        return True
    heads = [(_PARTICIPLE.match(r.value.lower()) or [None])[0] for r in (p.old, p.new)]
    return all(heads) and heads[0] != heads[1] or _modifier(p.old) != _modifier(p.new)


def _modifier(r: Reading) -> str | None:
    """The word before an English attribute noun that names another one of its kind ("skip-level manager", "second car"),
    or None (a possessive, an article, or a word that only dates it: "my new manager")."""
    noun = r.attribute.split(":")[-1].split()[-1] if r.attribute and r.language == "en" else ""
    m = re.search(rf"(?:^|\s)([a-z][a-z'-]*) {re.escape(noun)}\b", r.text.lower()) if noun.isalpha() else None
    return m.group(1) if m and m.group(1) not in _NOT_MODIFIERS and not m.group(1).endswith("'s") else None


_NOT_MODIFIERS = frozenset("a an the my our your his her their its this that new old current former previous present "
                           "latest usual main only whose whom user".split())


_PURPOSE = re.compile(r"\bfor ((?!the user\b)[a-z][a-z ]*?)[.!]?$|" + zh.PURPOSE)
_PARTICIPLE = re.compile(r"^(?:\w+ed|built|written|made|run|held|kept|set|done|sold|hosted)\b")


@text_cache(maxsize=8192)
def _surface(text: str) -> frozenset[str]:
    """A statement's content wording (its language's: memory.write.lang.Language.surface)."""
    return language_of(text).surface(text)


@text_cache(maxsize=8192)
def _stems(text: str) -> frozenset[str]:
    """:func:`_surface` with English words cut to five letters ("night" / "nightly", "flight" / "flights")."""
    return language_of(text).stems(text)


def _different_specifics(p: Pair) -> bool:
    return _specific(p.old) and _specific(p.new) and p.old.attribute != p.new.attribute


def _restatement(p: Pair) -> "dict[str, Any] | None":
    old, new, cfg, sim = p.old, p.new, p.cfg, p.sim
    close = p.overlap >= PARAPHRASE_OVERLAP or sim >= cfg.duplicate_band or (sim >= cfg.conflict_band and p.overlap >= 0.3)
    # a number only one side states is news; so is an announced change the rules above could not place (kept, not
    # merged: storing both costs a duplicate at worst, merging could lose the new value)
    news = bool(old.values) != bool(new.values) or additive_marker(new.text) or p.change_marker
    return _if(not p.conflict and not news and old.negated == new.negated and old.context == new.context and close,
               {"overlap": round(p.overlap, 4)})


RULES: tuple[Rule, ...] = (
    # 1. qualifiers: facts that hold under different contexts do not replace each other
    Rule("coexist.contexts", "coexist",
         lambda p: _if(p.both_qualified and (p.same_attr or _related(p.old, p.new) or p.complementary), _contexts(p)),
         fires_on=(("On weekdays the user wakes up at 6:30.", "On weekends the user wakes up at 9:00."),
                   ("At work the user drinks black coffee.", "At home the user drinks green tea."),
                   ("工作日我6点半起床。", "周末我9点起床。")),
         leaves=(("工作日我6点半起床。", "我每周二晚上去健身房。"),
                 ("On weekdays the user wakes up at 6:30.", "The user wakes up at 6:30 on weekdays."))),
    Rule("coexist.refines", "coexist", _refines,
         fires_on=(("The user drinks black coffee.", "At work the user drinks green tea."),),
         leaves=(("The user drinks black coffee.", "The user drinks green tea."),)),
    # 2. same subject and attribute: compare value and polarity
    Rule("update.polarity", "update", _polarity,
         fires_on=(("The user is vegetarian.", "The user is no longer vegetarian."),
                   ("用户是素食者。", "用户不再吃素了。")),
         leaves=(("The user is vegetarian.", "The user does not eat meat."),)),
    Rule("duplicate.same_value", "duplicate",
         lambda p: _if(p.same_attr and _values_equal(p.old.value, p.new.value),
                       {"attribute": p.old.attribute, "value": _show(p.new.value)}),
         fires_on=(("The campaign budget is 500,000 yuan.", "The campaign budget is half a million yuan."),
                   ("The user lives in Hangzhou.", "Hangzhou is where the user lives.")),
         leaves=(("The campaign budget is 500,000 yuan.", "The campaign budget is 300,000 yuan."),)),
    Rule("update.value_changed", "update",
         lambda p: _if(p.same_attr and (p.old.single_valued or p.new.changed) and not additive_marker(p.new.text)
                       and not _other_aspect(p) and not _same_value_set(p), p.change()),
         fires_on=(("The campaign budget is 500,000 yuan.", "The campaign budget is 300,000 yuan."),
                   ("The user lives in Hangzhou.", "The user lives in Shanghai now.")),
         leaves=(("The user speaks Japanese.", "The user speaks Korean."),
                 ("The user takes vitamin D supplements.", "The user also takes magnesium before bed."),
                 ("The team uses GitHub for source control.", "The team uses Slack for communication."),
                 ("The frontend is built with React.", "The frontend is deployed on Vercel."),
                 ("The user's manager is Dana.", "My skip-level manager is Raj."),
                 ("用户的房租每月4500元。", "我每个月房租四千五。"))),
    Rule("new.multi_valued", "new", lambda p: _if(p.same_attr and not _same_value_set(p), p.change()),
         fires_on=(("The user speaks Japanese.", "The user speaks Korean."),),
         leaves=(("The user lives in Hangzhou.", "The user lives in Shanghai now."),)),
    # 3. something stopped, or restarted
    Rule("update.ceased", "update",
         lambda p: _if(p.new.ceased and _mentions(p.old, p.new.value) and not p.old.ceased, {"value": _show(p.new.value)}),
         fires_on=(("I drink three cups of coffee a day.", "I quit coffee last month."),
                   ("我每天喝三杯咖啡。", "我上个月戒咖啡了。")),
         leaves=(("I drink three cups of tea a day.", "I quit coffee last month."),)),
    Rule("update.resumed", "update",
         lambda p: _if(p.old.ceased and _mentions(p.new, p.old.value) and not p.new.ceased, {"value": _show(p.old.value)}),
         fires_on=(("I quit coffee last month.", "I drink coffee every morning."),),
         leaves=(("I quit coffee last month.", "I drink tea every morning."),)),
    # 3b. a change event ("switched from X to Y") whose old value is what the stored fact states
    Rule("update.change_event", "update", _change_event_rule,
         fires_on=(("The user edits code in VS Code.", "The user switched from VS Code to Neovim."),
                   ("我住在北京。", "我从北京搬到了上海。")),
         leaves=(("The user edits code in Vim.", "The user switched from VS Code to Neovim."),)),
    # 4. same frame with a word flipped or a value swapped, where no attribute was read
    Rule("update.departed", "update", _departed,
         fires_on=(("The user works at Google.", "I left Google and joined Stripe last month."),
                   ("The user's manager is Tom.", "Tom left, so Rachel is my manager now."),
                   ("用户的直属领导是王经理。", "王经理走了，我现在向陈总监汇报。"),
                   ("用户的车是大众朗逸。", "我把朗逸卖了，换了一辆比亚迪汉。")),
         leaves=(("The user works at Google.", "My sister left Google last year."),
                 ("The user previously worked at IBM.", "I left IBM in 2019."),
                 ("The user lives in London.", "I left London for a weekend trip to Paris."),
                 ("用户在阿里巴巴工作。", "我同事从腾讯离职了。"))),
    Rule("update.polarity_flip", "update",
         lambda p: _if(p.old.negated != p.new.negated and _same_content(p.old, p.new)),
         fires_on=(("用户喜欢跑步。", "用户不再喜欢跑步了。"),),
         leaves=(("用户喜欢跑步。", "用户喜欢跑步。"),)),
    Rule("update.value_swapped", "update", _swapped,
         fires_on=(("会议室的投影仪坏了。", "会议室的投影仪现在修好了。"),),
         leaves=(("会议室的投影仪坏了。", "会议室的投影仪坏了。"),)),
    # 5. a second look where no attribute reading settles it: what the new statement announces, adds or is
    #    qualified by, and whether the values agree (memory.write.lexicon: CHANGE_EVENT_*, ADDITIVE_*, QUALIFIERS_*)
    Rule("new.adds_value", "new", _adds,
         fires_on=(("The user is allergic to peanuts.", "The user is also lactose intolerant."),
                   ("用户养了一只猫。", "用户另外还养了两条金鱼。")),
         leaves=(("The user takes vitamin D supplements.", "The user takes vitamin D every morning."),)),
    Rule("coexist.conditioned", "coexist", _conditioned,
         fires_on=(("The thermostat is set to 20°C during the day.", "At night we turn the heating down to 17 degrees."),
                   ("The user charges corporate clients $120 an hour.", "For nonprofits my rate is $80 an hour."),
                   ("用户白天把空调设在26度。", "晚上睡觉时我们把空调调到28度。")),
         leaves=(("The vendor meeting is on Tuesday.", "The vendor meeting got rescheduled to Wednesday."),
                 ("On weekdays the user wakes up at 6:30.", "On weekdays I now wake up at 7."))),
    Rule("update.announced", "update", _announced,
         fires_on=(("The vendor meeting is on Tuesday.", "The vendor meeting got rescheduled to Wednesday."),
                   ("用户体重75公斤。", "我现在瘦到68公斤了。")),
         leaves=(("The vendor meeting is on Tuesday.", "The user got a new bike."),
                 ("The user previously worked at IBM.", "The user currently works at Microsoft."))),
    Rule("coexist.qualified", "coexist", _qualified,
         fires_on=(("The production database runs PostgreSQL 15.", "The staging database runs PostgreSQL 14."),
                   ("用户在手机上用今日头条看新闻。", "在电脑上我一般用RSS阅读器看资讯。")),
         leaves=(("The production database runs PostgreSQL 15.", "The production database uses PostgreSQL 15."),)),
    Rule("duplicate.same_specifics", "duplicate", _same_specifics,
         fires_on=(("The user lives in Lisbon.", "Home for me is Lisbon."),
                   ("The user works as a nurse at St. Mary's Hospital.", "St. Mary's Hospital employs the user as a nurse."),
                   ("用户习惯用VS Code写代码。", "我写代码一般用VS Code。")),
         leaves=(("The user is learning Spanish.", "I gave up on learning Spanish."),
                 ("My sister lives in Lisbon.", "My brother lives in Lisbon."),
                 ("The user lives in Lisbon.", "The user no longer lives in Lisbon."))),
    Rule("duplicate.same_values", "duplicate", _same_values,
         fires_on=(("The user's cat, Biscuit, is 4 years old.", "My cat is four."),),
         leaves=(("The client demo is on Thursday at 2 p.m.", "The client demo is on Thursday at 4 p.m."),)),
    Rule("duplicate.paraphrase", "duplicate",
         lambda p: _if(_different_specifics(p) and not p.conflict and p.overlap >= 0.6 and p.sim >= p.cfg.duplicate_band
                       and (not p.chinese or p.surface_overlap >= PARAPHRASE_OVERLAP)),  # characters alone say little
         fires_on=(("用户喜欢爵士乐。", "用户爱听爵士乐。"),),
         leaves=(("The user lives in Hangzhou.", "The user works as a nurse."),)),
    Rule("duplicate.same_content", "duplicate", _same_content_rule,
         fires_on=(("The user works as a nurse at the city hospital.", "The city hospital employs the user as a nurse."),
                   ("这个需求的负责人是小王。", "小王负责跟进这个需求。")),
         leaves=(("用户的儿子叫乐乐。", "用户的儿子会弹钢琴。"), ("The user loves dark mode.", "The user hates dark mode."),
                 ("My sister lives in Manchester.", "My brother lives in Manchester."))),
    Rule("new.other_contexts", "new", lambda p: _if(p.both_qualified, _contexts(p)),
         fires_on=(("工作日我6点半起床。", "我每周二晚上去健身房。"),),
         leaves=(("At work the user drinks black coffee.", "At home the user drinks green tea."),)),
    # 6. restatement in other words
    Rule("new.other_attributes", "new",
         lambda p: _if(_different_specifics(p), {"old_attribute": p.old.attribute, "new_attribute": p.new.attribute}),
         fires_on=(("The user lives in Hangzhou.", "The user works as a nurse."),
                   ("I am allergic to peanuts.", "My favourite fruit is mango.")),
         leaves=(("The user lives in Hangzhou.", "Hangzhou is where the user lives."),)),
    Rule("duplicate.restatement", "duplicate", _restatement,
         fires_on=(("用户养了一只猫。", "用户家里有只猫。"),),
         leaves=(("用户今年29岁。", "用户有两个姐姐。"),)),
    Rule("new.values_differ", "new", lambda p: _if(p.conflict),
         fires_on=(("用户今年29岁。", "用户有两个姐姐。"),),
         leaves=(("The team has 15 members.", "The team meets every Monday."),)),
    Rule("new.unrelated", "new", lambda p: {},
         fires_on=(("The team has 15 members.", "The team meets every Monday."),)),
)
"""The rules, in order: the first that applies decides (both languages; the readers differ, the rules do not)."""


def _judge(old: Reading, new: Reading, sim: float, cfg: MemoryConfig) -> tuple[Verdict, str, dict[str, Any]]:
    """(verdict, reason code, its parameters): the first rule of RULES that applies."""
    pair = Pair(old, new, sim, cfg)
    for rule in RULES:
        params = rule.applies(pair)
        if params is not None:
            return rule.verdict, rule.id, params
    raise AssertionError("new.unrelated applies to every pair")


def fired_rule(existing: str, incoming: str, similarity: float, *, config: MemoryConfig | None = None) -> str:
    """The id of the rule that decides a pair (what a decision's reason code names)."""
    return _judge(read_statement(existing), read_statement(incoming), similarity, config or DEFAULT_CONFIG)[1]


# --- helpers ------------------------------------------------------------------------------------

WEAK_ATTRIBUTES = frozenset({"", "state", "verb:be", "verb:have", "verb:do", "verb:get", "verb:make"})
"""Generic readings too vague to prove two facts are about different things."""


_CHANGE_EVENT_EN = re.compile(
    r"\b(?:switch|switched|move|moved|change|changed|went|go|migrate|migrated|upgrade|upgraded|shift|shifted|"
    r"transfer|transferred|convert|converted)\s+(?:over\s+|it\s+|(?:my|our|the)\s+\w+\s+)?from\s+(.+?)\s+(?:to|for)\s+"
    r"(.+?)[\s.!]*$", re.IGNORECASE)
_CHANGE_EVENT_ZH = re.compile(r"从(.+?)(?:换成|换到|改成|改为|改用|转到|搬到|调到|变成|升级到)了?(.+?)[。！\s]*$")
_EVENT_EN = re.compile(r"\b(?:visited|visit|went|was|were|did|met|saw|travell?ed|trip|holiday|vacation|last (?:year|month|week))\b",
                       re.IGNORECASE)
"""A stored fact about a past event ("I visited Paris") is not a current value a change event can retire."""
_THIRD_PARTY = re.compile(
    r"\b(?:my|our|his|her|their)\s+(?:sister|brother|mother|mom|mum|father|dad|parents?|wife|husband|partner|friend|"
    r"colleague|boss|manager|son|daughter|kids?|children|neighbou?r|girlfriend|boyfriend)s?\b|\b(?:he|she|they)\b|"
    r"他|她|我(?:的)?(?:妹妹|姐姐|哥哥|弟弟|妈妈|母亲|爸爸|父亲|父母|妻子|老婆|丈夫|老公|朋友|同事|老板|经理|儿子|女儿|孩子|邻居)",
    re.IGNORECASE)
"""A stored fact about someone else ("my sister lives in Paris") is not the user's value to retire."""


_PAST = re.compile(r"\b(?:previously|formerly|used to|in the past)\b|以前|曾经|之前|过去", re.IGNORECASE)
"""A stored fact already said to be past ("previously worked at IBM", "以前在华为工作过") has nothing left to retire."""
_AWAY = re.compile(r"\b(?:trip|holiday|vacation|weekend|visit|for (?:a|the) (?:day|week|month|few days))\b|出差|旅游|旅行|度假|"
                   r"几天", re.IGNORECASE)
"""Left for a while ("I left London for a weekend trip", "我离开北京去出差几天"): nothing the user had is gone."""
_NOT_GONE = frozenset({"我", "我们", "用户", "他", "她", "他们", "i", "we"})


@text_cache(maxsize=8192)
def _departure(text: str) -> str | None:
    """What a statement says is gone (left, dropped, sold, 走了, 离职), or None."""
    for pattern in language_of(text).departures:
        m = pattern.search(text)
        if m and m.group(1).strip().lower() not in _NOT_GONE:
            return m.group(1).strip()
    return None


@text_cache(maxsize=8192)
def _relations(text: str) -> frozenset[str]:
    """The other people a statement is about ("my sister" -> {"sister"}; "他" -> {"他"})."""
    mine = re.sub(r"\bthe user's\b", "my", text, flags=re.IGNORECASE)
    return frozenset(m.group(0).split()[-1].lower().rstrip("s") for m in _THIRD_PARTY.finditer(mine))


@text_cache(maxsize=8192)
def _change_event(text: str) -> tuple[str, str] | None:
    """(old value, new value) of a statement announcing a change "from X to Y" ("I switched from VS Code to
    Neovim", "我从北京搬到了上海"); None for any other statement."""
    found = _CHANGE_EVENT_ZH.search(text) or _CHANGE_EVENT_EN.search(text)
    return (found.group(1).strip(), found.group(2).strip()) if found else None


def _specific(r: Reading) -> bool:
    return r.attribute not in WEAK_ATTRIBUTES


def _subjects_match(a: Reading, b: Reading) -> bool:
    if a.subject == b.subject:
        return True
    if a.language == b.language == "zh" and "user" not in (a.subject, b.subject):
        # "这次推广活动" and "推广": Chinese names a thing with or without its determiners and class noun
        sa, sb = _ZH_DETERMINERS.sub("", a.subject), _ZH_DETERMINERS.sub("", b.subject)
        if sa and sb and (sa in sb or sb in sa):
            return True
    return a.subject in PLACEHOLDER_SUBJECTS - {"user"} or b.subject in PLACEHOLDER_SUBJECTS - {"user"}


_ZH_DETERMINERS = re.compile(r"^(?:我们的?|咱们的?|我的|这次的?|这个|本次的?|今年的?|那次的?)+")


def _norm_value(v: str) -> str:
    v = re.sub(r"\b(?:a|an|the|some|very|really|yuan|rmb|dollars?|usd|euros?|eur|pounds?|gbp)\b|[$€£]|块钱|块|元|人民币",
               " ", v.lower())
    return re.sub(r"[\s的了]+", "", v)


def _values_equal(a: str, b: str) -> bool:
    na, nb = _norm_value(a), _norm_value(b)
    if na == nb:
        return True
    nums_a, nums_b = set(re.findall(r"[ntd]\d+", na)), set(re.findall(r"[ntd]\d+", nb))
    return bool(nums_a) and nums_a == nums_b and re.sub(r"[ntd]\d+", "", na) == re.sub(r"[ntd]\d+", "", nb)


def _value_conflict(a: Reading, b: Reading) -> bool:
    return bool(a.values) and bool(b.values) and a.values != b.values


def _mentions(reading: Reading, value: str) -> bool:
    if not value:
        return False
    if reading.language == "zh":
        core = "".join(reading.tokens)
        return _norm_value(value) in core or set(value) <= set(reading.tokens)
    words = re.findall(r"[a-z0-9]+", value)
    long_words = [w for w in words if len(w) > 2]
    if not long_words:
        return False
    short = [w for w in words if len(w) == 2 and w not in _FUNCTION_WORDS_EN]  # "vs" of "VS Code" counts too
    text = reading.text.lower()
    return all(any(t.startswith(w[:4]) for t in reading.tokens) for w in long_words) and \
        all(re.search(rf"\b{w}\b", text) for w in short)


_FUNCTION_WORDS_EN = frozenset("an as at be by do go he if in is it me my no of on or so to up us we".split())


def _content(r: Reading) -> list[str]:
    return [t for t in r.tokens if t not in _CHANGE_TOKENS]


_CHANGE_TOKENS = frozenset(
    "now new move moved grown grow cut raised reduced increased decreased updated become became switch switched "
    "change changed push pushed postpone extended 现 在 新 换 成 改 为 调 整 变 推 迟 到 扩 充 搬 转 行 已 经".split()
)


def _overlap(a: Reading, b: Reading) -> float:
    ta, tb = set(_content(a)), set(_content(b))
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / min(len(ta), len(tb))


def _same_content(a: Reading, b: Reading) -> bool:
    ta, tb = _content(a), _content(b)
    return bool(ta) and sorted(ta) == sorted(tb)


def _substitution(a: Reading, b: Reading) -> tuple[str, str] | None:
    """(old, new) when the two token sequences differ in exactly one place and agree on at least half of the longer."""
    ta, tb = _content(a), _content(b)
    if not ta or not tb or len(ta) + len(tb) > MAX_SUBSTITUTION_TOKENS:
        return None
    # One replace between equal runs: those runs are a common prefix and a common suffix, so the tokens they share
    # are at most the longest common prefix plus suffix. Too few of those and no alignment can qualify: skip difflib.
    short = min(len(ta), len(tb))
    head = next((i for i in range(short) if ta[i] != tb[i]), short)
    tail = next((i for i in range(short - head) if ta[-1 - i] != tb[-1 - i]), short - head)
    if head + tail < 1 or head + tail < 0.5 * max(len(ta), len(tb)):
        return None
    ops = [op for op in difflib.SequenceMatcher(a=ta, b=tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    shared = len(ta) - (i2 - i1)
    if shared < 1 or shared < 0.5 * max(len(ta), len(tb)):
        return None
    sep = "" if a.language == "zh" else " "
    return sep.join(ta[i1:i2]), sep.join(tb[j1:j2])


def _related(a: Reading, b: Reading) -> bool:
    """Do two differently-qualified facts talk about the same thing (so they coexist rather than being unrelated)?"""
    if a.attribute and a.attribute == b.attribute:
        return True
    if set(_content(a)) & set(_content(b)):
        return True
    return bool(set(a.domains) & set(b.domains))


# --- the questions the rules ask, as the learned judge's features ask them too (memory.write.features) -------------

AWAY, PAST, THIRD_PARTY = _AWAY, _PAST, _THIRD_PARTY
attitude, change_event, departure, mentions, relations = _attitude, _change_event, _departure, _mentions, _relations
same_content, same_value_set, specific, subjects_match, values_equal = (_same_content, _same_value_set, _specific,
                                                                      _subjects_match, _values_equal)
