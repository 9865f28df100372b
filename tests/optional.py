"""Optional packages in tests: the agent adapters' (requirements-adapters.txt) are not in the default install."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

REQUIRE_ENV = "MEMORY_REQUIRE_ADAPTERS"
"""Set to 1 by .ci/run: there a missing adapter package fails the test instead of skipping it."""


def require_adapter_package(name: str) -> ModuleType:
    """The imported package, or a skip naming the install command (a failure when MEMORY_REQUIRE_ADAPTERS=1)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        reason = f"{name} is not installed: pip install -r requirements-adapters.txt (the agent adapters' extras)"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {reason}")
        pytest.skip(reason, allow_module_level=True)
