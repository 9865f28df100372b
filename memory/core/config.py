"""MemoryConfig: every knob of the engine, its default and its allowed range, in one place."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from memory.core.errors import ConfigError

# name -> (low, high, kind). Ranges are inclusive. Kind "int" rejects floats and bools.
_RANGES: dict[str, tuple[float, float, str]] = {
    "threshold": (0.0, 1.0, "float"),
    "top_k": (1, 1000, "int"),
    "window_size": (1, 1000, "int"),
    "decay_rate": (0.0, 10.0, "float"),
    "alpha": (0.0, 10.0, "float"),
    "beta": (0.0, 10.0, "float"),
    "gamma": (0.0, 10.0, "float"),
    "duplicate_band": (0.0, 1.0, "float"),
    "conflict_band": (0.0, 1.0, "float"),
    "token_budget": (0, 1_000_000, "int"),
    "overfetch": (1, 100, "int"),
    "summary_max_chars": (40, 100_000, "int"),
    "max_message_chars": (1, 10_000_000, "int"),
}


@dataclass(frozen=True)
class MemoryConfig:
    """All tunable parameters of recall, the window and the write path.

    Construct with keyword arguments; invalid values raise :class:`ConfigError`
    naming the field and its allowed range. Use :meth:`replace` to derive a copy.
    """

    threshold: float = 0.30
    """Minimum cosine similarity (higher is more similar) for governed recall."""
    top_k: int = 5
    """How many memories governed recall returns at most; blind recall returns exactly this many when it can."""
    window_size: int = 6
    """Messages kept verbatim per (tenant, user) before the oldest is folded into the summary."""
    decay_rate: float = 0.05
    """Per-day rate of the recency term exp(-decay_rate * age_days); 0 disables decay."""
    alpha: float = 0.70
    """Weight of similarity in the composite score."""
    beta: float = 0.20
    """Weight of recency in the composite score."""
    gamma: float = 0.10
    """Weight of importance (or access frequency, whichever is higher) in the composite score."""
    duplicate_band: float = 0.92
    """Plain-rule band: similarity at or above this is a duplicate."""
    conflict_band: float = 0.78
    """Plain-rule band: similarity in [conflict_band, duplicate_band) is a conflict to adjudicate."""
    token_budget: int = 400
    """Most tokens of long-term memory injected into one context; 0 injects none."""
    overfetch: int = 4
    """Governed recall asks the store for top_k * overfetch candidates before cutting."""
    summary_max_chars: int = 600
    """Upper bound on the rolling summary's length."""
    max_message_chars: int = 100_000
    """Longer messages are rejected with an InputError rather than stored."""

    def __post_init__(self) -> None:
        for name, (low, high, kind) in _RANGES.items():
            value = getattr(self, name)
            _check(name, value, low, high, kind)
        if self.conflict_band > self.duplicate_band:
            raise ConfigError(
                f"MemoryConfig.conflict_band ({self.conflict_band}) must not exceed "
                f"duplicate_band ({self.duplicate_band})"
            )
        if self.alpha + self.beta + self.gamma <= 0:
            raise ConfigError("MemoryConfig.alpha + beta + gamma must be > 0 (all weights are zero)")

    def replace(self, **changes: Any) -> "MemoryConfig":
        """A validated copy with some fields changed; unknown names raise ConfigError."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ConfigError(f"MemoryConfig has no field {unknown[0]!r}; known: {', '.join(sorted(known))}")
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MemoryConfig":
        """Build from a mapping (e.g. URL query values already parsed); unknown keys are an error."""
        return cls().replace(**data)

    @staticmethod
    def range_of(name: str) -> tuple[float, float]:
        """The inclusive (low, high) range of a numeric field, for sliders and validation."""
        low, high, _ = _RANGES[name]
        return low, high



def _check(name: str, value: Any, low: float, high: float, kind: str) -> None:
    where = f"MemoryConfig.{name}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where} must be a number in [{low}, {high}], got {type(value).__name__} {value!r}")
    if kind == "int" and not isinstance(value, int):
        raise ConfigError(f"{where} must be a whole number in [{low}, {high}], got {value!r}")
    if isinstance(value, int) and not -(10**15) <= value <= 10**15:  # also never a 5,000-digit int to float
        digits = int(value.bit_length() * 0.30103) + 1
        raise ConfigError(f"{where} must be in [{low}, {high}], got a number of about {digits} digits")
    if not math.isfinite(value):
        raise ConfigError(f"{where} must be a finite number in [{low}, {high}], got {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"{where} must be in [{low}, {high}], got {value!r}")

DEFAULT_CONFIG = MemoryConfig()
"""The default configuration, one frozen instance: what a call given no configuration uses (building and validating
a new one per judgement cost a fifth of a memoised rules judgement)."""
