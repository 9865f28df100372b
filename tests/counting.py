"""A wrapper that records what a real embedder is asked to embed, for tests about how many model calls a path
makes or which texts it sends (the vectors come from the wrapped model unchanged)."""

from __future__ import annotations


class CountingEmbedder:
    """Delegates every call to ``inner`` and records each call's texts in ``calls``."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.calls: list[list[str]] = []

    @property
    def texts(self) -> list[str]:
        """Every text asked for, in order, across calls."""
        return [t for call in self.calls for t in call]

    def embed(self, texts):
        self.calls.append(list(texts))
        return self.inner.embed(texts)
