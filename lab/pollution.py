"""Pollution kinds, one-click injections and the unisolated "teaching sandbox".

A recalled memory is polluted for a query of ``owner`` when it is:

* ``private``: another (tenant, user)'s data (only an unisolated ranking can contain it);
* ``erased``: data of a user who was erased (nothing may return it);
* ``noise`` / ``stale`` / ``contradiction``: so labelled in the scenario or by an injection,
  unless the query lists it as relevant;
* ``forbidden``: listed in the labelled query's ``forbidden`` ids, with no kind above.

The sandbox ranks plain numpy cosine over every owner's stored vectors, fetched owner by owner
through the store's isolated reads: it shows what top-k would inject *without* isolation,
without weakening the library (whose reads are always scoped by tenant and user).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from memory import MemoryManager, MemoryRecord, Message, ScenarioQuery, lexical_tokens

POLLUTION_KINDS: tuple[str, ...] = ("noise", "private", "stale", "contradiction", "erased", "forbidden")
LABELLED_KINDS = ("noise", "stale", "contradiction")
INJECTIONS: tuple[str, ...] = ("noise", "private", "stale", "contradiction", "erased")
DAY = 86400.0
NEIGHBOUR = "neighbour"
"""User id the "another user's private data" injection writes as (same tenant as the chosen user)."""
LEAVER = "leaver"
"""User id the "erased user" injection writes as, then erases."""

Owner = tuple[str, str]


def kinds_of(
    record: MemoryRecord, *, owner: Owner, labels: dict[str, tuple[str, ...]], query: ScenarioQuery | None = None,
    erased: set[str] | frozenset[str] = frozenset(),
) -> tuple[str, ...]:
    """The pollution kinds of one recalled record for a query of ``owner`` (empty: clean)."""
    mid = record.message_id or record.memory_id
    if (record.tenant_id, record.user_id) != tuple(owner):
        return ("private",)
    if mid in erased:
        return ("erased",)
    if query is not None and mid in query.relevant:
        return ()
    kinds = tuple(k for k in labels.get(mid, ()) if k in LABELLED_KINDS)
    if not kinds and query is not None and mid in query.forbidden:
        return ("forbidden",)
    return kinds


# --- injections ---------------------------------------------------------------------------------

_TEMPLATES: dict[str, dict[str, list[str]]] = {
    # {q}: the query; {qs}: the query without its closing question mark; {kw}: its two most telling words.
    # Words are space-separated so the lexical embedder (which splits on whitespace) sees them too.
    # The stale pair is one statement with a changed value ("... is 470,000." / "... is 380,000 now."), which
    # the write path (memory.write.ingest) reads as an update of the same fact: with the sidebar's write path on
    # "facts" the old one is deprecated; with "raw" both stay active. The private note is the query itself plus a
    # few words, so the unisolated sandbox ranks it in its top-k even after the other injections.
    "en": {
        "noise": ["lol, {kw} again? whatever. what's for lunch?",
                  "random thought about {kw} while getting coffee, nothing to note",
                  "sorry, say that again? something about {kw}, I was not listening"],
        "private": ["Private note: {q} (account 4471)"],
        "stale": ['The answer to the question "{qs}" is 470,000.',
                  'The answer to the question "{qs}" is 380,000 now.'],
        "contradiction": ["Correction: {q} Forget what I said before, the opposite is true now."],
        "erased": ["{q} My personal answer, which I asked you to forget: it is in my diary."],
    },
    "zh": {
        "noise": ["哈哈 {kw} 又来了？算了，中午吃什么？",
                  "喝咖啡时随便想到 {kw} ，没什么要记的。",
                  "刚才没听清，你再说一遍？好像是关于 {kw} 的。"],
        "private": ["私密笔记： {q} （账户 4471）"],
        "stale": ["问题“{qs}”的答案是47万。",
                  "问题“{qs}”的答案现在是38万。"],
        "contradiction": ["更正： {q} 忘掉我之前说的，现在正好相反。"],
        "erased": ["{q} 我的个人答案，我已要求你忘掉它：写在我的日记里。"],
    },
}
_QUESTION_END = re.compile(r"[\s?？吗呢]+$")
_STOP = {
    "what", "which", "when", "where", "does", "the", "user", "have", "any", "is", "are", "now", "how", "like",
    "and", "for", "with", "that", "this", "about", "into", "from", "your", "you", "my", "do", "to", "a", "of",
}


@dataclass(frozen=True)
class Injection:
    """Messages one click writes, and whom it erases afterwards."""

    kind: str
    """One of INJECTIONS."""
    messages: list[Message]
    """In write order; each carries its pollution label (the stale fact's update carries none)."""
    erase: Owner | None = None
    """The owner erased right after writing (the "erased user" injection)."""


def keywords(query: str, n: int = 2) -> str:
    """The query's ``n`` most telling words (longest non-stopwords, in query order), space-separated."""
    words = [w for w in re.split(r"[\s,.;:!?，。；：！？、“”\"'()（）]+", query) if w and w.lower() not in _STOP]
    if not words:
        words = lexical_tokens(query) or [query.strip()]
    longest = sorted(range(len(words)), key=lambda i: (-len(words[i]), i))[:n]
    return " ".join(words[i] for i in sorted(longest))


def plan_injection(kind: str, *, owner: Owner, query: str, as_of: float, language: str, seq: int) -> Injection:
    """The messages of one injection for ``owner``'s ``query`` evaluated at ``as_of``; ``seq`` keeps ids unique."""
    if kind not in INJECTIONS:
        raise ValueError(f"kind must be one of {', '.join(INJECTIONS)}, got {kind!r}")
    texts = _TEMPLATES["zh" if language.startswith("zh") else "en"][kind]
    tenant_id, user_id = owner
    author = {"private": NEIGHBOUR, "erased": f"{LEAVER}-{seq}"}.get(kind, user_id)
    kw = keywords(query)
    qs = _QUESTION_END.sub("", query.strip())
    qs = qs[:1].lower() + qs[1:]
    messages = []
    for i, text in enumerate(texts):
        # The stale fact is two months old, its update a day old; the rest a few hours old.
        age = (60 * DAY if i == 0 else DAY) if kind == "stale" else 3600.0 * (len(texts) - i)
        label = () if kind == "stale" and i == 1 else (kind,)
        messages.append(Message(
            tenant_id=tenant_id, user_id=author, content=text.format(kw=kw, q=query.strip(), qs=qs), role="user",
            id=f"inj-{seq}-{kind}-{i}", session_id="lab-injection", timestamp=as_of - age, labels=label,
        ))
    return Injection(kind, messages, erase=(tenant_id, author) if kind == "erased" else None)


# --- teaching sandbox -------------------------------------------------------------------------------

@dataclass(frozen=True)
class SandboxHit:
    """A record ranked by the unisolated sandbox."""

    record: MemoryRecord
    similarity: float
    """Plain cosine of the stored vector with the query vector."""


def unisolated_top_k(
    manager: MemoryManager, query: str, k: int, *, exclude: set[str] | dict[str, str] = frozenset(),
) -> list[SandboxHit]:
    """Top-k by cosine over EVERY owner's records in the workspace: what a store without isolation returns.

    Each owner's records and vectors come from the store's own isolated reads (one owner at a
    time); only this function, for teaching, puts them in one ranking. Records whose message id
    is in ``exclude`` are left out (the "before injections" ranking).
    """
    vec = manager.embed_query(query)
    pool: list[SandboxHit] = []
    for tenant_id, user_id in manager.owners():
        records = [r for r in manager.records(tenant_id=tenant_id, user_id=user_id, scope="hot")
                   if r.message_id not in exclude]
        vectors = manager.embeddings([r.memory_id for r in records], tenant_id=tenant_id, user_id=user_id)
        pool += [SandboxHit(r, float(np.dot(vectors[r.memory_id], vec))) for r in records if r.memory_id in vectors]
    pool.sort(key=lambda h: (-h.similarity, h.record.memory_id))
    return pool[:k]
