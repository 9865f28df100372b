"""Studies of a model this machine cannot run: vectors computed elsewhere, read from a .npz (``vectors:FILE``)."""

from __future__ import annotations

import numpy as np
import pytest

from memory import make_embedder
from memory.eval.calibration import compare
from memory.eval.datasets import load_dataset
from memory.embed.endpoint import PrecomputedEmbedder
from memory.core.errors import DataFileError, EmbedderError, MemoryLabError


def _texts(dataset) -> list[str]:
    return list(dict.fromkeys([m.text for m in dataset.memories] + [q.text for q in dataset.questions]))


@pytest.fixture(scope="module")
def zh():
    return load_dataset("recall_zh")


@pytest.fixture(scope="module")
def e5_file(zh, tmp_path_factory):
    """The e5 vectors of every text of recall_zh, scaled by 3 (the file's rows need not be unit length)."""
    texts = _texts(zh)
    path = tmp_path_factory.mktemp("vec") / "e5.npz"
    np.savez(path, texts=np.array(texts), vectors=3.0 * make_embedder("e5").embed(texts), model=np.array("brought e5"))
    return path


@pytest.mark.model
def test_a_study_on_brought_vectors_equals_the_study_on_the_model(zh, e5_file):
    brought, own = compare(zh, runs=[("dense", f"vectors:{e5_file}"), ("dense", "e5")])
    assert brought.embedder.startswith("vectors-brought_e5-") and brought.embedder != own.embedder
    assert np.allclose(brought.relevant, own.relevant, atol=1e-5)
    assert {k: a.recall for k, a in brought.at_k.items()} == pytest.approx({k: a.recall for k, a in own.at_k.items()})


@pytest.mark.model
def test_rows_come_back_unit_length_in_the_asked_order(zh, e5_file):
    emb = PrecomputedEmbedder(e5_file)
    texts = _texts(zh)[:3][::-1]
    rows = emb.embed(texts)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert np.allclose(rows, make_embedder("e5").embed(texts), atol=1e-5)


@pytest.mark.model
def test_a_text_the_file_lacks_is_an_error_naming_the_file(e5_file):
    with pytest.raises(EmbedderError, match=r"e5\.npz: no vector for 1 text.*'not in the file'"):
        PrecomputedEmbedder(e5_file).embed(["not in the file"])


@pytest.mark.parametrize("arrays, fragment", [
    ({"vectors": np.ones((2, 3))}, "no 'texts' array"),
    ({"texts": np.array(["a", "b"])}, "no 'vectors' array"),
    ({"texts": np.array(["a", "b"]), "vectors": np.ones((3, 3))}, "shape (2, dim)"),
    ({"texts": np.array([1, 2]), "vectors": np.ones((2, 3))}, "1-d array of strings"),
    ({"texts": np.array(["a", "b"]), "vectors": np.array([[1.0, np.nan], [1.0, 0.0]])}, "NaN or infinite"),
    ({"texts": np.array(["a", "b"]), "vectors": np.array([[0.0, 0.0], [1.0, 0.0]])}, "zero vectors"),
])
def test_a_malformed_file_is_refused_whole_naming_the_array(tmp_path, arrays, fragment):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(MemoryLabError) as err:
        PrecomputedEmbedder(path)
    assert fragment in str(err.value) and "bad.npz" in str(err.value)


def test_pickles_and_non_npz_files_are_refused(tmp_path):
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, texts=np.array(["a"], dtype=object), vectors=np.ones((1, 2)))
    with pytest.raises(DataFileError, match="pickled.npz"):
        PrecomputedEmbedder(pickled)
    text = tmp_path / "text.npz"
    text.write_text("texts,vectors\n")
    with pytest.raises(DataFileError, match=r"text\.npz: not a NumPy \.npz file"):
        PrecomputedEmbedder(text)
    with pytest.raises(DataFileError, match="directory"):
        PrecomputedEmbedder(tmp_path)
