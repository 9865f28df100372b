"""The test session's memo of model vectors (tests/conftest.py: VectorMemo): a text reaches the real model once per
worker, and what the memo serves again is what the model gives."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from memory import make_embedder

pytestmark = pytest.mark.model


@pytest.mark.parametrize("name", ["minilm", "e5"])
def test_a_text_reaches_the_model_once_and_its_vector_is_the_models(name, vector_memo):
    if not vector_memo.enabled:
        pytest.skip("MEMORY_TEST_VECTOR_MEMO=0: the memo is off for this run")
    embedder = make_embedder(name)
    new = f"The memo's own sentence {uuid.uuid4().hex}: a user moved to Lisbon."
    others = ["short", "A much longer sentence about a campaign budget that was raised to 500,000 yuan in May."]
    before = vector_memo.encoded
    first = embedder.embed([new, *others])
    assert vector_memo.encoded - before >= 1, "a text never seen goes to the model"
    seen = vector_memo.encoded
    again = embedder.embed([others[1], new, new])
    assert vector_memo.encoded == seen, "texts seen before do not reach the model again"
    assert np.array_equal(again[1], first[0]) and np.array_equal(again[2], first[0])
    assert again.dtype == np.float32 and again.shape == (3, embedder.dim)
    vector_memo.on = False  # the model itself, this text alone
    alone = embedder.embed([new])
    vector_memo.on = True
    assert np.allclose(alone[0], first[0], atol=1e-5), "the memo serves what the model gives the text"


@pytest.mark.no_vector_memo
def test_a_test_marked_no_vector_memo_runs_without_it(minilm, vector_memo):
    assert not vector_memo.on
    before = vector_memo.encoded
    minilm.embed([f"never seen before {uuid.uuid4().hex}"])  # the memo, were it on, would count this text
    assert vector_memo.encoded == before
