"""The English reader: a statement's subject, attribute, value and context (:func:`read`), a clause rewritten to stand
alone (:func:`stand_alone`), and the word tables and patterns only English statements need. The shared write path
reaches them through :data:`LANGUAGE` (memory.write.lang.language_of)."""

from __future__ import annotations

import re

from memory.write.lang.base import DEVICE_DOMAINS, VALUE_TOKEN_ATTRS, Language, Reading, read_diet
from memory.write.lang.script import is_chinese
from memory.write.lexicon import (
    ASIDES_EN, CESSATION_EN, CHANGE_EN, CONTEXT_WORDS, DIET_EN, FILLER_EN, JOB_NOUNS_EN, MONTHS_EN, NEGATION_EN, PARTS_EN, PHRASES_EN,
    PRODUCTS_EN, VERB_SKIP_EN, WEEKDAYS_EN, domains_of, normalize_values_en,
)

LANGUAGES_EN = ("japanese", "english", "french", "german", "chinese", "mandarin", "cantonese", "spanish", "korean",
                "italian", "portuguese", "russian", "arabic", "hindi", "dutch", "swedish")
STOP_EN = frozenset(
    "a an the user user's is am are was were be been being of to in on at by for with and or but it its this that "
    "these those some any very really quite also just still too so as do does did has have had will would can could "
    "should must may might there their they them he she his her we our you your every each about around roughly "
    "approximately than then much many more most usually often always mostly already yet".split()
)
_TIME_ADVERBS_EN = re.compile(
    r"\b(?:last|this|next) (?:week|month|year|weekend|summer|winter|spring|autumn)\b|\byesterday\b|\btoday\b|"
    r"\b(?:n\d+ )?(?:days?|weeks?|months?|years?) ago\b|\bthese days\b|\bnowadays\b|\bcurrently\b|\bat the moment\b|"
    r"\bfrom now on\b|\brecently\b|\blately\b|\banymore\b|\bany more\b|\bnow\b|\bjust\b"
)
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
_NEGATION_EN = re.compile(rf"\b(?:{'|'.join(NEGATION_EN)})\b")



def read(text: str) -> Reading:
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
    diet = read_diet(plain, DIET_EN)
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
        if attr in VALUE_TOKEN_ATTRS:
            token = re.search(r"\b[ntd]\d+\b", value)
            value = token.group(0) if token else value
        if attribute.startswith("count:"):
            attribute = "count:" + _lemma_noun(attribute[6:])
        return subject, attribute, value, single_valued, moved
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


# --- standing alone -------------------------------------------------------------------------------

_ADVERB_LEAD_EN = (r"(?:(?:also|really|usually|often|always|never|just|still|now|sometimes|mostly|normally|only|even|"
                   r"already|currently|finally|recently|actually|then|since)\s+)*")
_PAST_EN = ("got|bought|sold|quit|left|went|took|made|had|gave|ran|came|became|began|broke|brought|caught|chose|did|"
            "drank|drove|ate|fell|felt|found|flew|forgot|froze|grew|heard|held|hurt|kept|knew|lost|met|paid|put|rode|"
            "said|saw|sent|set|shut|sang|sat|slept|spent|spoke|stood|swam|taught|told|thought|threw|woke|wore|won|"
            "wrote|been|gone|done|seen|taken|given|got|gotten|sold|cut|let|dropped|swapped|traded|signed")
_NOT_PAST_EN = frozenset("need feed seed speed bleed breed shed bed red wed hundred sacred naked wicked beloved "
                         "tired excited bored married divorced engaged retired interested worried scared annoyed "
                         "disappointed pleased stressed obsessed based used supposed".split())
_STATES_EN = ("tired|excited|bored|married|divorced|engaged|retired|interested|worried|scared|annoyed|disappointed|"
              "pleased|stressed|obsessed|allergic|vegan|vegetarian|single|based|used to")
_AUX_EN = ("can't|cannot|can|could|couldn't|will|won't|would|wouldn't|should|shouldn't|must|might|may|is|isn't|was|"
           "wasn't|are|aren't|were|weren't|has|hasn't|have|haven't|had|hadn't|do|don't|does|doesn't|did|didn't|am|"
           "'m|'ve|'d|'ll")
_PRESENT_EN = "love|like|hate|need|want|prefer|live|work|enjoy|miss|wish|hope|plan|own|speak|study|train|commute"
OPENS_WITH_VERB = re.compile(
    rf"^{_ADVERB_LEAD_EN}(?:(?:{_PAST_EN}|{_AUX_EN}|{_PRESENT_EN}|{_STATES_EN})\b|(?!(?:{'|'.join(_NOT_PAST_EN)})\b)"
    rf"[a-z]{{2,}}ed\b)", re.I)
"""A clause that opens with its verb (after adverbs): it has no subject of its own ("deleted duolingo", "also got a
dog", "can't make it")."""
_SPEAKER_VERB_EN = re.compile(
    rf"^({_ADVERB_LEAD_EN})(?:({_STATES_EN})\b|(?:{_PAST_EN}|didn't|haven't|hadn't|wasn't|can't|won't|{_PRESENT_EN})\b|"
    rf"(?!(?:{'|'.join(_NOT_PAST_EN)})\b)[a-z]{{2,}}ed\b)", re.I)
"""A sentence that opens with a verb said of the speaker ("Deleted duolingo.", "Just got a dog.", "Love it here.",
"Allergic to nuts."): it gets "the user" as its subject. Not imperatives ("Use metric units.", "Don't forget ...")."""


_THIRD_PERSON = (
    (r"\bI'm\b|\bI am\b", "the user is"), (r"\bI've\b", "the user has"), (r"\bI'd\b", "the user would"),
    (r"\bI'll\b", "the user will"), (r"\bI was\b", "the user was"), (r"\bI have\b", "the user has"),
    (r"\bI do not\b|\bI don't\b", "the user does not"), (r"\bmyself\b", "the user"),
    (r"\bmy\b", "the user's"), (r"\bMy\b", "the user's"), (r"\bme\b", "the user"),
)
_NO_S = frozenset("can could will would should must may might shall did was bought went got had made took ate drank "
                  "used moved lived worked quit".split())
_ADVERBS = frozenset("also really usually often always never just still now sometimes mostly normally only even "
                     "already currently".split())


def _conjugate(verb: str) -> str:
    low = verb.lower()
    if low in _NO_S or low.endswith("ed") or re.fullmatch(_PAST_EN, low):
        return verb
    if low == "have":
        return verb[:-2] + "s"
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def stand_alone(clause: str, topic: str) -> str:
    s = clause.strip()
    speaker = _SPEAKER_VERB_EN.match(s)
    if speaker:  # "Deleted duolingo." / "Allergic to nuts.": said of the speaker
        rest = s[len(speaker.group(1)):]
        s = f"I {speaker.group(1).lower()}{'am ' if speaker.group(2) else ''}{rest[:1].lower()}{rest[1:]}"
    if topic:
        s = re.sub(r"^(?:not like|unlike) mine\b", f"unlike the user's current {topic}", s, flags=re.I)
        s = re.sub(r"\b(a|an|the) ((?:[a-z]+ )?)one\b", lambda m: f"{'a' if m.group(1) != 'the' else 'the'} {m.group(2)}{topic}", s)
        s = re.sub(r"\b(buy|get|want|order) one\b", rf"\1 a {topic}", s)
        s = re.sub(r"\bmine\b", f"the user's own {topic}", s)
        part = "|".join(sorted(PARTS_EN, key=len, reverse=True))
        s = re.sub(rf"^(?:the|its) ({part})\b", rf"the {topic}'s \1", s, flags=re.I)
    s = re.sub(r"^(?:with )?(?:a |the |my )?budget (?:of |is )?", "the user's budget is ", s, flags=re.I)
    for pat, rep in _THIRD_PERSON:
        s = re.sub(pat, rep, s)
    s = re.sub(r"\bmine\b", "the user's", s)

    def third(m: re.Match) -> str:
        words = m.group(1).split()
        out = []
        for i, w in enumerate(words):
            if w.lower() in _ADVERBS and i < len(words) - 1:
                out.append(w)
                continue
            out.append(_conjugate(w))
            out.extend(words[i + 1:])
            break
        return "the user " + " ".join(out)

    s = re.sub(r"\bI\b((?: (?:also|really|usually|often|always|never|just|still|now|sometimes|mostly|normally|only|even|"
               r"already|currently))* [A-Za-z]+)", third, s)
    s = re.sub(r"^the user\b", "The user", s)
    s = s[0].upper() + s[1:] if s else s
    return s.rstrip(".!;") + "."



# --- splitting a turn into clauses ---------------------------------------------------------------

_SUBORDINATORS_EN = re.compile(r"^(?:when|while|whenever|if|given|during|as for|before|after|unless|although|because|"
                               r"since|once)\b", re.I)
_PREPOSITIONS_EN = re.compile(r"^(?:for|on|at|in)\b", re.I)
_VERBISH_EN = re.compile(r"\b(?:is|am|are|was|were|be|been|has|have|had|do|does|did|will|would|can|could|should|must|"
                         r"need|needs|want|wants|like|likes|prefer|prefers|live|lives|work|works|use|uses|bought|buy|"
                         r"get|got|go|goes|went|make|makes|take|takes|love|loves|hate|hates|last|lasts)\b|\w+(?:ed|s)\b")
_POINTS_BACK_EN = re.compile(r"^(?:it|it's|its|they|they're|them|he|he's|she|she's|his|her|their|(?:this|that)(?!\s+(?:year|month|"
                             r"week|weekend|morning|afternoon|evening|night|time|summer|winter|spring|autumn|fall)\b))\b|"
                             r"\b(?:it|them)$", re.I)
"""A clause about the thing or person of the clause before it: it opens with a pronoun ("it ends in 9032", "he's
allergic", "that was last year") or ends with one ("my knee can't take it")."""
FRAGMENT_WORDS = 8
"""Longest English clause read for a predicate (:func:`is_fragment`); a longer one is taken as a clause."""
_HAS_SUBJECT_EN = re.compile(r"\b(?:i|i'm|we|we're|you|he|she|they|it|it's|is|are|was|were|am)\b|\w's\s+(?!own\b)[a-z]+$",
                             re.I)
"""A subject or a copula of its own ("once a week I ski", "the data's unlimited"): a clause, not a fragment."""
_NO_PREDICATE = frozenset({"", *(f"verb:{w}" for w in "a an the and or at in on of out all for to with by from over up "
                                                     "off per past".split())})
"""Readings with no predicate: none found, or a function word taken for the verb ("once a day", "Wed and Fri",
"leaving at seven", "spread out over the year")."""


def is_filler(stripped: str) -> bool:
    """An English pleasantry or acknowledgement (its :func:`memory.write.lexicon.filler_key`): "ok thanks"."""
    return stripped in ASIDES_EN or all(w in FILLER_EN for w in stripped.split())


def is_qualifier(clause: str) -> bool:
    """A leading qualifier that needs the next clause: "When writing Go", "For business trips"."""
    words = clause.split()
    if _SUBORDINATORS_EN.match(clause):
        return True
    return bool(_PREPOSITIONS_EN.match(clause)) and len(words) <= 4 and not re.search(r"\b(?:i|the user|he|she)\b", clause, re.I)


def continues(clause: str, same_sentence: bool) -> bool:
    """The clause needs the one before it (memory.write.extract.continues): it opens or ends with a pronoun, or, in the
    same sentence, it opens with its verb."""
    return bool(_POINTS_BACK_EN.search(clause)) or same_sentence and bool(OPENS_WITH_VERB.match(clause))


def is_fragment(clause: str) -> bool:
    """A clause without a predicate ("the black one", "on Tuesdays") or a relative clause ("which ...")."""
    if re.match(r"^(?:which|who|that|where)\b", clause, re.I):
        return True
    words = len(clause.split())
    if words <= 4 and not _VERBISH_EN.search(clause.lower()):
        return True
    # no predicate read: "on Tuesdays", "pedal-powered", "his name's Biscuit", "so excited", "Mon" (a clause that
    # opens with its verb is not one: continues() joins it with its subject)
    return (words <= FRAGMENT_WORDS and not OPENS_WITH_VERB.match(clause) and not _HAS_SUBJECT_EN.search(clause)
            and read(clause.strip()).attribute in _NO_PREDICATE)


# --- what the rules and the learned judge's features ask -----------------------------------------

DEPARTURES = (
    re.compile(r"\b(?:i|we)(?:'ve| have)?\s+(?:just\s+|finally\s+|recently\s+|already\s+)?(?:left|quit|dropped|ditched|"
               r"cancell?ed|sold|gave up|stopped using|moved out of|moved away from|got rid of)\s+(?:my\s+|our\s+|the\s+)?"
               r"(.{1,60}?)(?=\s+(?:and|but|so|to|for|in|at|on|last|this|after|because|since|back)\b|[,.;!]|$)",
               re.IGNORECASE),
    re.compile(r"\b((?!I\b|My\b|We\b|Our\b)[A-Z][\w.'-]{0,40}(?:\s+[A-Z][\w.'-]{0,40}){0,3})\s+(?:has\s+)?(?:left|quit|"
               r"retired|resigned|"
               r"moved on)\b"),
)
_SURFACE_STOP = frozenset("the user user's and with has have was were are for that this its our their".split())


def surface(text: str) -> frozenset[str]:
    """The content words of a statement (longer than two letters, a few function words out)."""
    return frozenset(w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2 and w not in _SURFACE_STOP)


def stems(text: str) -> frozenset[str]:
    """:func:`surface` with words cut to five letters ("night" / "nightly", "flight" / "flights")."""
    return frozenset(w[:5] for w in surface(text))


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


def units(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9']+", text.lower()))


LANGUAGE = Language(name="en", read=read, stand_alone=stand_alone, comma=", ", products=PRODUCTS_EN,
                    departures=DEPARTURES, surface=surface, stems=stems, words=words, units=units, is_filler=is_filler,
                    is_qualifier=is_qualifier, continues=continues, is_fragment=is_fragment)
