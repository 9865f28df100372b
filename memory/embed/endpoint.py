"""Bring your own embedder: an OpenAI-compatible embeddings endpoint, or a local model folder.

:class:`EndpointEmbedder` lets a deployment use whatever embedding service it already runs
(vLLM, text-embeddings-inference, Ollama, LiteLLM, OpenAI itself) instead of the bundled
MiniLM. :func:`local_model_dir` checks a user-given sentence-transformers folder before
:class:`~memory.embed.embedders.SentenceTransformerEmbedder` tries to load it, so a typo is a
one-line message rather than a library traceback.

Only the standard library talks HTTP (memory/core/http.py, shared with the chat judge): nothing new to install,
nothing downloaded.
The API key never appears in ``repr``, in error messages or in their causes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import urllib.parse
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from memory.embed.batching import dedupe
from memory.core.errors import EmbedderError
from memory.core.http import PostFailed, Poster

URL_ENV = "MEMORY_EMBEDDINGS_URL"
MODEL_ENV = "MEMORY_EMBEDDINGS_MODEL"
KEY_ENV = "MEMORY_EMBEDDINGS_API_KEY"
FALLBACK_KEY_ENV = "OPENAI_API_KEY"
BATCH_ENV = "MEMORY_EMBEDDINGS_BATCH"
TIMEOUT_ENV = "MEMORY_EMBEDDINGS_TIMEOUT"

MODEL_MARKERS = ("config.json", "modules.json", "config_sentence_transformers.json")
"""A folder holding none of these is not a sentence-transformers (or transformers) model."""

PROBE_TEXT = "dimension probe"
"""Embedded once at construction when ``dim`` is not given, to learn the endpoint's dimension."""

_SERVER_TEXT_LIMIT = 300
_NAME_LIMIT = 60
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]")


class EndpointEmbedder:
    """Embeddings from an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

    Rows come back float32 and unit length like every other embedder's, checked before
    they can reach a store: a short, ragged, non-finite, zero or wrong-dimension answer is
    an :class:`EmbedderError` naming the batch, never a silently corrupted index.
    """

    def __init__(
        self, *, base_url: str, model: str, api_key: str | None = None, batch_size: int = 64,
        timeout: float = 30.0, retries: int = 3, backoff: float = 0.5, dim: int | None = None,
    ) -> None:
        self.base_url = check_url(base_url, "base_url")
        self.model = check_model(model, "model")
        self._api_key = check_api_key(api_key)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.timeout = check_seconds(timeout, "timeout", positive=True)
        self.retries = check_int(retries, "retries", minimum=0)
        self.backoff = check_seconds(backoff, "backoff", positive=False)
        self.url = self.base_url + "/embeddings"
        self.name = _endpoint_name(self.base_url, self.model)
        self.dim = 0 if dim is None else check_int(dim, "dim", minimum=1)
        if dim is None:
            self.dim = self._request([PROBE_TEXT], "the dimension probe").shape[1]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> EndpointEmbedder:
        """Configure from ``MEMORY_EMBEDDINGS_*`` variables, so a deployment switches embedder without code.

        The API key falls back to ``OPENAI_API_KEY`` because that is where most setups already keep it.
        """
        url = check_url(required(environ, URL_ENV), URL_ENV)
        model = check_model(required(environ, MODEL_ENV), MODEL_ENV)
        options: dict[str, Any] = {}
        if batch := environ.get(BATCH_ENV, "").strip():
            options["batch_size"] = _parse_int(batch, BATCH_ENV)
        if timeout := environ.get(TIMEOUT_ENV, "").strip():
            options["timeout"] = parse_seconds(timeout, TIMEOUT_ENV)
        key_variable = KEY_ENV if environ.get(KEY_ENV, "").strip() else FALLBACK_KEY_ENV
        api_key = check_api_key(environ.get(key_variable, "").strip() or None, key_variable)
        return cls(base_url=url, model=model, api_key=api_key, **options)

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"EndpointEmbedder(url={self.url!r}, model={self.model!r}, dim={self.dim}, api_key={key})"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Rows in input order; identical texts are sent once, distinct ones in batches of ``batch_size``."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        unique, where = dedupe(texts)
        out = np.empty((len(unique), self.dim), dtype=np.float32)
        count = math.ceil(len(unique) / self.batch_size)
        for number, start in enumerate(range(0, len(unique), self.batch_size), start=1):
            batch = unique[start : start + self.batch_size]
            out[start : start + len(batch)] = self._request(batch, f"batch {number} of {count} ({len(batch)} texts)")
        return out[where]

    # --- one request -------------------------------------------------------------

    def _request(self, texts: list[str], where: str) -> np.ndarray:
        """Embed one batch: POST with retries, then parse and check the rows."""
        payload = json.dumps({"model": self.model, "input": texts}).encode("utf-8")
        body = self._post_with_retries(payload, where)
        return self._rows(body, len(texts), where)

    def _post_with_retries(self, payload: bytes, where: str) -> bytes:
        """POST through the shared client (memory/core/http.py): what may pass on its own (connection, timeout,
        429, 5xx) is retried with exponential backoff; any other HTTP error is final. The server's error text is
        kept (the key taken out of it)."""
        poster = Poster(self.url, self._headers(), timeout=self.timeout, retries=self.retries, backoff=self.backoff,
                        keep_error_text=True)
        try:
            return poster.post(payload).body
        except PostFailed as failed:
            if not failed.transient:
                raise EmbedderError(f"POST {self.url} answered HTTP {failed.status} for {where} (not retried): "
                                    f"{self._described(failed)}") from None
            raise EmbedderError(f"POST {self.url} failed for {where} after {failed.attempts} attempt(s); last: "
                                f"{self._described(failed)}") from None

    def _described(self, failed: PostFailed) -> str:
        """A failed POST in a few words: the status and the server's (redacted) text, or what failed."""
        if failed.kind == "status":
            text = self._redact(_server_text(failed))
            return text if not failed.transient else f"HTTP {failed.status}: {text}"
        if failed.kind == "timeout":
            return f"no answer within {self.timeout:g} s"
        return _connection_text(failed.reason)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _redact(self, text: str) -> str:
        """Servers sometimes echo the credentials they rejected; never pass the key on."""
        return text.replace(self._api_key, "[api key]") if self._api_key else text

    def _rows(self, body: bytes, expected: int, where: str) -> np.ndarray:
        """The response's embeddings as unit float32 rows in index order, or an error naming the batch."""
        fail = f"POST {self.url} for {where}"
        items = _data_items(body, fail)
        if len(items) != expected:
            raise EmbedderError(f"{fail}: the endpoint returned {len(items)} rows for {expected} texts")
        if sorted(item["index"] for item in items) != list(range(expected)):
            raise EmbedderError(f"{fail}: the row indexes are not 0..{expected - 1}, one each")
        rows = _matrix([item["embedding"] for item in sorted(items, key=lambda item: item["index"])], fail)
        if self.dim and rows.shape[1] != self.dim:
            raise EmbedderError(f"{fail}: rows have dimension {rows.shape[1]}, expected {self.dim}")
        return _unit_rows(rows, fail)


# --- checking the answer ---------------------------------------------------------


def _data_items(body: bytes, fail: str) -> list[dict[str, Any]]:
    """The ``data`` list of an OpenAI embeddings response, each item with an int ``index`` and a list ``embedding``."""
    try:
        parsed = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise EmbedderError(f"{fail}: the answer is not JSON: {_truncate(body.decode('utf-8', 'replace'))}") from None
    items = parsed.get("data") if isinstance(parsed, dict) else None
    if not isinstance(items, list):
        raise EmbedderError(f"{fail}: the answer has no 'data' list")
    for position, item in enumerate(items):
        if not (isinstance(item, dict) and type(item.get("index")) is int and isinstance(item.get("embedding"), list)):
            raise EmbedderError(f"{fail}: data[{position}] lacks an integer 'index' or a list 'embedding'")
    return items


def _matrix(vectors: list[list[Any]], fail: str) -> np.ndarray:
    """Rows as a float64 matrix: all of one length and all finite numbers."""
    lengths = sorted({len(v) for v in vectors})
    if len(lengths) > 1 or lengths == [0]:
        raise EmbedderError(f"{fail}: rows have different or zero dimensions {lengths}")
    try:
        rows = np.array(vectors, dtype=np.float64)
    except (TypeError, ValueError):
        raise EmbedderError(f"{fail}: an embedding holds something that is not a number") from None
    if not np.isfinite(rows).all():
        bad = sorted({int(r) for r in np.nonzero(~np.isfinite(rows))[0]})
        raise EmbedderError(f"{fail}: rows {bad} hold NaN or infinite values")
    return rows


def _unit_rows(rows: np.ndarray, fail: str) -> np.ndarray:
    """Rows scaled to unit length, so a dot product is the cosine; a zero row has no direction."""
    norms = np.linalg.norm(rows, axis=1)
    if (norms == 0).any():
        raise EmbedderError(f"{fail}: rows {np.nonzero(norms == 0)[0].tolist()} are zero vectors")
    return (rows / norms[:, None]).astype(np.float32)


def _server_text(failed: PostFailed) -> str:
    """The server's own error message (OpenAI's ``error.message`` when present), shortened."""
    raw = failed.error_text
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error", parsed.get("detail"))
        raw = str(error.get("message", error)) if isinstance(error, dict) else str(error or raw)
    return _truncate(raw or failed.phrase or "no error text")


def _connection_text(reason: object) -> str:
    if isinstance(reason, TimeoutError):
        return "connection timed out"
    return f"{type(reason).__name__}: {reason}"


def _truncate(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _SERVER_TEXT_LIMIT else text[:_SERVER_TEXT_LIMIT] + "…"


# --- naming and configuration ------------------------------------------------------


def _endpoint_name(base_url: str, model: str) -> str:
    """``openai_MODEL_HOST_PORT-HASH``: readable, store-safe, and distinct per endpoint and model.

    The readable part is cut to 60 characters, so the sha1 of the full URL and model is what
    keeps two long model names on one host apart.
    """
    parts = urllib.parse.urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    readable = _UNSAFE_NAME_CHARS.sub("_", f"openai:{model}@{parts.hostname}:{port}")[:_NAME_LIMIT]
    digest = hashlib.sha1(f"{base_url}\x1f{model}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{readable}-{digest}"


# The checks below are shared with the model-backed judge (memory.write.judges.chat), which raises its own error
# class (``error``) and appends its own path: one set of rules for every OpenAI-compatible client here.


def check_url(url: object, field: str, *, error: type[Exception] = EmbedderError, path: str = "/embeddings",
              key_env: str = KEY_ENV) -> str:
    """An http(s) URL with a host and nothing after the path, without its trailing slash."""
    if not isinstance(url, str) or not url.strip():
        raise error(f"{field} must be an http:// or https:// URL, got {url!r}")
    url = url.strip().rstrip("/")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a port that is not a number
    except ValueError:
        raise error(f"{field} is not a valid URL: {url!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise error(f"{field} must be an http:// or https:// URL with a host, got {url!r}")
    if parts.username or parts.password:
        raise error(f"{field} must not hold credentials; pass the key as api_key / {key_env}")
    if parts.query or parts.fragment:
        raise error(f"{field} must not have a query or fragment ({path} is appended), got {url!r}")
    return url


def check_model(model: object, field: str, *, error: type[Exception] = EmbedderError) -> str:
    if not isinstance(model, str) or not model.strip():
        raise error(f"{field} must be a non-empty model name, got {model!r}")
    return model.strip()


def check_api_key(api_key: object, field: str = "api_key", *, error: type[Exception] = EmbedderError) -> str | None:
    """None, or a key that fits in a header; the message never shows the key itself."""
    if api_key is None:
        return None
    if not isinstance(api_key, str) or not api_key or any(c.isspace() or not c.isprintable() for c in api_key):
        raise error(f"{field} must be a non-empty string without spaces or control characters")
    return api_key


def check_int(value: object, field: str, *, minimum: int, error: type[Exception] = EmbedderError) -> int:
    if type(value) is not int or value < minimum:
        raise error(f"{field} must be an integer >= {minimum}, got {value!r}")
    return value


def check_seconds(value: object, field: str, *, positive: bool, error: type[Exception] = EmbedderError) -> float:
    if (not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value)
            or value < 0 or (positive and value == 0)):
        bound = "> 0" if positive else ">= 0"
        raise error(f"{field} must be a finite number of seconds {bound}, got {value!r}")
    return float(value)


def required(environ: Mapping[str, str], variable: str, *, what: str = "the endpoint embedder",
             error: type[Exception] = EmbedderError) -> str:
    value = environ.get(variable, "").strip()
    if not value:
        raise error(f"{variable} is not set; it is required for {what}")
    return value


def _parse_int(text: str, variable: str) -> int:
    try:
        return check_int(int(text), variable, minimum=1)
    except ValueError:
        raise EmbedderError(f"{variable} must be an integer >= 1, got {text!r}") from None


def parse_seconds(text: str, variable: str, *, error: type[Exception] = EmbedderError) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise error(f"{variable} must be a number of seconds > 0, got {text!r}") from None
    return check_seconds(seconds, variable, positive=True, error=error)


# --- a local model folder ------------------------------------------------------------


def local_model_dir(spec: str) -> Path:
    """The folder ``spec`` names, checked to look like a sentence-transformers model.

    Loading a wrong folder fails deep inside the library (or tries a model hub); checking
    first gives a message that names the path and what is missing.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise EmbedderError(f"a local model folder must be a non-empty path, got {spec!r}")
    path = Path(spec.strip()).expanduser()
    if not path.exists():
        raise EmbedderError(f"local model folder {path} does not exist")
    if not path.is_dir():
        raise EmbedderError(f"local model folder {path} is not a directory")
    if not any((path / marker).is_file() for marker in MODEL_MARKERS):
        raise EmbedderError(
            f"local model folder {path} holds none of {', '.join(MODEL_MARKERS)}: "
            "it is not a sentence-transformers model folder"
        )
    return path.resolve()


class PrecomputedEmbedder:
    """Vectors computed elsewhere, for a study of a model this machine cannot run.

    The file is a NumPy ``.npz`` with two arrays: ``texts`` (strings: every memory and question
    text of the dataset, exactly) and ``vectors`` (shape (len(texts), dim), finite, not zero);
    rows are normalised here. Optional ``model`` (a string) names the model in reports. A text the
    file does not hold is an EmbedderError naming the file and the text: nothing is guessed.
    Read through :mod:`memory.core.safefile` (a regular file, size-capped); no pickles are loaded.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        import io

        from memory.core.errors import DataFileError
        from memory.core.safefile import read_regular_file, shown

        self.path = shown(path)
        raw = read_regular_file(path, what="vectors file")
        if not raw.startswith(b"PK\x03\x04"):
            raise DataFileError(f"{self.path}: not a NumPy .npz file (np.savez writes one: a zip of .npy arrays)")
        try:
            with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
                arrays = {k: npz[k] for k in npz.files}
        except (ValueError, OSError, EOFError) as exc:
            raise DataFileError(f"{self.path}: not a NumPy .npz file without pickles: {exc}") from None
        for key in ("texts", "vectors"):
            if key not in arrays:
                raise DataFileError(f"{self.path}: the .npz has no {key!r} array (it has: {', '.join(arrays) or 'none'})")
        texts, vectors = arrays["texts"], arrays["vectors"]
        if texts.ndim != 1 or texts.dtype.kind != "U":
            raise DataFileError(f"{self.path}: 'texts' must be a 1-d array of strings, got {texts.dtype} {texts.shape}")
        if vectors.ndim != 2 or len(vectors) != len(texts) or vectors.dtype.kind not in "fi":
            raise DataFileError(f"{self.path}: 'vectors' must be numbers of shape ({len(texts)}, dim), "
                                f"got {vectors.dtype} {vectors.shape}")
        if not np.isfinite(vectors).all():
            raise DataFileError(f"{self.path}: 'vectors' holds NaN or infinite values")
        rows = _unit_rows(np.asarray(vectors, dtype=np.float32), f"{self.path}: vectors")
        self.vectors = dict(zip(texts.tolist(), rows))
        self.dim = int(rows.shape[1])
        model = str(arrays["model"]) if "model" in arrays else Path(self.path).stem
        digest = hashlib.sha1(raw).hexdigest()[:8]
        self.name = "vectors-" + _UNSAFE_NAME_CHARS.sub("_", model)[:_NAME_LIMIT] + "-" + digest

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self.vectors]
        if missing:
            raise EmbedderError(f"{self.path}: no vector for {len(missing)} text(s), e.g. {_truncate(missing[0])!r}; "
                                "the file must hold every memory and question text of the dataset")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts])
