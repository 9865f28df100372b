"""The reading of a (stored, incoming) pair as numbers: what the learned judge decides on.

Each feature is a question about the two readings (:mod:`memory.write.reading`) that does not depend on the
language: same subject and attribute, values equal or in conflict, polarity, an end or a change announced, an
addition, conditions on either side, another person, a habit beside one occurrence, shared wording, and the
cosine. The rules of :mod:`memory.write.adjudicate` are asked too, each one on its own ("would this rule decide
the pair?"), so the evidence they were written to find is weighed, not ranked by hand.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, NamedTuple

from memory.core.config import MemoryConfig
from memory.core.textcaches import text_cache
from memory.write.adjudicate import (
    AWAY, PAST, PRIORITY, RULES, THIRD_PARTY, Pair, Rule, attitude, change_event, departure, mentions, relations, same_content,
    same_value_set, specific, subjects_match, values_equal,
)
from memory.write.lang import language_of
from memory.write.lang.script import TOKEN, starts_chinese
from memory.write.lexicon import WEAK_CHANGE, additive_marker, change_marker
from memory.write.reading import Reading

_HABIT = re.compile(r"\b(?:usually|normally|typically|generally|always|every|each|daily|weekly|often|most days|tends? to|"
                    r"regularly|never)\b|平时|平常|通常|一般|每天|每周|每个?月|每晚|每早|总是|经常|常常|一直|向来|从不",
                    re.IGNORECASE)
_ONCE = re.compile(r"\b(?:today|tonight|yesterday|this (?:morning|afternoon|evening|week|weekend)|last (?:night|week|"
                   r"weekend|month|year|time)|just now|earlier today|on (?:monday|tuesday|wednesday|thursday|friday|"
                   r"saturday|sunday) (?:we|i))\b|今天|今晚|昨天|昨晚|刚才|今早|这周|上周|那天|这次", re.IGNORECASE)
_END = re.compile(r"\b(?:no longer|not anymore|any more|anymore|quit|stopped|gave up|given up|cancell?ed|called off|"
                  r"dropped|sold|ended|broke up|moved out|left|retired|resigned|unsubscribed|got rid of|don't .* anymore|"
                  r"isn't|aren't|wasn't|not)\b|不再|不[^\s，。]{0,4}了|没有?再|戒了|戒掉|辞职|离职|取消|退订|退掉|停了|停掉|"
                  r"卖了|卖掉|分手|搬走|退了|已经不|没了", re.IGNORECASE)

RULE_IDS: tuple[str, ...] = tuple(rule.id for rule in RULES)


def _surface(text: str) -> set[str]:
    return language_of(text).words(text)


def _units(text: str) -> set[str]:
    """A statement's wording as units: English words; Chinese characters and character pairs."""
    return language_of(text).units(text)


def changed_wording(old: str, new: str) -> tuple[list[str], list[str]]:
    """(units only the incoming statement has, units only the stored one has), sorted: "no longer", "also", "this
    time", "改到" show up here whatever the topic."""
    a, b = _units(old), _units(new)
    return sorted(b - a), sorted(a - b)


NO_CHANGE = "-"
"""The text of an empty side of :func:`changed_spans`."""


@text_cache(maxsize=8192)
def changed_spans(old: str, new: str) -> tuple[str, str]:
    """(what the incoming statement says that the stored one does not, and the reverse) as text, in sentence order:
    the inserted and replaced runs of a word-level diff (English words, Chinese characters), joined with " … ".
    ("User's meeting is at 3." / "The meeting moved to 4.") -> ("the … moved to 4", "user's … is at 3").
    The learned judge embeds both, so "no longer", "moved to", "this time", "也", "改到" weigh alike in any wording."""
    a, b = _tokens(old), _tokens(new)
    added: list[str] = []
    removed: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op in ("replace", "insert"):
            added.append(_join(b[j1:j2]))
        if op in ("replace", "delete"):
            removed.append(_join(a[i1:i2]))
    return " … ".join(added) or NO_CHANGE, " … ".join(removed) or NO_CHANGE


def _tokens(text: str) -> list[str]:
    return TOKEN.findall(text.replace("用户", "").lower())


def _join(tokens: list[str]) -> str:
    """Tokens back into text: a space between two words, none beside a Chinese character."""
    out = tokens[0]
    for prev, tok in zip(tokens, tokens[1:]):
        out += (" " if not starts_chinese(prev) and not starts_chinese(tok) else "") + tok
    return out


def _jaccard(a: "set[str] | frozenset[str]", b: "set[str] | frozenset[str]") -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


class _Marks(NamedTuple):
    """What one statement says on its own, asked once per text (a statement is paired with many others)."""

    change_marker: bool
    change_event: tuple[str, str] | None
    departure: str | None
    away: bool
    end_word: bool
    additive: bool
    relations: Any
    third_party: bool
    past: bool
    habit: bool
    once: bool
    attitude: Any
    surface: frozenset[str]


@text_cache(maxsize=8192)
def _marks(text: str) -> _Marks:
    return _Marks(change_marker(text) is not None, change_event(text), departure(text), bool(AWAY.search(text)),
                  bool(_END.search(text)), additive_marker(text) is not None, relations(text),
                  bool(THIRD_PARTY.search(text)), bool(PAST.search(text)), bool(_HABIT.search(text)),
                  bool(_ONCE.search(text)), attitude(text), frozenset(_surface(text)))


def pair_features(old: Reading, new: Reading, sim: float, config: MemoryConfig,
                  decided: list[tuple[Rule, dict[str, Any]]] | None = None) -> dict[str, float]:
    """name -> value for one pair (0/1 for a yes/no question). Every rule is asked; the first that fires, with its
    parameters, is appended to ``decided`` when given: the rules' own decision of the pair at cosine ``sim``
    (memory.write.adjudicate.judge_reason), so a caller that needs it too does not run the rules again."""
    p = Pair(old, new, sim, config)
    f: dict[str, float] = {}
    f["sim"] = sim
    f["sim_sq"] = sim * sim
    f["chinese"] = float(p.chinese)
    f["same_attr"] = float(p.same_attr)
    f["subjects_match"] = float(subjects_match(old, new))
    f["both_specific"] = float(specific(old) and specific(new))
    f["attrs_differ"] = float(specific(old) and specific(new) and old.attribute != new.attribute)
    f["no_attr"] = float(not old.attribute and not new.attribute)
    f["values_equal"] = float(p.same_attr and values_equal(old.value, new.value))
    f["value_set_same"] = float(same_value_set(p))
    f["conflict"] = float(p.conflict)
    f["values_only_new"] = float(bool(new.values) and not old.values)
    f["values_only_old"] = float(bool(old.values) and not new.values)
    f["old_negated"] = float(old.negated)
    f["new_negated"] = float(new.negated)
    f["negation_flip"] = float(old.negated != new.negated)
    f["new_changed"] = float(new.changed)
    f["old_changed"] = float(old.changed)
    mo, mn = _marks(old.text), _marks(new.text)
    marker = p.change_marker
    f["change_marker"] = float(marker is not None)
    f["strong_change"] = float(marker is not None and marker not in WEAK_CHANGE)
    f["old_change_marker"] = float(mo.change_marker)
    f["new_ceased"] = float(new.ceased)
    f["old_ceased"] = float(old.ceased)
    f["ceased_mentions"] = float(new.ceased and mentions(old, new.value))
    moved = mn.change_event
    f["change_event"] = float(moved is not None)
    f["change_event_old"] = float(moved is not None and mentions(old, moved[0].lower()))
    gone = mn.departure
    f["departure"] = float(gone is not None)
    f["departure_old"] = float(gone is not None and mentions(old, gone.lower()))
    f["away"] = float(mn.away)
    f["end_word_new"] = float(mn.end_word)
    f["end_word_old"] = float(mo.end_word)
    f["additive"] = float(mn.additive)
    f["old_additive"] = float(mo.additive)
    f["both_qualified"] = float(p.both_qualified)
    f["one_qualified"] = float(p.one_qualified)
    f["new_context_only"] = float(bool(new.context) and not old.context)
    f["old_context_only"] = float(bool(old.context) and not new.context)
    kinds_old, kinds_new = p.kinds
    f["kinds_differ"] = float(kinds_old != kinds_new)
    f["complementary"] = float(p.complementary)
    f["kinds_new_only"] = float(bool(kinds_new) and not kinds_old)
    rel_old, rel_new = mo.relations, mn.relations
    f["relations_differ"] = float(rel_old != rel_new)
    f["third_party_new"] = float(mn.third_party)
    f["third_party_old"] = float(mo.third_party)
    f["past_old"] = float(mo.past)
    habit_old, habit_new = mo.habit, mn.habit
    once_old, once_new = mo.once, mn.once
    f["habit_old_once_new"] = float(habit_old and once_new and not habit_new)
    f["once_old_habit_new"] = float(once_old and habit_new and not habit_old)
    f["once_new"] = float(once_new)
    f["attitude_differs"] = float(mo.attitude != mn.attitude)
    f["overlap"] = p.overlap
    f["surface_overlap"] = p.surface_overlap
    sa, sb = mo.surface, mn.surface
    f["jaccard"] = _jaccard(sa, sb)
    f["same_content"] = float(same_content(old, new))
    f["substitution"] = float(p.substitution is not None)
    f["shared_domain"] = float(bool(set(old.domains) & set(new.domains)))
    f["same_slot"] = float(p.same_slot)
    f["same_topic"] = float(p.same_topic)
    f["single_valued"] = float(old.single_valued and new.single_valued)
    f["len_ratio"] = min(len(old.text), len(new.text)) / max(len(old.text), len(new.text), 1)
    first = None
    for rule in RULES:
        params = rule.applies(p)
        f["rule:" + rule.id] = float(params is not None)
        if params is not None and first is None:
            first = rule
            if decided is not None:
                decided.append((rule, params))
    for verdict in PRIORITY:
        f["rules_say:" + verdict] = float(first is not None and first.verdict == verdict)
    return f
