"""The lab's process-wide memos (lab.memo.TextMemo): token counts and vectors by text, bounded, forgettable."""

from __future__ import annotations

import numpy as np

from memory import LexicalEmbedder

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
    memo.put([("a cat", 1), ("a dog", 2), ("the cat sat", 3)])
    memo.put([("a bird", 4)])
    assert list(memo) == ["a dog", "the cat sat", "a bird"]
    assert memo.forget(["cat", ""]) == 1
    assert list(memo) == ["a dog", "a bird"] and memo.get("the cat sat") is None


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
