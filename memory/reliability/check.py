"""What every reliability check returns: a :class:`Check` (cases tried, failures found, figures), gathered into a
:class:`Report`. The checks (the other modules of this package) import this module; the runner
(:mod:`memory.reliability.runner`) imports them: nothing imports back up.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

Progress = Callable[[str], None]
"""progress(name), called before each check runs."""


@dataclass
class Check:
    """One check of the report."""

    name: str
    cases: int = 0
    """How many cases (queries, canaries, inputs, kills) the check tried."""
    failures: int = 0
    """Leaks, canary bytes, accepted hostile inputs, lost or duplicated records: 0 is a pass."""
    figures: dict[str, Any] = field(default_factory=dict)
    """Further measured numbers."""


@dataclass
class Report:
    scale: int
    embedder: str
    checks: list[Check]

    @property
    def ok(self) -> bool:
        return all(c.failures == 0 for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "embedder": self.embedder, "ok": self.ok,
                "checks": [asdict(c) for c in self.checks]}

    def text(self) -> str:
        lines = [f"reliability report (scale {self.scale}, embedder {self.embedder})"]
        for c in self.checks:
            extra = ", ".join(f"{k}={v}" for k, v in c.figures.items())
            lines.append(f"  {'PASS' if c.failures == 0 else 'FAIL'}  {c.name:<16} cases={c.cases:<5} "
                         f"failures={c.failures:<3} {extra}")
        lines.append("all checks passed" if self.ok else "SOME CHECKS FAILED")
        return "\n".join(lines)
