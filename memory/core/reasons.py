"""Why a write-time decision was taken: a reason code with its parameters, and its English sentence.

The judge (:mod:`memory.write.adjudicate`) and the write path (:mod:`memory.write.ingest`) return a :class:`Reason`,
never a sentence in some UI's language: ``code`` names the rule that fired (``"update.value_changed"``),
``params`` hold the values the sentence shows (already formatted where formatting is language-neutral, such as
``500,000`` or ``09:30``; attribute names raw, as the reading produced them, such as ``prop:budget``).
:meth:`Reason.text` gives the library's English sentence; a UI renders its own language from the same code
(the lab's Chinese sentences are in ``lab/reasons.py``). :data:`CODES` lists every code, and a test checks
that each has a sentence in both places.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

EN: dict[str, str] = {
    "new.no_candidate": "Nothing comparable is stored for this user and category.",
    "coexist.contexts": "Both hold, each in its own context ('{old_context}' vs '{new_context}'); both are kept "
                        "with their context tags.",
    "new.other_contexts": "Different contexts ('{old_context}' vs '{new_context}') and nothing else in common: "
                          "an unrelated fact.",
    "coexist.refines": "One fact is qualified ('{context}') and the other is general, so the qualified one refines "
                       "rather than replaces it; both are kept.",
    "update.polarity": "Same {attribute}, but the new fact {affirms_or_denies} it ({old} -> {new}): the old fact no "
                       "longer holds.",
    "duplicate.same_value": "Same {attribute} with the same value ({value}): a restatement, so the stored fact is "
                            "reinforced and no new vector is written.",
    "update.value_changed": "Same {attribute} with a new value ({old} -> {new}): the old fact is retired and "
                            "superseded by the new one.",
    "new.multi_valued": "{Attribute} can hold several values ({old}, {new}); the new one is added beside the old.",
    "update.ceased": "The new fact says '{value}' ended, which the stored fact describes as current.",
    "update.resumed": "The stored fact says '{value}' ended; the new fact says it holds again.",
    "update.change_event": "The new fact is a change from '{old}' to '{new}', and the stored fact states '{old}': "
                           "it is retired and superseded.",
    "update.departed": "The new statement says the stored value is gone ('{value}' left, was dropped or sold): the "
                       "old fact is retired and superseded.",
    "update.polarity_flip": "The same statement with its polarity flipped: the old fact no longer holds.",
    "update.value_swapped": "The same statement with one value swapped ('{old}' -> '{new}'): the old fact is "
                            "retired and superseded.",
    "new.adds_value": "The new fact adds a value beside the stored one ('{marker}'): both are kept.",
    "update.announced": "The new fact announces a change ('{marker}') on the stored fact's topic: the old fact is "
                        "retired and superseded.",
    "coexist.conditioned": "The new statement holds under a condition of its own ({new_context}; the stored one: "
                           "{old_context}): both hold, both are kept.",
    "coexist.qualified": "The same topic under different conditions ({old_kinds} vs {new_kinds}): both hold, both "
                         "are kept.",
    "duplicate.same_specifics": "The same names and values ({values}) in other words, and nothing that tells the two "
                                "apart: a restatement, so the new fact is not stored again.",
    "duplicate.same_values": "Other words with the same values ({values}) on the same topic: a restatement, so the "
                             "stored fact is reinforced.",
    "duplicate.same_content": "Close vectors and shared wording ({overlap}), and no value, condition, person or change "
                              "that tells them apart: a restatement.",
    "duplicate.paraphrase": "Different wording of the same content, and the vectors agree.",
    "new.other_attributes": "Different attributes ({old_attribute} vs {new_attribute}): an independent fact.",
    "duplicate.restatement": "A restatement: {overlap} of the content words are shared and no value differs; the "
                             "stored fact is reinforced.",
    "new.values_differ": "The values differ but no shared attribute was found, so nothing is retired: the fact is "
                         "stored beside the old one.",
    "new.unrelated": "No shared attribute, value or wording: an independent fact.",
    "bounded.read_prefix": "Facts were read from the first {read_chars} of {total_chars} characters "
                           "(read_chars={read_limit}){skipped}; the whole turn is stored as a raw record.",
    "plain.bands": "The plain two-band rule at similarity {similarity}: {verdict} (a judge for comparisons).",
    "model.same_fact": "The model ({model}) judged the new statement a restatement of the stored fact: nothing new "
                       "is stored.",
    "model.value_changed": "The model ({model}) judged that the same thing now has another value: the old fact is "
                           "retired and superseded by the new one.",
    "model.state_ended": "The model ({model}) judged that what the stored fact describes has ended or no longer "
                         "holds: the old fact is retired and superseded.",
    "model.different_condition": "The model ({model}) judged that both hold, each under its own condition: both "
                                 "are kept.",
    "model.added_value": "The model ({model}) judged that the new statement adds a value beside the stored one: "
                         "both are kept.",
    "model.different_subject": "The model ({model}) judged that the two statements are about different people or "
                               "things: an independent fact.",
    "model.unrelated": "The model ({model}) judged the two statements unrelated: an independent fact.",
    "model.fallback": "The model ({model}) gave no usable verdict ({cause}), so the fallback judge decided: "
                      "{fallback_text}",
    "learned.overruled": "The learned judge decided {verdict} ({confidence} likely, weighing the reading and both "
                         "statements' vectors); the rules alone would say {rules_verdict}: {fallback_text}",
    "legacy": "{text}",
}
"""Every reason code and its English sentence (``str.format`` fields are the code's parameters)."""

CODES: tuple[str, ...] = tuple(EN)
"""Every code a decision can carry. ``legacy`` is a decision logged before codes existed (its ``text``)."""

FALLBACK_PREFIX = "fallback."
"""``model.fallback`` keeps the fallback judge's own reason: its code (``fallback_code``), its English sentence
(``fallback_text``, for a reader of the log) and its parameters under this prefix, so every language renders it."""



@dataclass(frozen=True)
class Reason:
    """Why a decision was taken, in a form any UI can render."""

    code: str
    """The rule that fired, one of :data:`CODES` (``"update.value_changed"``)."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """The values its sentence shows: strings, numbers or booleans."""
    plain: tuple[float, str] | None = None
    """(similarity, verdict) of the plain two-band rule when it disagrees with this decision, else None."""

    def __post_init__(self) -> None:
        if self.code not in EN:
            raise ValueError(f"Reason.code must be one of {', '.join(CODES)}, got {self.code!r}")

    def text(self) -> str:
        """The English sentence (the library's language)."""
        return render_reason(self, ENGLISH)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "params": dict(self.params)}
        if self.plain is not None:
            out["plain"] = [round(self.plain[0], 6), self.plain[1]]
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Reason":
        """Back from :meth:`to_dict`; a log entry written before codes (only ``reason``) becomes ``legacy``."""
        if "code" not in d:
            return cls("legacy", {"text": str(d.get("reason", ""))})
        plain = d.get("plain")
        return cls(str(d["code"]), dict(d.get("params") or {}), (float(plain[0]), str(plain[1])) if plain else None)


@dataclass(frozen=True)
class Language:
    """What one language needs to render reasons: a sentence per code and the few words they are built from."""

    templates: Mapping[str, str]
    """A ``str.format`` sentence per code of :data:`CODES`."""
    attribute: Callable[[str], str]
    """Shows a raw attribute name (``prop:budget``) in this language."""
    plain_suffix: str
    """Appended when the plain rule disagrees; fields ``similarity`` and ``verdict``."""
    affirms: str
    denies: str
    negation: str
    """Put before a negated value ("not vegetarian")."""
    skipped: str
    """The bounded reason's note on clauses too long to be a fact; field ``n``."""


def render_reason(reason: Reason, lang: Language) -> str:
    """A reason's sentence in ``lang``."""
    p = dict(reason.params)
    for key in ("attribute", "old_attribute", "new_attribute"):
        if key in p:
            p[key] = lang.attribute(str(p[key]))
    if "attribute" in p:
        p["Attribute"] = p["attribute"][:1].upper() + p["attribute"][1:]
    if "new_negated" in p:  # update.polarity: each side with its polarity
        p["affirms_or_denies"] = lang.denies if p["new_negated"] else lang.affirms
        p["old"] = (lang.negation if p.get("old_negated") else "") + str(p.get("old", ""))
        p["new"] = (lang.negation if p["new_negated"] else "") + str(p.get("new", ""))
    if "overlap" in p:
        p["overlap"] = f"{float(p['overlap']):.0%}"
    if "long_clauses" in p:
        p["skipped"] = lang.skipped.format(n=p["long_clauses"]) if p["long_clauses"] else ""
    code = p.get("fallback_code")
    if isinstance(code, str) and code in lang.templates:  # model.fallback: the judge that stood in, in this language
        inner = {k.removeprefix(FALLBACK_PREFIX): v for k, v in p.items() if k.startswith(FALLBACK_PREFIX)}
        p["fallback_text"] = render_reason(Reason(code, inner), lang)
    text = lang.templates[reason.code].format(**p)
    if reason.plain is not None:
        text += lang.plain_suffix.format(similarity=reason.plain[0], verdict=reason.plain[1])
    return text


def show_attribute(attribute: str) -> str:
    """An attribute as the reading names it (``prop:budget``), in English words (``budget``)."""
    kind, _, rest = attribute.partition(":")
    if kind == "verb":
        return f"'{rest}' statement"
    if kind == "prop":
        return rest
    if kind in ("device", "habit", "count", "name"):
        return f"{kind} of {rest}"
    if kind == "prefer":
        return "preference between " + " and ".join(rest.split("|"))
    return attribute


ENGLISH = Language(EN, show_attribute, " (The plain rule, at similarity {similarity:.2f}, would say {verdict}.)",
                   affirms="affirms", denies="denies", negation="not ",
                   skipped=", {n} clause(s) too long to be a fact not read")
"""The library's language."""
