"""The process-wide memos by text (memory.TextMemo, which lab.memo names for the lab): token counts and vectors by
text, bounded, forgettable, and in the registry of caches that hold user text (memory/core/textcaches.py)."""

from __future__ import annotations

import gc

import numpy as np

from memory import LexicalEmbedder

from memory.core import textcaches

from lab.memo import TextMemo
from lab.models import RememberingEmbedder


class Counting:
    """The real lexical embedder, counting the texts it is asked to embed (the memo must ask only for new ones)."""

    def __init__(self) -> None:
        self.inner = LexicalEmbedder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.asked: list[str] = []

    def embed(self, texts):
        self.asked += list(texts)
        return self.inner.embed(texts)


def test_a_memo_is_bounded_oldest_first_and_forgets_every_text_containing_a_fragment():
    memo: TextMemo[int] = TextMemo(maxsize=3)
    memo.update([("a cat", 1), ("a dog", 2), ("the cat sat", 3)])
    memo.put("a bird", 4)
    assert list(memo) == ["a dog", "the cat sat", "a bird"]
    assert memo.forget(["cat", ""]) == 1
    assert list(memo) == ["a dog", "a bird"] and memo.get("the cat sat") is None


def test_the_lab_memo_is_the_librarys_one_memo():
    assert TextMemo is textcaches.TextMemo


def test_a_memo_keyed_by_tuples_forgets_by_their_texts_and_reads_least_recent_first_with_lru():
    rome, bob, carol = ("gpt-x", "alice lives in Rome", "alice moved"), ("gpt-x", "bob", "bob too"), ("gpt-x", "c", "c")
    memo: TextMemo[str] = TextMemo(maxsize=2, lru=True, texts_of=lambda key: key[1:])
    memo.update([(rome, "update"), (bob, "new")])
    assert memo.get(rome) == "update"  # read: now the most recent, so bob's is the oldest
    memo.put(carol, "new")
    assert list(memo) == [rome, carol]
    assert memo.holding(textcaches.Texts(["gpt-x"])) == 0, "the model name is not a text of the key"
    assert memo.forget(["lives in Rome"]) == 1 and list(memo) == [carol]


def test_pieces_and_a_memo_that_cannot_tell():
    queries: TextMemo[int] = TextMemo(maxsize=10, pieces=True)
    queries.update([("locker code", 1), ("what is the weather", 2), ("", 3)])
    assert queries.forget(["My locker code is 4711."]) == 1  # a piece of the erased text
    assert list(queries) == ["what is the weather", ""]
    derived: TextMemo[int] = TextMemo(maxsize=10, tells=False)
    derived.update([("the … moved to 4", 1), ("unrelated", 2)])
    assert derived.holding(textcaches.Texts(["anything"])) == 2 and derived.forget(["anything"]) == 2
    assert len(derived) == 0
    assert TextMemo(maxsize=0).update([("a", 1)]) is None  # a memo of size 0 keeps nothing


def test_a_memo_is_registered_while_it_lives():
    memo: TextMemo[int] = TextMemo(maxsize=4, name="short-lived")
    assert any(cache is memo for cache in textcaches.registered_caches())
    del memo
    gc.collect()
    assert "short-lived" not in {cache.name for cache in textcaches.registered_caches()}


def test_remembered_vectors_equal_the_embedders_and_each_text_is_embedded_once():
    inner = Counting()
    memo = RememberingEmbedder(inner)
    first = ["I live in Berlin", "my budget is 300", "I live in Berlin"]
    assert np.array_equal(memo.embed(first), LexicalEmbedder().embed(first))
    assert inner.asked == ["I live in Berlin", "my budget is 300"]
    again = memo.embed(["my budget is 300", "I moved to Paris"])
    assert np.array_equal(again, LexicalEmbedder().embed(["my budget is 300", "I moved to Paris"]))
    assert inner.asked[2:] == ["I moved to Paris"]
    assert memo.embed([]).shape == (0, inner.dim)
    assert (memo.name, memo.dim) == (inner.name, inner.dim)


def test_a_returned_matrix_is_the_callers_own():
    memo = RememberingEmbedder(LexicalEmbedder())
    memo.embed(["one text"])[:] = 0
    assert np.linalg.norm(memo.embed(["one text"])[0]) > 0.99


def test_forgotten_texts_are_embedded_again():
    inner = Counting()
    memo = RememberingEmbedder(inner)
    memo.embed(["alice lives in Berlin", "bob likes tea"])
    assert memo.memo.forget(["alice"]) == 1
    memo.embed(["alice lives in Berlin", "bob likes tea"])
    assert inner.asked == ["alice lives in Berlin", "bob likes tea", "alice lives in Berlin"]


def test_minilm_vectors_from_the_memo_match_a_fresh_encode(minilm):
    """A text first embedded inside a batch and later asked alone gets the batch's vector: equal to the model's own
    single-text vector up to float rounding."""
    memo = RememberingEmbedder(minilm)
    texts = ["I moved to Lisbon last spring", "my flight leaves at 9", "a much longer sentence about a budget of 300"]
    memo.embed(texts)
    alone = minilm.embed([texts[1]])
    assert np.allclose(memo.embed([texts[1]]), alone, atol=1e-5)
