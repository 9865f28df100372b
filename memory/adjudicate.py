"""Write-time adjudication: is an incoming fact a duplicate of, an update to, or independent of a stored one?

Two rules side by side:

* :func:`plain_rule` is the A6 article's two cosine bands: ``>= duplicate_band`` is a
  duplicate; ``[conflict_band, duplicate_band)`` is a conflict, which the plain rule
  resolves by retiring the old fact (``update``); below ``conflict_band`` it is ``new``.
* :func:`judge` is the governed rule. It reads both statements
  (:func:`memory.reading.read_statement`) and decides on what they *say*; the cosine
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
from typing import Any, Literal, Sequence

from .config import MemoryConfig
from .reading import Reading, read_statement

Verdict = Literal["duplicate", "update", "coexist", "new"]
VERDICTS: tuple[str, ...] = ("duplicate", "update", "coexist", "new")
PRIORITY = {"duplicate": 0, "update": 1, "coexist": 2, "new": 3}
"""When a fact meets several candidates, the strongest relation wins (a duplicate over an update, ...)."""
Reasons = dict[str, str]
"""A decision's reason in the lab's two languages: ``{"en": ..., "zh": ...}``."""

PLACEHOLDER_SUBJECTS = frozenset({"user", "everything", "it", "this", "that", "all", "all work", "所有工作", "一切"})
PARAPHRASE_OVERLAP = 0.5
"""Share of the shorter statement's content tokens the other must contain to count as a restatement."""


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
    decision: str
    """The governed decision: duplicate, update, coexist or new."""
    reason: str
    """Why, in a sentence a person can read (English)."""
    reason_zh: str = ""
    """The same reason in Chinese (the lab's other language)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "fact": self.fact,
            "candidate": self.candidate.to_dict() if self.candidate else None,
            "similarity": None if self.similarity is None else round(self.similarity, 6),
            "plain_rule": self.plain_rule,
            "decision": self.decision,
            "reason": self.reason,
            "reason_zh": self.reason_zh,
        }


def plain_rule(similarity: float | None, config: MemoryConfig | None = None) -> str:
    """The A6 two-band rule: duplicate / update (a conflict retires the old fact) / new."""
    cfg = config or MemoryConfig()
    if similarity is None or similarity < cfg.conflict_band:
        return "new"
    return "duplicate" if similarity >= cfg.duplicate_band else "update"


def adjudicate(
    fact: str, candidates: Sequence[tuple[CandidateRef, float]], *, config: MemoryConfig | None = None
) -> Decision:
    """Judge a fact against stored candidates (most similar first) and keep the strongest relation.

    ``plain_rule`` is what the two bands say about the most similar candidate, as the
    A6 gateway would act on it.
    """
    cfg = config or MemoryConfig()
    if not candidates:
        return Decision(fact, None, None, "new", "new", "Nothing comparable is stored for this user and category.",
                        "这个用户在这一类别下没有可比较的已存事实。")
    top_ref, top_sim = candidates[0]
    best: tuple[int, float, CandidateRef, str, Reasons] | None = None
    for ref, sim in candidates:
        verdict, reasons = judge_reasons(ref.text, fact, sim, config=cfg)
        key = (PRIORITY[verdict], -sim)
        if best is None or key < (best[0], -best[1]):
            best = (PRIORITY[verdict], sim, ref, verdict, reasons)
    assert best is not None
    _, sim, ref, verdict, reasons = best
    if verdict == "new":  # report against the nearest candidate
        ref, sim = top_ref, top_sim
    return Decision(fact, ref, sim, plain_rule(top_sim, cfg), verdict, reasons["en"], reasons["zh"])


def judge(existing: str | Reading, incoming: str | Reading, similarity: float, *, config: MemoryConfig | None = None
          ) -> tuple[str, str]:
    """The governed decision for one (stored, incoming) pair and its reason (English)."""
    verdict, reasons = judge_reasons(existing, incoming, similarity, config=config)
    return verdict, reasons["en"]


def judge_reasons(existing: str | Reading, incoming: str | Reading, similarity: float, *,
                  config: MemoryConfig | None = None) -> tuple[str, Reasons]:
    """:func:`judge` with the reason in English and Chinese (:data:`Reasons`)."""
    cfg = config or MemoryConfig()
    old = existing if isinstance(existing, Reading) else read_statement(existing)
    new = incoming if isinstance(incoming, Reading) else read_statement(incoming)
    verdict, reasons = _judge(old, new, similarity, cfg)
    band = plain_rule(similarity, cfg)
    if band != verdict:
        reasons = {"en": reasons["en"] + f" (The plain rule, at similarity {similarity:.2f}, would say {band}.)",
                   "zh": reasons["zh"] + f"（朴素规则在相似度 {similarity:.2f} 时会判为 {band}。）"}
    return verdict, reasons


def _r(en: str, zh: str) -> Reasons:
    return {"en": en, "zh": zh}


def _judge(old: Reading, new: Reading, sim: float, cfg: MemoryConfig) -> tuple[str, Reasons]:
    same_attr = bool(old.attribute) and old.attribute == new.attribute and _subjects_match(old, new)

    # 1. qualifiers: facts that hold under different contexts do not replace each other
    if old.context != new.context:
        if old.context and new.context:
            pair = f"{_show_ctx(old)} vs {_show_ctx(new)}"
            if same_attr or _related(old, new):
                return "coexist", _r(f"Both hold, each in its own context ({pair}); both are kept with their context tags.",
                                     f"两条都成立，各有其语境（{pair}）；两条都保留，并带上语境标签。")
            return "new", _r(f"Different contexts ({pair}) and nothing else in common: an unrelated fact.",
                             f"语境不同（{pair}），也没有其他共同点：这是一条无关的事实。")
        if same_attr and not _values_equal(old.value, new.value) or (
                not same_attr and not old.attribute and _substitution(old, new)):
            general, specific = (old, new) if new.context else (new, old)
            return "coexist", _r(f"One fact is qualified ({_show_ctx(specific)}) and the other is general, so the "
                                 "qualified one refines rather than replaces it; both are kept.",
                                 f"一条带限定语境（{_show_ctx(specific)}），另一条是一般情况：限定的那条是细化而不是取代；"
                                 "两条都保留。")

    # 2. same subject and attribute: compare value and polarity
    if same_attr:
        label, label_zh = _show_attr(old.attribute), _show_attr(old.attribute, "zh")
        if old.negated != new.negated:
            flip = f"{_polarity(old)} -> {_polarity(new)}"
            flip_zh = f"{_polarity(old, 'zh')} -> {_polarity(new, 'zh')}"
            return "update", _r(f"Same {label}, but the new fact {'denies' if new.negated else 'affirms'} it "
                                f"({flip}): the old fact no longer holds.",
                                f"同一{label_zh}，但新事实{'否定' if new.negated else '肯定'}了它（{flip_zh}）：旧事实不再成立。")
        if _values_equal(old.value, new.value):
            return "duplicate", _r(f"Same {label} with the same value ({_show(new.value)}): a restatement, so the "
                                   "stored fact is reinforced and no new vector is written.",
                                   f"同一{label_zh}、同一取值（{_show(new.value)}）：是复述，强化已存事实，不写入新向量。")
        if old.single_valued or new.changed:
            change = f"{_show(old.value)} -> {_show(new.value)}"
            return "update", _r(f"Same {label} with a new value ({change}): the old fact is retired and superseded "
                                "by the new one.",
                                f"同一{label_zh}有了新取值（{change}）：旧事实被停用，由新事实取代。")
        values = f"{_show(old.value)}, {_show(new.value)}"
        return "new", _r(f"{label.capitalize()} can hold several values ({values}); the new one is added "
                         "beside the old.",
                         f"{label_zh}可以有多个取值（{values}）；新的与旧的并存。")

    # 3. something stopped, or restarted
    if new.ceased and _mentions(old, new.value) and not old.ceased:
        return "update", _r(f"The new fact says '{_show(new.value)}' ended, which the stored fact describes as current.",
                            f"新事实说“{_show(new.value)}”已经结束，而已存事实把它描述为现状。")
    if old.ceased and _mentions(new, old.value) and not new.ceased:
        return "update", _r(f"The stored fact says '{_show(old.value)}' ended; the new fact says it holds again.",
                            f"已存事实说“{_show(old.value)}”已经结束；新事实说它又成立了。")

    # 3b. a change event ("switched from X to Y") whose old value is what the stored fact states
    moved = _change_event(new.text)
    if moved and not old.negated and old.subject == new.subject and not _EVENT_EN.search(old.text) \
            and not _THIRD_PARTY.search(old.text) and not _THIRD_PARTY.search(new.text) \
            and _mentions(old, moved[0].lower()) \
            and not _mentions(old, moved[1].lower()):
        a, b = moved
        return "update", _r(f"The new fact is a change from '{a}' to '{b}', and the stored fact states '{a}': "
                            "it is retired and superseded.",
                            f"新事实说从“{a}”改成了“{b}”，而已存事实说的正是“{a}”：旧事实被停用并被取代。")

    # 4. same frame with a word flipped or a value swapped, where no attribute was read
    if old.negated != new.negated and _same_content(old, new):
        return "update", _r("The same statement with its polarity flipped: the old fact no longer holds.",
                            "同一陈述，肯定与否定翻转：旧事实不再成立。")
    subst = None if old.attribute and new.attribute else _substitution(old, new)
    if subst:
        a, b = subst
        if old.single_valued and new.single_valued or new.changed:
            return "update", _r(f"The same statement with one value swapped ('{_show(a)}' -> '{_show(b)}'): "
                                "the old fact is retired and superseded.",
                                f"同一陈述，换了一个取值（“{_show(a)}” -> “{_show(b)}”）：旧事实被停用并被取代。")

    # 5. restatement in other words
    overlap = _overlap(old, new)
    conflict = _value_conflict(old, new)
    if _specific(old) and _specific(new) and old.attribute != new.attribute:
        if not conflict and overlap >= 0.6 and sim >= cfg.duplicate_band:
            return "duplicate", _r("Different wording of the same content, and the vectors agree.",
                                   "同一内容的不同说法，向量也一致。")
        pair, pair_zh = (f"{_show_attr(old.attribute)} vs {_show_attr(new.attribute)}",
                         f"{_show_attr(old.attribute, 'zh')} vs {_show_attr(new.attribute, 'zh')}")
        return "new", _r(f"Different attributes ({pair}): an independent fact.",
                         f"属性不同（{pair_zh}）：一条独立的事实。")
    if not conflict and old.negated == new.negated and old.context == new.context:
        if overlap >= PARAPHRASE_OVERLAP or sim >= cfg.duplicate_band or (sim >= cfg.conflict_band and overlap >= 0.3):
            return "duplicate", _r(f"A restatement: {overlap:.0%} of the content words are shared and no value "
                                   "differs; the stored fact is reinforced.",
                                   f"复述：{overlap:.0%} 的内容词相同，没有取值不同；强化已存事实。")
    if conflict:
        return "new", _r("The values differ but no shared attribute was found, so nothing is retired: "
                         "the fact is stored beside the old one.",
                         "取值不同，但没有找到共同属性，因此不停用任何事实：新事实与旧事实并存。")
    return "new", _r("No shared attribute, value or wording: an independent fact.",
                     "没有共同的属性、取值或措辞：一条独立的事实。")


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
    return a.subject in PLACEHOLDER_SUBJECTS - {"user"} or b.subject in PLACEHOLDER_SUBJECTS - {"user"}


def _norm_value(v: str) -> str:
    v = re.sub(r"\b(?:a|an|the|some|very|really)\b", " ", v.lower())
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
    words = [w for w in re.findall(r"[a-z0-9]+", value) if len(w) > 2]
    return bool(words) and all(any(t.startswith(w[:4]) for t in reading.tokens) for w in words)


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
    if not ta or not tb:
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


def _show(value: str) -> str:
    def one(m: re.Match) -> str:
        kind, digits = m.group(1), m.group(2)
        if kind == "t":
            return f"{digits[:2]}:{digits[2:]}"
        if kind == "d":
            return f"{digits[:2]}-{digits[2:]}"
        return _grouped(digits)
    return re.sub(r"\b([ntd])(\d+)\b", one, value) if value else "(none)"


def _grouped(digits: str) -> str:
    """'1500000' -> '1,500,000' for any number of digits (no int: ints stop converting past 4,300 digits)."""
    digits = digits.lstrip("0") or "0"
    head = len(digits) % 3 or 3
    return ",".join([digits[:head]] + [digits[i : i + 3] for i in range(head, len(digits), 3)])


_KIND_ZH = {"device": "设备", "habit": "习惯", "count": "数量", "name": "名称"}


def _show_attr(attribute: str, lang: str = "en") -> str:
    kind, _, rest = attribute.partition(":")
    zh = lang == "zh"
    if kind == "verb":
        return f"“{rest}”陈述" if zh else f"'{rest}' statement"
    if kind in ("prop", "device", "habit", "count", "name"):
        if kind == "prop":
            return f"属性“{rest}”" if zh else rest
        return f"“{rest}”的{_KIND_ZH[kind]}" if zh else f"{kind} of {rest}"
    if kind == "prefer":
        options = rest.split("|")
        return "与".join(f"“{o}”" for o in options) + "之间的偏好" if zh else "preference between " + " and ".join(options)
    return f"属性“{attribute}”" if zh else attribute


def _show_ctx(r: Reading) -> str:
    return f"'{r.context}'"


def _polarity(r: Reading, lang: str = "en") -> str:
    negation = ("非" if lang == "zh" else "not ") if r.negated else ""
    return negation + _show(r.value or r.attribute)
