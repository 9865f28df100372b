"""Where tests find the LoCoMo sample (never copied into this repository: CC BY-NC 4.0).

Tests that need it call :func:`require_locomo`: when the file is absent they skip with a
reason, unless ``MEMORY_REQUIRE_DATASETS=1`` (CI sets it), in which case absence fails.
"""

from __future__ import annotations

import os

import pytest

from conftest import LOCOMO_SAMPLE

REQUIRE_ENV = "MEMORY_REQUIRE_DATASETS"


def require_locomo() -> str:
    """The sample's path, or skip / fail when it is missing."""
    if os.path.isfile(LOCOMO_SAMPLE):
        return LOCOMO_SAMPLE
    message = f"LoCoMo sample not found at {LOCOMO_SAMPLE}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message} and {REQUIRE_ENV}=1 requires it")
    pytest.skip(f"{message} (set {REQUIRE_ENV}=1 to make this a failure)")
