"""Read one self-contained statement (English or Chinese) into subject, attribute, value and qualifiers.

``read_statement("On weekends the user wakes up at 9:00.")`` gives subject ``user``,
attribute ``verb:wake up``, value ``T0900``, context ``weekend``. The adjudicator
compares two readings; the extractor uses them for categories and tags. Rules are
ordered from specific (diet, residence, job, budget, deadline, ...) to generic
(``X is Y``, ``user VERB object``); a statement no rule reads keeps an empty attribute
and is compared by its content words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from memory.core.textcaches import text_cache
from memory.write.lexicon import (
    CESSATION_EN, CHANGE_EN, CHANGE_ZH, CONTEXT_WORDS, DIET_EN, DIET_ZH, JOB_NOUNS_EN, JOB_SUFFIX_ZH, MONTHS_EN, NEGATION_EN,
    NEGATION_ZH, PHRASES_EN, PHRASES_ZH, VERB_SKIP_EN, WEEKDAYS_EN, WEEKDAYS_ZH, domains_of, is_chinese,
    normalize_values_en, normalize_values_zh,
)

DEVICE_DOMAINS = ("phone", "computer", "watch")
LANGUAGES_ZH = "日语|英语|法语|德语|韩语|西班牙语|俄语|中文|普通话|粤语|意大利语|葡萄牙语|阿拉伯语"
LANGUAGES_EN = ("japanese", "english", "french", "german", "chinese", "mandarin", "cantonese", "spanish", "korean",
                "italian", "portuguese", "russian", "arabic", "hindi", "dutch", "swedish")
STOP_EN = frozenset(
    "a an the user user's is am are was were be been being of to in on at by for with and or but it its this that "
    "these those some any very really quite also just still too so as do does did has have had will would can could "
    "should must may might there their they them he she his her we our you your every each about around roughly "
    "approximately than then much many more most usually often always mostly already yet".split()
)
STOP_ZH = frozenset("的了是在也都就很会还又才把被着过呢吗吧啊呀么和与及或而一个只位名种每天要能说得不再没别非")
_TIME_ADVERBS_EN = re.compile(
    r"\b(?:last|this|next) (?:week|month|year|weekend|summer|winter|spring|autumn)\b|\byesterday\b|\btoday\b|"
    r"\b(?:n\d+ )?(?:days?|weeks?|months?|years?) ago\b|\bthese days\b|\bnowadays\b|\bcurrently\b|\bat the moment\b|"
    r"\bfrom now on\b|\brecently\b|\blately\b|\banymore\b|\bany more\b|\bnow\b|\bjust\b"
)
_TIME_ADVERBS_ZH = re.compile(r"上个?月|上周|上星期|去年|前年|昨天|前天|今天|今年|本月|这个月|最近|现在|如今|目前|已经|刚刚|刚|正在|一直")


@dataclass(frozen=True)
class Reading:
    """What one statement says, in comparable form."""

    text: str
    """The statement as given."""
    language: str
    """``en`` or ``zh``."""
    subject: str = "user"
    """Who or what the statement is about: ``user`` or a noun ("campaign", "team", "活动")."""
    attribute: str = ""
    """Canonical attribute ("residence", "job", "budget", "favourite colour", "verb:use", ...); '' when unread."""
    value: str = ""
    """Normalised value (numbers as n500000, times as t0630, dates as d0630)."""
    context: str = ""
    """Qualifier under which the statement holds ("weekend", "work", "writing go", "手表"); '' when none."""
    negated: bool = False
    """The statement denies its attribute ("is no longer vegetarian", "不再吃素")."""
    changed: bool = False
    """It announces a change ("now", "moved to", "these days", "现在", "换成", "调整为")."""
    ceased: bool = False
    """It says a habit or state ended ("quit coffee", "戒咖啡了"); ``value`` is what ended."""
    single_valued: bool = True
    """A new value of this attribute replaces the old one (a residence) rather than adding to it (a language)."""
    tokens: tuple[str, ...] = ()
    """Content tokens of the statement without subject, context and change markers (for overlap and diffs)."""
    domains: tuple[str, ...] = field(default=())
    """Domain tags of the content (context excluded)."""

    @cached_property
    def values(self) -> frozenset[str]:
        """Number, time and date tokens of the content (n500000, t0630, d0630)."""
        return frozenset(t for t in self.tokens if _VALUE_TOKEN.fullmatch(t))


def read_statement(text: str) -> Reading:
    """Read one statement (no splitting into clauses: see :mod:`memory.write.extract` for that)."""
    return _read(text.strip())


@text_cache(maxsize=8192)
def _read(text: str) -> Reading:
    return _read_zh(text) if is_chinese(text) else _read_en(text)


# --- English ------------------------------------------------------------------------------------

_CONTRACTIONS = (
    (r"\bi'm\b", "i am"), (r"\bi've\b", "i have"), (r"\bi'd\b", "i would"), (r"\bi'll\b", "i will"),
    (r"\b(he|she|it|that|there)'s\b", r"\1 is"), (r"\bcan't\b", "can not"), (r"\bwon't\b", "will not"),
    (r"\b(\w+)n't\b", r"\1 not"), (r"\b(\w+)'re\b", r"\1 are"), (r"’", "'"),
)
_FIRST_PERSON = ((r"\bi am\b", "the user is"), (r"\bi was\b", "the user was"), (r"\bi have\b", "the user has"),
                 (r"\bmy\b|\bmine\b", "the user's"), (r"\bi\b|\bme\b|\bmyself\b", "the user"))
_SUBJ = r"(?:the user|user)"


def _canonical_en(text: str) -> str:
    s = " " + text.strip().rstrip(".!;。！") + " "
    s = s.replace("’", "'")
    for pattern, rep in _CANONICAL_EN[0]:
        s = pattern.sub(rep, s)
    s = normalize_values_en(s)
    for pattern, rep in _CANONICAL_EN[1]:
        s = pattern.sub(rep, s)
    return _SPACES.sub(" ", s).strip()


_CANONICAL_EN = (tuple((re.compile(pat, re.I), rep) for pat, rep in _CONTRACTIONS),
                 tuple((re.compile(pat), rep) for pat, rep in (*PHRASES_EN, *_FIRST_PERSON)))
""":func:`_canonical_en`'s rewrites, compiled once: the contractions (any case) before the values are normalised,
the phrases and the first person after."""
_SPACES = re.compile(r"\s+")


def _context_en(s: str) -> tuple[str, list[str]]:
    found: list[str] = []
    day = re.search(rf"\bevery ({'|'.join(WEEKDAYS_EN)})s?(?: (morning|afternoon|evening|night)s?)?\b|"
                    rf"\bon ({'|'.join(WEEKDAYS_EN)})s(?: (morning|afternoon|evening|night)s?)?\b|"
                    rf"^on ({'|'.join(WEEKDAYS_EN)})(?: (morning|afternoon|evening|night))?\b,?", s)
    if day:
        found.append(" ".join(g for g in day.groups() if g))
        s = s.replace(day.group(0), " ")
    for key, forms in _CONTEXT_FORMS_EN:
        for form, pattern in forms:
            if form in s and pattern.search(s):  # the pattern holds the form: a cheap test first
                s = pattern.sub(" ", s, count=1).strip()
                found.append(key)
                break
    lead = re.match(rf"^(?:when|while|whenever|if) (?:the user is |the user )?([^,]+?)(?:,\s*|\s+(?={_LEAD_SUBJ}))", s) \
        or re.match(rf"^(?:for|during|in|at|on|around|over|outside|between|from)( [a-z0-9 ]{{1,40}}? to)? ([a-z0-9' ]{{1,60}}?)"
                    rf"(?:,\s*|\s+(?={_LEAD_SUBJ}))", s) or re.match(rf"^({_OTHERWISE_EN}),?\s+", s)
    if lead and (_TIME_ADVERBS_EN.search(lead.group(0)) or _TIME_ANCHOR_EN.search(lead.group(0))):
        lead = None  # "in 2024", "this month", "since May": when it changed, not a condition it holds under
    if lead:
        found.append(_strip_det(" ".join(g for g in lead.groups() if g)))
        s = s[lead.end():]
    else:
        tail = re.search(r",?\s+(?:when|while|whenever) (?:the user is |the user )?([^,]+)$", s)
        if tail:
            found.append(_strip_det(tail.group(1)))
            s = s[: tail.start()]
    scoped = re.search(r"\b(budget|price|plan|limit|goal|preference|choice|size) for (?:the |a |an |the user's )?"
                       r"([a-z0-9 ]+?)(?= is| are| was| of| =|$)", s)
    if scoped:
        found.append(_singular(scoped.group(2)))
        s = s[: scoped.start()] + scoped.group(1) + s[scoped.end():]
    return re.sub(r"\s+", " ", s).strip(" ,"), found


_LEAD_SUBJ = r"(?:the user\b|we\b|it\b|they\b|our\b|there\b)"
"""Who a statement that opens with its condition goes on to speak of ("On rest days the user's alarm ...", "At night we
turn ...", "On the annual plan it works out to ...")."""
_OTHERWISE_EN = r"the rest of the time|otherwise|other times|the other days"
_TIME_ANCHOR_EN = re.compile(rf"\b(?:since|until|as of|(?:past|coming) \w+|n?(?:19|20)\d\d)\b|"
                             rf"^(?:in|on|at) (?:{'|'.join(MONTHS_EN)})\b")
"""Besides _TIME_ADVERBS_EN, words that date a statement's opening phrase rather than condition it ("In 2024", "Since
May", "In March")."""


def _strip_det(phrase: str) -> str:
    words = [w for w in phrase.strip(" ,").split() if w not in ("a", "an", "the", "the user's", "user's", "some")]
    return " ".join(_singular(w) for w in words)


def _singular(word: str) -> str:
    return " ".join(_lemma_noun(w) for w in word.split())


def _lemma_noun(w: str) -> str:
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and re.search(r"(ches|shes|sses|xes)$", w):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


_IRREGULAR = {"is": "be", "am": "be", "are": "be", "was": "be", "were": "be", "has": "have", "had": "have",
              "does": "do", "did": "do", "goes": "go", "went": "go", "bought": "buy", "drove": "drive",
              "ate": "eat", "drank": "drink", "took": "take", "made": "make", "got": "get", "uses": "use",
              "used": "use", "lives": "live", "lived": "live", "moved": "move", "likes": "like", "liked": "like",
              "prefers": "prefer", "preferred": "prefer", "loves": "love", "loved": "love", "rides": "ride",
              "rode": "ride", "wrote": "write", "writes": "write", "spoke": "speak", "owns": "own"}


def _lemma_verb(w: str) -> str:
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and re.search(r"(ches|shes|sses|xes|oes)$", w):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    if len(w) > 4 and w.endswith("ied"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith("ed"):
        vowel_consonant_e = w[-4] in "aeiou" and w[-3] not in "aeiouwy"
        return w[:-1] if vowel_consonant_e else w[:-2]
    return w


def _clean_value_en(v: str) -> str:
    v = _TIME_ADVERBS_EN.sub(" ", v)
    v = re.sub(r"\b(?:about|around|roughly|approximately|some|up to|at most|at least|only|just|over|under)\b", " ", v)
    v = re.sub(r"\b(?:yuan|rmb|dollars?|usd|euros?|bucks)\b", " ", v)
    v = re.sub(r"\b(?:most|every|each) (?:day|night|morning|evening|week|weekend)s?\b|\b(?:daily|nightly|usually|often|"
               r"always|normally|generally|typically)\b", " ", v)
    v = re.sub(r"^(?:at|in|on|to|by|as|for|with)\s+", "", v.strip())
    return _strip_det(re.sub(r"\s+", " ", v))


def _subject_en(prefix: str) -> str:
    words = re.sub(r"\b(?:the user's|the user|user's|user|the|a|an|also|now|new|has|have|had|is|are|was|were|been|"
                   r"will|would|,)\b", " ", prefix).split()
    return " ".join(_singular(w) for w in words) or "user"


# Each rule: (pattern, attribute, value group, single-valued). The attribute may use {g1}.. placeholders.
_RULES_EN: tuple[tuple[str, str, int, bool], ...] = (
    (r"\bbudget(?: (?:is|was|of|has been|is now|now|was cut to|cut to|was raised to|raised to|was increased to|"
     r"increased to|was reduced to|reduced to|changed to|moved to|=|:))* ?(?:about |around |roughly |approximately |"
     r"up to |at most |only )?(n\d+)", "budget", 1, True),
    (r"\bdeadline(?: (?:is|was|has|moved to|has moved to|is now|now|changed to|pushed to|pushed back to|extended to|"
     r"postponed to|brought forward to|moved))* ?(?:to |on )?(d\d{4}|[a-z0-9 ]+)", "deadline", 1, True),
    (r"\b(?:has|have|had|now has|grown to|has grown to|grew to|shrunk to|shrank to|increased to|decreased to|"
     r"dropped to|reached) (n\d+) ([a-z]+)", "count:{g2}", 1, True),
    (r"\ballergic to ([a-z0-9 ]+)", "allergy", 1, False),
    (r"\ballergy to ([a-z0-9 ]+)", "allergy", 1, False),
    (r"(?<![a-z0-9 ])([a-z0-9 ]+?) (?:give|gives|gave|cause|causes|trigger|triggers) (?:the user )?(?:an? )?allergic reaction", "allergy", 1, False),
    (r"(?<![a-z0-9 ])([a-z0-9 ]+?) is where (?:the user|user) (?:live|lives|lived)\b", "residence", 1, True),
    (r"\b(?:live|lives|lived|living|reside|resides|resided|settled|is based) in ([a-z0-9 ]+)", "residence", 1, True),
    (r"\b(?:moved|move|moves|moving|relocated|relocate|relocates) (?:back )?(?:to|into) ([a-z0-9 ]+)", "residence", 1, True),
    (r"\b(?:changed|switched|rescheduled|postponed|pushed|pushed back|brought forward|went up|went down|rose|fell|"
     r"increased|decreased|dropped|was raised|was cut|was reduced|was increased) to ([a-z0-9 ]+)", "moved", 1, True),
    (r"\b(?:is|are|was|got|became|become|has become|is now) (single|married|divorced|engaged|widowed|separated)\b",
     "marital status", 1, True),
    (r"got (married|divorced|engaged)\b", "marital status", 1, True),
    (r"\bhome is (?:in|at) ([a-z0-9 ]+)", "residence", 1, True),
    (r"\b(?:work|works|worked|working) as (?:an? )?([a-z0-9 ]+)", "job", 1, True),
    (r"\b(?:is|be|became|become|becomes) an? ([a-z0-9 ]+?) by (?:profession|trade)", "job", 1, True),
    (r"\b(?:profession|job|occupation|role) is (?:an? )?([a-z0-9 ]+)", "job", 1, True),
    (rf"\b(?:is|became|become|becomes) an? ((?:[a-z]+ )?(?:{'|'.join(sorted(JOB_NOUNS_EN))}))\b", "job", 1, True),
    (r"\b(?:manager|team lead|lead) is ([a-z0-9 ]+)", "manager", 1, True),
    (r"\bworks? at ([a-z0-9 ]+)", "employer", 1, True),
    (r"(?<![a-z0-9 ])([a-z0-9 ]+?) is (?:the user's|user's) (?:new )?employer", "employer", 1, True),
    (r"\bemployer is ([a-z0-9 ]+)", "employer", 1, True),
    (r"\b(n\d+) years? old\b|\bage is (n\d+)|\bturned (n\d+)|\baged (n\d+)", "age", 0, True),
    (r"\b(?:salary|income|pay|wage) is (n\d+)|\bearns? (n\d+)|\bmakes (n\d+)", "salary", 0, True),
    (r"\breports? to ([a-z0-9 ]+)", "manager", 1, True),
    (r"\bfavourite ([a-z0-9 ]+?) (?:is|are|was|has become|is now) ([a-z0-9 ]+)", "favourite {g1}", 2, True),
    (r"(?<![a-z0-9 ])([a-z0-9 ]+?) (?:is|are) (?:the user's|the user|user's) (?:new )?favourite ([a-z0-9 ]+)", "favourite {g2}", 1, True),
    (r"(?<![a-z])(?:the user's )?([a-z]+)(?:'s name)? is (?:named|called) ([a-z0-9]+)", "name:{g1}", 2, True),
    (r"(?<![a-z0-9])([a-z0-9]+) is the name of (?:the user's|the) ([a-z]+)", "name:{g2}", 1, True),
    (r"\bname of (?:the user's|the) ([a-z]+) is ([a-z0-9]+)", "name:{g1}", 2, True),
    (r"\b(?:an? |the )?([a-z]+) (?:named|called) ([a-z0-9]+)", "name:{g1}", 2, True),
    (r"^([a-z0-9]+) is (?:the user's|user's) (dog|cat|pet|son|daughter|child|kid|husband|wife|partner|boyfriend|"
     r"girlfriend|brother|sister|horse|bird|rabbit|hamster|parrot)$", "name:{g2}", 1, True),
    (r"\b(?:speak|speaks|spoke|speaking) (?:fluent |some |a little |basic |good )?([a-z]+)", "language", 1, False),
    (r"\bfluent in ([a-z]+)", "language", 1, False),
    (r"\bprefers? ([a-z0-9 ]+?) over ([a-z0-9 ]+)", "prefer", 1, True),
    (r"\b(?:drink|drinks|eat|eats|smoke|smokes|have|has) (n\d+ |a few |several )?(?:cups? |glasses? |bottles? |"
     r"packs? |pieces? )?(?:of )?([a-z ]+?) (?:a|per|every) (?:day|week)", "habit:{g2}", 1, True),
)
_OWNED = ("budget", "deadline", "count:{g2}")
"""Attributes whose owner is read from the words before them ("the campaign budget", "the team has 8 ...")."""
_VALUE_TOKEN_ATTRS = ("budget", "deadline", "count:{g2}", "count:人", "age", "salary")
"""Attributes whose value is the number or date in the match ("been pushed to April 10" -> d0410)."""
_CESSATION_EN = re.compile(rf"\b(?:{'|'.join(CESSATION_EN)})\s+"
                           r"(?:drinking |eating |smoking |using |playing |taking |doing )?([a-z0-9 ]+)")
_PROP_EN = re.compile(r"^(?:the user's |the )?([a-z0-9' ]+?) (?:is|are|was|were) (?:in |at |on |from )?([a-z0-9 ]+)$")
_VERB_EN = re.compile(r"^(.*?)\b((?:the user|user)|(?:the )?(?!the\b)[a-z]+) "
                      rf"(?:{'|'.join(w + ' ' for w in VERB_SKIP_EN)})*([a-z]+)"
                      r"(?: (up|out|by|to|at|for|with|about|on|in|from|into))? (.+)$")


_CHANGE_EN = re.compile(rf"\b(?:{'|'.join(map(re.escape, CHANGE_EN))})\b")
"""Any change marker of :data:`CHANGE_EN` as a whole word (or phrase)."""
_CONTEXT_FORMS_EN = tuple(
    (key, tuple((form, re.compile(rf"(?:^|,\s*|\s)({re.escape(form)})(?=\s|,|$)")) for form in forms
                if not is_chinese(form)))
    for key, forms in CONTEXT_WORDS.items())
"""The English forms of :data:`CONTEXT_WORDS`, each with its pattern (after a start, a comma or a space; before a
space, a comma or the end), in the table's order."""
_VALUE_TOKEN = re.compile(r"[ntd]\d+")
_CONTEXT_FORMS_ZH = tuple((key, tuple(form for form in forms if is_chinese(form))) for key, forms in CONTEXT_WORDS.items())
"""The Chinese forms of :data:`CONTEXT_WORDS`, in the table's order."""
_NEGATION_EN = re.compile(rf"\b(?:{'|'.join(NEGATION_EN)})\b")
_NEGATION_ZH = re.compile("|".join(NEGATION_ZH))


def _read_en(text: str) -> Reading:
    s = _canonical_en(text)
    s, contexts = _context_en(s)
    changed = bool(_CHANGE_EN.search(s))
    core = _TIME_ADVERBS_EN.sub(" ", s)
    core = re.sub(r"\b(?:the user's|the) new\b", lambda m: m.group(0)[:-4], core)
    core = re.sub(r"\s+", " ", core).strip(" ,")
    neg_words = _NEGATION_EN
    negated = bool(neg_words.search(core))
    subject, attribute, value, single, ceased = "user", "", "", True, False

    plain = re.sub(r"\s+", " ", neg_words.sub(" ", core))
    diet = _diet(plain, DIET_EN)
    if diet is not None:
        attribute, value = "diet", "vegetarian"
        negated = diet != negated
    cess = _CESSATION_EN.search(core)
    if not attribute and cess:
        attribute, value, ceased, changed, negated = "cessation", _clean_value_en(cess.group(1)), True, True, False
    if not attribute:
        found = _rules_en(core)
        if found:
            subject, attribute, value, single, moved = found
            changed = changed or moved
    if not attribute:
        subject, attribute, value, single = _generic_en(core)
    if attribute.startswith("verb:") and value:
        device = [d for d in domains_of(value) if d in DEVICE_DOMAINS]
        if device and attribute.split(":")[1].split()[0] in ("use", "have", "own", "buy", "get", "switch", "change"):
            attribute = "device:" + device[0]
    tokens = _tokens_en(core)
    return Reading(
        text=text, language="en", subject=subject, attribute=attribute, value=value,
        context="; ".join(sorted(set(contexts))), negated=negated, changed=changed, ceased=ceased,
        single_valued=single, tokens=tokens, domains=tuple(domains_of(core)),
    )


def _rules_en(core: str) -> tuple[str, str, str, bool, bool] | None:
    """(subject, attribute, value, single_valued, moved) from the first specific rule that reads ``core``."""
    for pattern, attr, group, single_valued in _RULES_EN:
        m = re.search(pattern, core)
        if not m:
            continue
        groups = {f"g{i}": _strip_det(g or "") for i, g in enumerate(m.groups(), 1)}
        attribute = attr.format(**groups)
        raw = m.group(group) if group else next((g for g in m.groups() if g), "")
        value = _clean_value_en(raw or "")
        owner = _subject_en(core[: m.start()])
        subject = owner if attr in _OWNED else "user"
        moved = False
        if attr == "prefer":
            attribute = "prefer:" + "|".join(sorted({_clean_value_en(m.group(1)), _clean_value_en(m.group(2))}))
        if attr in ("residence", "moved"):
            if owner == "user" and (attr == "moved" or re.fullmatch(r"[ntd]\d+", value)):
                continue  # "the user switched to ..." or "moved to 9:00": not a residence
            if owner != "user":  # "the office moved to the 12th floor": a property of the office
                attribute, moved = "prop:" + owner, True
        if attr in _VALUE_TOKEN_ATTRS:
            token = re.search(r"\b[ntd]\d+\b", value)
            value = token.group(0) if token else value
        if attribute.startswith("count:"):
            attribute = "count:" + _lemma_noun(attribute[6:])
        return subject, attribute, value, single_valued, moved
    return None


def _diet(text: str, rules) -> bool | None:
    """True: eats meat; False: vegetarian; None: the statement is not about diet."""
    for pattern, eats_meat in rules:
        if re.search(pattern, text):
            return eats_meat
    return None


def _generic_en(core: str) -> tuple[str, str, str, bool]:
    from memory.write.lexicon import MULTI_VALUED

    m = _PROP_EN.match(core)
    if m and not re.fullmatch(rf"{_SUBJ}", m.group(1).strip()):
        noun = re.sub(r"^(?:the user's |user's |user )", "", m.group(1)).strip()
        return "user", "prop:" + _singular(noun), _clean_value_en(m.group(2)), True
    m = _VERB_EN.match(core)
    if m:
        subject = _subject_en(m.group(2))
        verb = _lemma_verb(m.group(3))
        if verb in ("be",) and subject == "user":
            return "user", "state", _clean_value_en(m.group(5)), False
        attr = "verb:" + verb + (f" {m.group(4)}" if m.group(4) else "")
        value = _clean_value_en(m.group(5))
        return subject, attr, value, attr not in MULTI_VALUED and f"verb:{verb}" not in MULTI_VALUED
    return "user", "", "", True


def _tokens_en(core: str) -> tuple[str, ...]:
    words = re.findall(r"[a-z0-9']+", core.replace("the user's", " ").replace("user's", " "))
    out = []
    for w in words:
        if re.fullmatch(r"[ntd]\d+", w):
            out.append(w)
            continue
        w = w.lower().strip("'")
        if w and w not in STOP_EN and w not in ("user", "not", "no", "longer", "never", "new"):
            out.append(_lemma_verb(_lemma_noun(w)) if len(w) > 3 else w)
    return tuple(out)


# --- Chinese ------------------------------------------------------------------------------------

def _canonical_zh(text: str) -> str:
    s = text.strip().rstrip("。！!.~～；;")
    s = re.sub(r"\s+", "", s) if not re.search(r"[A-Za-z]\s+[A-Za-z0-9]", s) else re.sub(r"\s+", " ", s)
    s = normalize_values_zh(s)
    for pat, rep in PHRASES_ZH:
        s = re.sub(pat, rep, s)
    s = re.sub(r"我(?!们)", "用户", s)
    return s.lower()


_NAMED_BY_CONTEXT_ZH = re.compile(r"推广|活动|项目|促销|营销|新品|课程|大促|发布会|档期|版本|系列|招聘|团建")
"""After a context word, a noun it names rather than qualifies: "夏季推广" is the summer campaign, not "in summer"."""


def _context_zh(s: str) -> tuple[str, list[str]]:
    found: list[str] = []
    day = re.search(r"(?:每周|每个?星期|^(?:用户)?(?:周|星期|礼拜))([一二三四五六日天])(早上|上午|中午|下午|晚上)?", s)
    if day:
        part = {"早上": "morning", "上午": "morning", "中午": "noon", "下午": "afternoon", "晚上": "evening"}.get(day.group(2) or "")
        found.append(WEEKDAYS_ZH[day.group(1)] + (f" {part}" if part else ""))
        s = s.replace(day.group(0), "", 1)
    for key, forms in _CONTEXT_FORMS_ZH:
        for form in forms:
            at = s.find(form)
            if at >= 0 and not _NAMED_BY_CONTEXT_ZH.match(s, at + len(form)):
                s = s[:at] + s[at + len(form):]
                found.append(key)
                break
    when = re.match(r"^(?:用户)?(?:在|当)?([^，,]{1,10}?)(?:的时候|时)(?![间候刻])[，,]?", s)
    topic = re.match(r"^([^，,用是的叫有给被把和让]{1,8}?)[，,]?(?=用户|我们)", s)
    if when and not when.group(1).endswith("小"):
        found.append(when.group(1).replace("用户", ""))
        s = s[when.end():]
    elif topic and not re.match(r"比起|对于|关于|因为|所以|但是|而且|如果|虽然|不过", topic.group(1)) \
            and not _TIME_ADVERBS_ZH.fullmatch(topic.group(1)) and not _CLAUSE_ZH.search(topic.group(1)):
        found.append(re.sub(r"^[在当]", "", topic.group(1)))  # topic-comment: "早餐用户吃燕麦" holds at breakfast
        s = s[topic.end():]
    scoped = re.search(r"(?:买|购买|给|为|换)([\u4e00-\u9fffa-z0-9]{1,6}?)的(预算|价格|要求|上限)", s)
    if scoped:
        found.append(scoped.group(1))
        s = s[: scoped.start()] + "的" + scoped.group(2) + s[scoped.end():]
    return s.strip("，,"), found


_CLAUSE_ZH = re.compile(r"了|换|改|取消|允许|决定|开始|不再|搬|调")
"""A topic that is a clause of its own ("公司取消了远程，我现在……") is an event, not a condition the fact holds under."""


def _clean_value_zh(v: str) -> str:
    v = _TIME_ADVERBS_ZH.sub("", v)
    v = re.sub(r"^(?:一名|一个|一位|一只|一辆|一台|一部|个)", "", v)
    v = re.sub(r"(?:大约|大概|约|左右|上下|元|块钱|块|人民币|举办|举行|进行|了|的|呢|啊|吧)+$", "", v)
    v = re.sub(r"^(?:大约|大概|约|在|是|为|到)", "", v)
    return v.strip("，, ")


def _subject_zh(prefix: str) -> str:
    rest = re.sub(r"＠的?|[ntd]\d+", "", prefix)
    rest = re.sub(r"^(?:的|每天|每周|每晚|经常|总是|一般|通常|平常)+|(?:的|每天|每周|每晚|经常|总是|一般|通常|平常|也|还|都|会|就|要|能)+$",
                  "", rest).strip("，, ")
    return rest or "user"


_JOB_ZH = "|".join(JOB_SUFFIX_ZH)
_RULES_ZH: tuple[tuple[str, str, int, bool], ...] = (
    (r"对(.+?)过敏", "allergy", 1, False),
    (r"吃(.+?)(?:会|就|容易)?过敏", "allergy", 1, False),
    (r"(?:住在|家在|定居在?|搬到了?|搬去了?|搬家到|移居到?|落户在?)([\u4e00-\u9fffa-z]+)", "residence", 1, True),
    (r"(?:职业|工作|职位|岗位)是(.+)", "job", 1, True),
    (r"(单身|已婚|结婚|离婚|订婚|丧偶)", "marital status", 1, True),
    (r"是做(.+?)的$", "job", 1, True),
    (r"转行(?:做|当|成为?)了?(.+)", "job", 1, True),
    (rf"^＠(?:是|当|做|成为|成了)(?:一名|一个|一位)?([\u4e00-\u9fffa-z]*?(?:{_JOB_ZH}))$", "job", 1, True),
    (r"领导(?:是|换成了?|变成了?|改成了?)(.+)", "manager", 1, True),
    (r"^＠?(?:在|就职于|供职于)(.+?)(?:工作|上班|任职)$", "employer", 1, True),
    (r"(?:雇主|东家|公司)是(.+)", "employer", 1, True),
    (r"(n\d+)岁", "age", 1, True),
    (r"(?:月薪|年薪|收入)(?:是|为|有|大约|大概)*(n\d+)", "salary", 1, True),
    (r"最喜欢的(.+?)是(.+)", "favourite {g1}", 2, True),
    (r"^(.+?)是(?:＠)?最喜欢的(.+)", "favourite {g2}", 1, True),
    (r"叫(.+?)的(狗|猫|宠物|孩子|儿子|女儿)", "name:{g2}", 1, True),
    (r"^(.+?)是＠?的?(狗|猫|宠物|孩子|儿子|女儿)的名字", "name:{g2}", 1, True),
    (r"^(.+?)是＠的?(狗|猫|宠物|孩子|儿子|女儿|丈夫|妻子|老公|老婆)$", "name:{g2}", 1, True),
    (r"(狗|猫|宠物|孩子|儿子|女儿)(?:的名字)?(?:名字)?(?:名)?(?:叫|是)(.+)", "name:{g1}", 2, True),
    (rf"({LANGUAGES_ZH})(?:很|非常|说得|讲得)?(?:流利|地道)", "language", 1, False),
    (rf"(?:流利的|会说|能说|会讲|懂)({LANGUAGES_ZH})", "language", 1, False),
    (r"预算.*?(n\d+)", "budget", 1, True),
    (r"(?:截止日期|截止时间|最后期限|上线时间|上线日期|交付日期|交付时间|发布日期|发布时间)(?:是|为|推迟到|提前到|改到|延期到|延到|改为|改成|"
     r"定在|在|挪到|调到)了?(.+)", "deadline", 1, True),
    (r"最晚(?:在|于)?(d\d{4})(?:之前|以前|前)?(?:要|得|必须|需要|就要)?(?:上线|完成|交付|提交|发布|交|做完|搞定)", "deadline", 1, True),
    (r"(d\d{4})前(?:完成|交付|提交|做完|搞定|交|结束)", "deadline", 1, True),
    (r"(?:有|扩充到了?|扩大到了?|增加到了?|减少到了?|缩减到了?|达到了?|变成了?|只剩了?|增长到了?)(n\d+)"
     r"(个人|人|名员工|个员工|个成员|名成员)", "count:人", 1, True),
    (r"比起(.+?)[，,]?(?:＠)?更(?:喜欢|爱|倾向于?|偏爱)(?:喝|吃|用|玩)?(.+)", "prefer", 2, True),
    (r"(?:喜欢|爱|偏爱)(?:喝|吃|用|玩)?(.+?)[，,](?:但)?(?:不太|不怎么|很少|不大|不)(?:喝|吃|用|玩)?(.+)", "prefer", 1, True),
    (r"每天(?:喝|吃|抽|用)(n\d+)?(?:杯|瓶|包|个|根|次)?(.+)", "habit:{g2}", 1, True),
    (r"(手机|电脑|笔记本|手表|车)(?:是|用的是|换成了?)(.+)", "device:{g1}", 2, True),
    (r"^(.+?)(?:涨到|涨至|升到|升至|降到|降至|调到|调整到|改到|改为|改成|变成|挪到|推迟到|提前到)了?(.+)", "moved", 2, True),
)
_MARITAL_ZH = {"单身": "single", "已婚": "married", "结婚": "married", "离婚": "divorced", "订婚": "engaged", "丧偶": "widowed"}
_CESSATION_ZH = re.compile(r"(?:戒掉?了?|不再(?:喝|吃|抽|用|玩|去)|停止(?:喝|吃|抽|用)|放弃了?)(.+?)了?$")
_SWITCH_ZH = re.compile(r"(?:换成了?|改用了?|换了)(.+)")
_PROP_ZH = re.compile(r"^(?:＠的|＠)?([\u4e00-\u9fff]{1,8}?)(?:是|在|为)(.+)$")
_VERB_ZH = re.compile(r"^(.*?)(喜欢|讨厌|想要|偏好|习惯|负责|参加|练习|学习|睡觉|起床|跑步|喝|吃|用|开|骑|坐|住|租|去|养|遛|"
                      r"买|穿|戴|玩|看|听|学|写|爱|想|要|打|踢|弹|跑|做|练|抽|读|逛|拍|画|唱|跳|种|教|睡)(.*)$")
_DEVICE_NOUNS = {"手机": "phone", "电脑": "computer", "笔记本": "computer", "手表": "watch"}


def _read_zh(text: str) -> Reading:
    s = _canonical_zh(text)
    s, contexts = _context_zh(s)
    changed = any(m in s for m in CHANGE_ZH)
    core = _TIME_ADVERBS_ZH.sub("", s)
    core = re.sub(r"的新", "的", core)
    core = re.sub(r"了$", "", core).strip("，, ").replace("用户", "＠")
    subject, attribute, value, single, ceased = "user", "", "", True, False
    comparative = re.search(r"比起|[，,](?:但)?(?:不太|不怎么|很少|不大)", core)
    negated = bool(_NEGATION_ZH.search(core)) and not comparative

    diet = _diet(core, DIET_ZH)
    if diet is not None:
        attribute, value, negated = "diet", "vegetarian", diet
    cess = _CESSATION_ZH.search(core)
    if not attribute and cess and "素" not in core:
        attribute, value, ceased, changed, negated = "cessation", _clean_value_zh(cess.group(1)), True, True, False
    if not attribute:
        for pattern, attr, group, single_valued in _RULES_ZH:
            m = re.search(pattern, core)
            if not m:
                continue
            groups = {f"g{i}": _clean_value_zh(g or "") for i, g in enumerate(m.groups(), 1)}
            attribute = attr.format(**groups)
            if attr == "prefer":
                options = sorted({_strip_zh_verb(groups["g1"]), _strip_zh_verb(groups["g2"])})
                attribute = "prefer:" + "|".join(options)
                value = _strip_zh_verb(groups[f"g{group}"])
            else:
                value = groups[f"g{group}"]
            if attribute.startswith("device:"):
                attribute = "device:" + _DEVICE_NOUNS.get(attribute[7:], attribute[7:])
            single = single_valued
            if attr in ("budget", "count:人"):
                subject = _subject_zh(core[: m.start()])
            if attr == "residence" and _subject_zh(core[: m.start()]) != "user":
                attribute, changed = "prop:" + _subject_zh(core[: m.start()]), True
            if attr == "moved":
                owner = _subject_zh(m.group(1))
                if owner == "user":
                    attribute = ""
                    continue
                attribute, changed = "prop:" + owner, True
            if attr == "marital status":
                value = _MARITAL_ZH[value]
            if attr in _VALUE_TOKEN_ATTRS:
                token = re.search(r"[ntd]\d+", value)
                value = token.group(0) if token else value
            break
    if not attribute:
        switch = _SWITCH_ZH.search(core)
        device = [d for d in domains_of(switch.group(1)) if d in DEVICE_DOMAINS] if switch else []
        if switch and device:
            attribute, value, changed = "device:" + device[0], _clean_value_zh(switch.group(1)), True
    if not attribute:
        subject, attribute, value, single = _generic_zh(core)
    if attribute.startswith("verb:") and value:
        device = [d for d in domains_of(value) if d in DEVICE_DOMAINS]
        if device and attribute[5:] in ("用", "买", "换"):
            attribute = "device:" + device[0]
    return Reading(
        text=text, language="zh", subject=subject, attribute=attribute, value=value,
        context="; ".join(sorted(set(contexts))), negated=negated, changed=changed, ceased=ceased,
        single_valued=single, tokens=_tokens_zh(core), domains=tuple(domains_of(core)),
    )


def _strip_zh_verb(v: str) -> str:
    return re.sub(r"^(?:喝|吃|用|玩)", "", v)


def _generic_zh(core: str) -> tuple[str, str, str, bool]:
    from memory.write.lexicon import MULTI_VALUED

    m = _PROP_ZH.match(core)
    if m and not m.group(1).endswith(("用", "喜欢")):
        return "user", "prop:" + m.group(1), _clean_value_zh(m.group(2)), True
    m = _VERB_ZH.match(core)
    if m:
        subject = _subject_zh(m.group(1))
        attr = "verb:" + m.group(2)
        return subject, attr, _clean_value_zh(m.group(3)), attr not in MULTI_VALUED
    return "user", "", "", True


def _tokens_zh(core: str) -> tuple[str, ...]:
    core = core.replace("＠", " ")
    out = []
    for piece in re.findall(r"[ntd]\d+|[a-z][a-z0-9.+#-]*|\d+|[\u4e00-\u9fff]", core):
        if re.fullmatch(r"[ntd]\d+", piece):
            out.append(piece)
        elif piece not in STOP_ZH and piece.strip():
            out.append(piece)
    return tuple(out)
