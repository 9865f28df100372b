"""Encoding once: length-sorted batches in the MiniLM embedder, one pass per study, exact cosines."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from memory.core.config import MemoryConfig
from memory.eval.datasets import load_dataset
from memory.embed.embedders import LexicalEmbedder, SentenceTransformerEmbedder, length_batches, padded_tokens
from memory.core.errors import InputError
from memory.eval.ranking import rank
from memory.store.chroma import MemoryStore
from memory.eval.vectors import KnownVectors, cosines, encode_once
from counting import CountingEmbedder

MIXED = [
    "Hi.", "I moved to Lisbon last spring and I have been learning Portuguese ever since, slowly.",
    "Dogs.", "My sister is a nurse.", "Hi.", "We went hiking in the Alps for two weeks in August, it rained a lot.",
    "ok", "The budget is 500,000 yuan.", "My sister is a nurse.", "Tea or coffee?",
]


def test_sorted_batches_return_rows_in_the_input_order(minilm):
    small = SentenceTransformerEmbedder(batch_size=3)  # the same loaded model, so several batches
    got = small.embed(MIXED)
    alone = np.stack([minilm.embed([t])[0] for t in MIXED])  # each text on its own: no padding, no order
    assert got.shape == (len(MIXED), minilm.dim) and got.dtype == np.float32
    assert np.allclose(got, alone, atol=1e-5)
    assert np.array_equal(got[0], got[4]) and np.array_equal(got[3], got[8])  # duplicates: encoded once


def test_length_batches_group_similar_lengths_and_pad_less(minilm):
    lengths = minilm.token_lengths(MIXED * 7)
    assert lengths[1] > lengths[0] and lengths[0] == lengths[4]  # the tokenizer's own count, special tokens in
    batches = length_batches(lengths, 8)
    order = np.concatenate(batches)
    assert sorted(order.tolist()) == list(range(len(lengths)))
    assert list(lengths[order]) == sorted(lengths, reverse=True)
    in_order = [np.arange(i, min(i + 8, len(lengths))) for i in range(0, len(lengths), 8)]
    assert padded_tokens(lengths, batches) < padded_tokens(lengths, in_order)
    assert padded_tokens(np.array([3, 5, 2]), [np.array([0, 1]), np.array([2])]) == 5 * 2 + 2


def test_encode_once_sends_each_distinct_text_once_longest_first():
    emb = CountingEmbedder(LexicalEmbedder())
    vectors = encode_once(MIXED, emb, chunk=4)
    sent = emb.texts
    assert sorted(sent) == sorted(set(MIXED)) and list(vectors) == list(dict.fromkeys(MIXED))
    assert [len(t) for t in sent] == sorted((len(t) for t in sent), reverse=True)
    assert all(len(call) <= 4 for call in emb.calls)
    for t in MIXED:
        assert np.array_equal(vectors[t], LexicalEmbedder().embed([t])[0])


def test_known_vectors_answer_without_the_model_and_count_misses():
    inner = CountingEmbedder(LexicalEmbedder())
    known = KnownVectors(inner, encode_once(MIXED[:3], LexicalEmbedder()))
    out = known.embed([MIXED[2], MIXED[0], "something new", "something new"])
    assert inner.calls == [["something new"]] and known.misses == 1
    assert np.array_equal(out[2], out[3]) and (known.name, known.dim) == (inner.name, inner.dim)
    assert known.embed([]).shape == (0, inner.dim)


def test_cosines_are_dot_products_of_the_known_vectors():
    vectors = encode_once(MIXED, LexicalEmbedder())
    sims = cosines(vectors, MIXED[:2], MIXED[3:])
    assert sims.shape == (2, len(MIXED) - 3)
    assert sims[1, 3] == pytest.approx(float(vectors[MIXED[1]] @ vectors[MIXED[6]]), abs=1e-6)
    assert cosines(vectors, [], MIXED).shape == (0, len(MIXED))


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_a_study_encodes_every_text_once_and_never_queries_the_store_per_question(mode, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the study queried the store per question")

    monkeypatch.setattr(MemoryStore, "query", refuse)
    monkeypatch.setattr(MemoryStore, "scan", refuse)
    data = load_dataset("workshop_en")
    emb = CountingEmbedder(LexicalEmbedder())
    rankings = rank(data, mode=mode, embedder=emb)
    sent = emb.texts
    distinct = {m.text for m in data.memories} | {q.text for q in data.questions}
    assert sorted(sent) == sorted(distinct)
    assert rankings.encoded == len(distinct) and rankings.encoded_again == 0 and rankings.pool_missing == 0


def test_a_text_over_the_limit_fails_before_anything_is_encoded():
    data = load_dataset("workshop_en")
    too_long = "x" * (MemoryConfig().max_message_chars + 1)
    bad = replace(data, memories=(replace(data.memories[0], text=too_long), *data.memories[1:]))
    emb = CountingEmbedder(LexicalEmbedder())
    with pytest.raises(InputError, match=rf"messages\[0\] \({data.memories[0].id}\) content is"):
        rank(bad, mode="dense", embedder=emb)
    assert emb.calls == []
