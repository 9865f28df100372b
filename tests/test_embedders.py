import numpy as np
import pytest

from memory import EmbedderError, LexicalEmbedder, make_embedder
from memory.embedders import (
    MINILM_SHA256, MODEL_DIR_ENV, SentenceTransformerEmbedder, bundled_model_dir, lexical_cosine, lexical_tokens,
    verify_model_file,
)


def test_minilm_is_the_verified_bundled_model(minilm):
    assert minilm.name == "minilm" and minilm.dim == 384
    assert minilm.model_dir == bundled_model_dir()
    verify_model_file(bundled_model_dir() / "model.safetensors", MINILM_SHA256)  # does not raise
    vecs = minilm.embed(["hello world", "The campaign budget is 500,000 yuan."])
    assert vecs.shape == (2, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_minilm_scores_the_design_traps_as_documented(minilm):
    a, b, c, d = minilm.embed([
        "The campaign budget is 500,000 yuan.", "The campaign budget is 300,000 yuan.",
        "The user lives in Hangzhou.", "The user lives in Shanghai now.",
    ])
    assert float(a @ b) == pytest.approx(0.93, abs=0.02)  # a "duplicate" by the plain bands
    assert float(c @ d) == pytest.approx(0.76, abs=0.02)  # "new" by the plain bands


def test_model_is_loaded_once_per_process(minilm):
    again = SentenceTransformerEmbedder()
    assert again._model is minilm._model


def test_corrupted_or_missing_weights_fail_clearly(tmp_path):
    bad = tmp_path / "model.safetensors"
    bad.write_bytes(b"not the weights")
    with pytest.raises(EmbedderError, match="sha256"):
        verify_model_file(bad)
    with pytest.raises(EmbedderError, match="not found"):
        verify_model_file(tmp_path / "missing.safetensors")


def test_override_directory_that_does_not_exist_fails_clearly(tmp_path, monkeypatch):
    monkeypatch.setenv(MODEL_DIR_ENV, str(tmp_path / "nope"))
    with pytest.raises(EmbedderError, match="not a directory"):
        SentenceTransformerEmbedder()


def test_unknown_embedder_name():
    with pytest.raises(EmbedderError, match="unknown embedder 'bert'"):
        make_embedder("bert")


def test_lexical_tokens_follow_the_seed():
    assert lexical_tokens("记忆污染 阈值 Agent") == ["记忆污染", "阈值", "agent", "记忆", "忆污", "污染", "阈值"]
    assert lexical_tokens("ok，thanks。") == ["ok", "thanks"]


def test_lexical_embedder_matches_exact_scorer_on_seed_pairs():
    emb = LexicalEmbedder()
    q = "记忆污染 阈值 Agent"
    for text, seed_score in [("如何治理记忆污染？", 0.354), ("请记录，第二篇要讨论记忆污染。", 0.277)]:
        v = emb.embed([q, text])
        assert round(float(v[0] @ v[1]), 3) == seed_score == round(lexical_cosine(q, text), 3)


def test_lexical_embedder_never_returns_a_zero_vector():
    v = LexicalEmbedder().embed(["，。", "word"])
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0)
    assert float(v[0] @ v[1]) == 0.0
