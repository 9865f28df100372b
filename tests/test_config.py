import math

import pytest

from memory import ConfigError, MemoryConfig


def test_defaults_are_valid_and_documented_bands():
    cfg = MemoryConfig()
    assert (cfg.duplicate_band, cfg.conflict_band) == (0.92, 0.78)
    assert cfg.to_dict()["threshold"] == cfg.threshold


@pytest.mark.parametrize(
    "field, value, fragment",
    [
        ("threshold", 1.5, "[0.0, 1.0]"),
        ("threshold", -0.1, "[0.0, 1.0]"),
        ("threshold", math.nan, "finite"),
        ("decay_rate", math.inf, "finite"),
        ("top_k", 0, "[1, 1000]"),
        ("top_k", 2.5, "whole number"),
        ("top_k", True, "must be a number"),
        ("window_size", "4", "must be a number"),
        ("token_budget", -1, "[0, 1000000]"),
        ("alpha", None, "must be a number"),
    ],
)
def test_invalid_values_name_field_and_range(field, value, fragment):
    with pytest.raises(ConfigError) as err:
        MemoryConfig(**{field: value})
    assert f"MemoryConfig.{field}" in str(err.value)
    assert fragment in str(err.value)


def test_band_order_and_weights_are_checked():
    with pytest.raises(ConfigError, match="conflict_band"):
        MemoryConfig(conflict_band=0.95, duplicate_band=0.9)
    with pytest.raises(ConfigError, match="all weights are zero"):
        MemoryConfig(alpha=0, beta=0, gamma=0)


def test_replace_validates_and_rejects_unknown_fields():
    cfg = MemoryConfig().replace(threshold=0.5)
    assert cfg.threshold == 0.5
    with pytest.raises(ConfigError, match="no field 'treshold'"):
        MemoryConfig().replace(treshold=0.5)
    with pytest.raises(ConfigError, match="threshold"):
        MemoryConfig().replace(threshold=2)
    assert MemoryConfig.from_dict({"top_k": 3}).top_k == 3
