"""Atomic fact extraction: one chat turn -> self-contained facts with a category, tags and a reading.

Deterministic and offline (no model). A turn is split into sentences and clauses;
fragments ("the black one", "黑色那个") are joined to the clause they belong to,
leading qualifiers ("When writing Go, ...", "写Go时，...") to the clause they qualify, and a
clause that needs the one before it for its subject or its thing stays joined to it (see
:func:`continues`: "got a new number, it ends in 9032", "gave up on spanish, deleted duolingo",
"用户从腾讯离职了，去了字节跳动"), so no fact loses what it is about; pleasantries and questions are
dropped. Each clause is rewritten to stand alone (first person -> "the user" / "用户", a sentence
that opens with its verb gets the speaker as its subject, "one" -> the product being discussed) and
read by :func:`memory.write.reading.read_statement` for subject, attribute, value and context.

Extraction takes time linear in the text and is bounded per message:

* only the first ``read_chars`` characters (default DEFAULT_READ_CHARS, cut at the last
  sentence break before the limit when there is one) are read into facts;
* a clause longer than ``clause_chars`` (default MAX_CLAUSE_CHARS: no sentence or clause
  break for that long) is not an atomic fact and is not read.

What is not read is not lost: :func:`extract` reports it (:class:`Extraction`), and the write
path (:class:`memory.write.ingest.Ingestor`) then keeps the whole turn as a raw record and logs a
``bounded`` entry in the decision log.

>>> [f.category for f in extract_facts("I live in Hangzhou. ok thanks")]
['user_profile']
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from memory.write.lang import en, language_of
from memory.write.lexicon import ASIDES_EN, FILLER_EN, FILLER_ZH, PRODUCTS_EN, PRODUCTS_ZH, domains_of, filler_key
from memory.write.reading import Reading, read_statement
from memory.core.errors import InputError
from memory.core.schema import Category, validate_text

DEFAULT_MAX_CHARS = 100_000
"""Longest text accepted at all (longer is an InputError)."""
DEFAULT_READ_CHARS = 4_000
"""Characters of one turn read into facts; the rest of the turn is kept raw, not extracted."""
MAX_CLAUSE_CHARS = 400
"""A clause longer than this (no sentence or clause break) is not read: no atomic fact is that long."""
_SENTENCE_END = re.compile(r"[。！？；;!?\n]|\.(?=\s|$)")

_PROFILE_ATTRS = ("residence", "job", "diet", "allergy", "language", "name:", "age", "marital status", "employer",
                  "manager", "salary")
_RULE_ATTRS = ("budget", "deadline")
_PREFERENCE_ATTRS = ("favourite", "prefer:", "habit:", "cessation", "verb:like", "verb:love", "verb:prefer",
                     "verb:hate", "verb:want", "verb:enjoy", "verb:喜欢", "verb:讨厌", "verb:想要", "verb:偏好", "verb:爱")

_RULE_WORDS = re.compile(
    r"\b(?:must|should|have to|has to|need to|needs to|at least|at most|no more than|no less than|more than|less than|"
    r"budget|deadline|required?|requirement|limit|policy|rule|up to)\b|必须|一定要|至少|最多|不超过|不低于|上限|下限|"
    r"预算|截止|要求|规定|要超过|要在|需要|不能|不得|务必")
_COMPLAINT_WORDS = re.compile(
    r"\b(?:too|tight|annoying|disappointed|complain|complains|unhappy|uncomfortable|broken|needs charging|"
    r"has to be charged|have to charge|only lasts|unlike the user's current)\b|不满|太|紧|失望|难受|不舒服|就得充|烦|坏了|"
    r"用户现有的")
_PREFERENCE_WORDS = re.compile(
    r"\b(?:want|wants|wanted|would like|like|likes|love|loves|prefer|prefers|favourite|favorite|hate|hates|dislike|"
    r"dislikes|enjoy|enjoys|wish|hope)\b|想|希望|喜欢|偏好|讨厌|爱")
_EPISODE_WORDS = re.compile(
    r"\b(?:yesterday|last (?:week|month|year|night)|ago|bought|ordered|purchased|went|visited|met|received|returned|"
    r"booked|paid|today|this morning)\b|上个?月|上周|昨天|前天|去年|刚才|买了|下单|订了|去了|收到|退了|今天")
_PROFILE_WORDS = re.compile(r"\b(?:is an?|am an?|name is|years old|lives?|works? as|born|married|single)\b|"
                            r"是一名|名叫|岁|住在|职业|结婚|单身")

_QUESTION = re.compile(r"[?？]\s*$|[吗呢][。.!！]?\s*$")
_SUBORDINATORS_EN = re.compile(r"^(?:when|while|whenever|if|given|during|as for|before|after|unless|although|because|"
                               r"since|once)\b", re.I)
_PREPOSITIONS_EN = re.compile(r"^(?:for|on|at|in)\b", re.I)
_QUALIFIER_ZH = re.compile(r"(?:时|的时候|的话|以后|之后|之前)$|^(?:比起|如果|因为|虽然|对于|关于|当)")
_LEADING_CONJ_EN = re.compile(r"^(?:and|but|also|so|then|plus|oh|and also|and then)\s+", re.I)
_LEADING_CONJ_ZH = re.compile(r"^(?:而且|并且|但是|不过|然后|还有|另外|同时|所以)")
_VERBISH_EN = re.compile(r"\b(?:is|am|are|was|were|be|been|has|have|had|do|does|did|will|would|can|could|should|must|"
                         r"need|needs|want|wants|like|likes|prefer|prefers|live|lives|work|works|use|uses|bought|buy|"
                         r"get|got|go|goes|went|make|makes|take|takes|love|loves|hate|hates|last|lasts)\b|\w+(?:ed|s)\b")
_VERBISH_ZH = re.compile(r"[是有在买想要用喜欢住做吃喝去给带穿戴玩看听学写开骑坐租养遛充换搬戒紧松]")

_POINTS_BACK_EN = re.compile(r"^(?:it|it's|its|they|they're|them|he|he's|she|she's|his|her|their|(?:this|that)(?!\s+(?:year|month|"
                             r"week|weekend|morning|afternoon|evening|night|time|summer|winter|spring|autumn|fall)\b))\b|"
                             r"\b(?:it|them)$", re.I)
"""A clause about the thing or person of the clause before it: it opens with a pronoun ("it ends in 9032", "he's
allergic", "that was last year") or ends with one ("my knee can't take it")."""
_POINTS_BACK_ZH = re.compile(r"^(?:它|他|她|这(?![次周天里儿边会])|那(?![次周天里儿边时会]))|[它他她]$")
_OPENS_WITH_VERB_ZH = re.compile(
    r"^(?:一\w{1,2}就|全|也|还|又|再|就|才|都|已经|已|刚|正在|在|不|没|去|来|改|换|搬|辞|戒|卖|退|想|要|打算|准备|希望|喜欢|讨厌|爱|说|觉得|"
    r"感觉|开始|继续|加|买|养|学|报|从|把|被|让|每天|经常|一直|现在|目前|如今|后来|结果|于是|很|挺|特别|非常|太|有点|比较|"
    r"[\d一二两三四五六七八九十]+(?:月|日|号|点|天|年|个|次|岁|斤|公斤))")
"""A Chinese clause with no subject of its own: it opens with an adverb, a verb or a date ("去了字节跳动", "现在住上海",
"不加糖也不加奶", "8日退房")."""


@dataclass(frozen=True)
class Fact:
    """One atomic, self-contained fact distilled from a turn."""

    text: str
    """The fact as a sentence that stands alone ("The user lives in Hangzhou.", "用户住在杭州。")."""
    category: Category
    """user_profile, preference, episodic_fact or business_rule."""
    entities: tuple[str, ...] = ()
    """Named things, products and amounts in the fact ("smartwatch", "1500", "iPhone 12")."""
    domain_tags: tuple[str, ...] = ()
    """Domains the fact belongs to ("watch", "budget", "residence", ...)."""
    subject: str = "user"
    """Who or what it is about."""
    attribute: str = ""
    """Canonical attribute ("residence", "budget", "verb:prefer", ...); '' when the reader found none."""
    value: str = ""
    """Normalised value of the attribute."""
    context: str = ""
    """The qualifier under which it holds ("weekend", "writing go", "手表"); '' when unqualified."""
    negated: bool = False
    """The fact denies its attribute ("no longer vegetarian")."""
    language: str = "en"
    """``en`` or ``zh``."""
    said: str = field(default="", compare=False, repr=False)
    """The clause as the speaker said it, before :attr:`text` was rewritten to stand alone ("I pay for Netflix every
    month"); '' for a fact taken as it is. The write path's judge reads it, as it reads a statement on the pair path,
    so the same two statements get one verdict on both paths (issue 48). Not part of the fact's record."""

    @property
    def judged(self) -> str:
        """The statement the write path's judge reads: the clause as said, else the fact's text."""
        return self.said or self.text

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["said"]
        data["entities"] = list(self.entities)
        data["domain_tags"] = list(self.domain_tags)
        return data


@dataclass(frozen=True)
class Extraction:
    """The facts of a turn and how much of the turn they were read from."""

    facts: list[Fact]
    """Atomic facts, in order."""
    read_chars: int
    """Characters of the turn read into facts (the rest was not extracted)."""
    total_chars: int
    """Length of the turn."""
    long_clauses: int = 0
    """Clauses within the read part that were too long to be a fact (not read)."""

    @property
    def complete(self) -> bool:
        """Every part of the turn was read (nothing cut, no clause skipped)."""
        return self.read_chars >= self.total_chars and not self.long_clauses


def extract(
    text: Any, *, max_chars: int = DEFAULT_MAX_CHARS, read_chars: int = DEFAULT_READ_CHARS,
    clause_chars: int = MAX_CLAUSE_CHARS,
) -> Extraction:
    """Split a turn into atomic facts, in time linear in the text; fillers and questions give none.

    Reads at most ``read_chars`` characters (see :func:`read_limit`) and no clause longer than
    ``clause_chars``; the result says what was not read. Raises InputError when ``text`` is not
    text, is blank, or is longer than ``max_chars``, or when a bound is below 1.
    """
    validate_text(text, "message content", max_chars=max_chars)
    for name, value in (("read_chars", read_chars), ("clause_chars", clause_chars)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{name} must be an int >= 1, got {value!r}")
    cut = read_limit(text, read_chars)
    facts: list[Fact] = []
    seen: set[str] = set()
    topic, long_clauses = "", 0
    for clause in _clauses(text[:cut], clause_chars):
        if clause is None:
            long_clauses += 1
            continue
        topic = _topic(clause) or topic
        rewritten = _stand_alone(clause, topic)
        if not rewritten or rewritten in seen:
            continue
        seen.add(rewritten)
        facts.append(_fact(rewritten, said=clause))
    return Extraction(facts, cut, len(text), long_clauses)


def extract_facts(text: Any, *, max_chars: int = DEFAULT_MAX_CHARS, read_chars: int = DEFAULT_READ_CHARS) -> list[Fact]:
    """The facts of :func:`extract` (bounded the same way; use :func:`extract` to learn what was not read)."""
    return extract(text, max_chars=max_chars, read_chars=read_chars).facts


def read_limit(text: str, limit: int) -> int:
    """How many leading characters of ``text`` to read: all of it when it fits in ``limit``, else up to the
    last sentence break within the limit (or exactly ``limit`` when there is none)."""
    if len(text) <= limit:
        return len(text)
    last = 0
    for m in _SENTENCE_END.finditer(text, 0, limit):
        last = m.end()
    return last or limit


def fact_from_text(text: str) -> Fact:
    """A Fact for one statement taken as it is (no splitting or rewriting)."""
    validate_text(text, "fact text", max_chars=DEFAULT_MAX_CHARS)
    return _fact(text.strip())


def is_filler(clause: str) -> bool:
    """True for pleasantries and acknowledgements ("ok thanks", "哈哈好的", "👍")."""
    stripped = filler_key(clause)
    if not stripped:
        return True
    if language_of(stripped).name == "zh":
        rest = stripped.replace(" ", "")
        for word in sorted(FILLER_ZH, key=len, reverse=True):
            rest = rest.replace(word.lower(), "")
        return not rest
    return stripped in ASIDES_EN or all(w in FILLER_EN for w in stripped.split())


# --- splitting ----------------------------------------------------------------------------------

_TITLES_EN = ("Dr", "Mr", "Mrs", "Ms", "Mx", "Prof", "Jr", "Sr", "Mt", "Rev", "Capt", "Sgt", "Lt", "Col", "Gen")
_SENTENCE_BREAK = re.compile(r"(?<=[。！？；;!?\n])|(?<=\.)(?=\s|$)" + "".join(rf"(?<!\b{t}\.)" for t in _TITLES_EN))


def _sentences(text: str) -> list[str]:
    """The text's sentences: a title's period ("Dr. Patel", "Prof. Okafor") ends none."""
    parts = _SENTENCE_BREAK.split(text)
    return [p.strip() for p in parts if p and p.strip()]


def _raw_clauses(sentence: str) -> list[str]:
    pieces = re.split(r"[，、]|,(?!\d{3}\b)|(?<!\s)\s+but\s+|(?=但是|不过)", sentence)  # "500,000" stays whole
    return [p.strip().rstrip("。.!！;；") for p in pieces if p and p.strip().rstrip("。.!！;；")]


def _clauses(text: str, limit: int = MAX_CLAUSE_CHARS) -> list[str | None]:
    """Clauses of the text, fragments joined to the clause before them and qualifiers to the one after.

    A clause longer than ``limit`` is None (not read); what joins it stays None. So no string longer
    than ``limit`` plus one piece is ever built: linear in the text however many pieces it has.
    """
    out: list[str | None] = []
    follows = False  # the last clause in ``out`` came from the sentence before this one (none was skipped between)
    for sentence in _sentences(text):
        if _QUESTION.search(sentence.strip()):
            follows = False
            continue
        pending: str | None = ""  # "" nothing pending; None: an overlong qualifier
        first = True  # no clause of this sentence kept yet
        raws = _raw_clauses(sentence)
        for at, raw in enumerate(raws):
            piece: str | None = _LEADING_CONJ_ZH.sub("", _LEADING_CONJ_EN.sub("", raw)).strip()
            if not piece or is_filler(piece):
                continue
            if len(piece) > limit:
                piece = None
            if pending is None or pending:
                piece = _joined(pending, piece, limit)
                pending = ""
            if piece is not None and (_is_qualifier(piece) or first and at + 1 < len(raws)
                                      and language_of(piece).name == "en" and _is_fragment(piece)):
                pending = piece  # "Of all painters, Frida Kahlo's the one I love most": said of what follows
            elif out and (piece is None or _is_fragment(piece)):
                out[-1] = _joined(out[-1], piece, limit)
                first = False
            elif (out and (last := out[-1]) is not None and (not first or follows) and piece is not None
                  and len(last) + len(piece) + 2 <= limit and continues(piece, same_sentence=not first)):
                out[-1] = _joined(last, piece, limit)  # joined while it fits; else a clause of its own
                first = False
            else:
                out.append(piece)
                first = False
        if pending is None or pending:
            if out and pending is not None and out[-1] is not None and (not first or follows and _is_fragment(pending)):
                # a trailing qualifier: "our lab meets weekly, on Tuesdays", "Sertraline 50mg. Once a day."
                out[-1] = _joined(out[-1], pending, limit)
            else:
                out.append(pending)
            first = False
        follows = not first
    return out


def _joined(head: str | None, tail: str | None, limit: int) -> str | None:
    """``head, tail`` (with the separator of the tail's language), or None when either or the result is overlong."""
    if head is None or tail is None or len(head) + len(tail) + 2 > limit:
        return None
    return f"{head}{language_of(tail).comma}{tail}"


def _is_qualifier(clause: str) -> bool:
    """A leading qualifier that needs the next clause: "When writing Go", "写Go时", "比起咖啡"."""
    if language_of(clause).name == "zh":
        return len(clause) <= 12 and bool(_QUALIFIER_ZH.search(clause))
    words = clause.split()
    if _SUBORDINATORS_EN.match(clause):
        return True
    return bool(_PREPOSITIONS_EN.match(clause)) and len(words) <= 4 and not re.search(r"\b(?:i|the user|he|she)\b", clause, re.I)


def continues(clause: str, *, same_sentence: bool = True) -> bool:
    """The clause needs the one before it: it is about that clause's thing or person (it opens or ends with a pronoun:
    "it ends in 9032 now", "he's allergic", "my knee can't take it", "它坏了"), or, in the same sentence, it opens with
    its verb and so has that clause's subject ("deleted duolingo", "traded in the old iPhone", "去了字节跳动",
    "不加糖也不加奶"). Split from it, it would be read without its subject or attribute."""
    if language_of(clause).name == "zh":
        return bool(_POINTS_BACK_ZH.search(clause)) or same_sentence and bool(_OPENS_WITH_VERB_ZH.match(clause))
    return bool(_POINTS_BACK_EN.search(clause)) or same_sentence and bool(en.OPENS_WITH_VERB.match(clause))


def _is_fragment(clause: str) -> bool:
    """A clause without a predicate ("the black one", "黑色那个") or a relative clause ("which ...")."""
    if language_of(clause).name == "zh":
        return len(clause) <= 8 and not _VERBISH_ZH.search(clause) or bool(re.search(r"(?:那个|那款|那只|那种)$", clause))
    if re.match(r"^(?:which|who|that|where)\b", clause, re.I):
        return True
    words = len(clause.split())
    if words <= 4 and not _VERBISH_EN.search(clause.lower()):
        return True
    # no predicate read: "on Tuesdays", "pedal-powered", "his name's Biscuit", "so excited", "Mon" (a clause that
    # opens with its verb is not one: continues() joins it with its subject)
    return (words <= FRAGMENT_WORDS and not en.OPENS_WITH_VERB.match(clause) and not _HAS_SUBJECT_EN.search(clause)
            and read_statement(clause).attribute in _NO_PREDICATE)


FRAGMENT_WORDS = 8
"""Longest English clause read for a predicate (:func:`_is_fragment`); a longer one is taken as a clause."""
_HAS_SUBJECT_EN = re.compile(r"\b(?:i|i'm|we|we're|you|he|she|they|it|it's|is|are|was|were|am)\b|\w's\s+(?!own\b)[a-z]+$",
                             re.I)
"""A subject or a copula of its own ("once a week I ski", "the data's unlimited"): a clause, not a fragment."""
_NO_PREDICATE = frozenset({"", *(f"verb:{w}" for w in "a an the and or at in on of out all for to with by from over up "
                                                     "off per past".split())})
"""Readings with no predicate: none found, or a function word taken for the verb ("once a day", "Wed and Fri",
"leaving at seven", "spread out over the year")."""


# --- rewriting ------------------------------------------------------------------------------------

def _topic(clause: str) -> str:
    low = clause.lower()
    for p in language_of(clause).products:
        if (p in low) if language_of(p).name == "zh" else re.search(rf"\b{re.escape(p)}\b", low):
            return p
    return ""


def _stand_alone(clause: str, topic: str) -> str:
    return language_of(clause).stand_alone(clause, topic)


# --- facts ----------------------------------------------------------------------------------------

def _fact(text: str, said: str = "") -> Fact:
    reading = read_statement(text)
    return Fact(
        text=text, category=categorize(reading), entities=_entities(text, reading),
        domain_tags=tuple(domains_of(text)), subject=reading.subject, attribute=reading.attribute,
        value=reading.value, context=reading.context, negated=reading.negated, language=reading.language,
        said=said if said != text else "",
    )


def categorize(reading: Reading) -> Category:
    """user_profile, preference, episodic_fact or business_rule, from the attribute first, then the wording."""
    attr, text = reading.attribute, reading.text.lower()
    if attr.startswith(_PROFILE_ATTRS):
        return "user_profile"
    if attr.startswith(_RULE_ATTRS):
        return "business_rule"
    if _COMPLAINT_WORDS.search(text):  # a pain point is a preference (the A6 article's "偏好/痛点")
        return "preference"
    if _RULE_WORDS.search(text):
        return "business_rule"
    if attr.startswith(_PREFERENCE_ATTRS) or _PREFERENCE_WORDS.search(text):
        return "preference"
    if _EPISODE_WORDS.search(text):
        return "episodic_fact"
    if _PROFILE_WORDS.search(text):
        return "user_profile"
    return "episodic_fact"


def _entities(text: str, reading: Reading) -> tuple[str, ...]:
    found: list[str] = []
    if reading.language == "zh":
        found += re.findall(r"[A-Za-z][A-Za-z0-9.+#-]*(?:\s\d+)?", text)
        found += [p for p in PRODUCTS_ZH if p in text]
        found += re.findall(r"\d[\d,.]*\s*(?:元|块|万|岁|人|天|周|公里|点)?", text)
    else:
        words = text.split()
        for i, w in enumerate(words):
            clean = re.sub(r"[^\w'-]", "", w)
            if i > 0 and clean[:1].isupper() and clean not in ("I",):
                found.append(clean.removesuffix("'s"))
        found += [p for p in PRODUCTS_EN if re.search(rf"\b{p}\b", text.lower())]
        found += re.findall(r"\d[\d,.:]*", text)
    out: list[str] = []
    for e in found:
        e = e.strip(" ,.")
        if e and e not in out and not (reading.language == "zh" and e in ("用户",)):
            out.append(e)
    return tuple(out)
