"""Evaluation tools over labelled data: studies and sweeps, ranking, datasets (scenarios, LoCoMo), model
calibration and score scales, dedup pair sets, synthetic scenarios and the seed demo.

The names below are this package's public API (the lab imports them from here); its modules are
``study`` (sweeps and recommendations), ``results``, ``pools`` and ``vectors`` (the study's parts),
``ranking`` (dense, lexical and hybrid rankings of a dataset), ``datasets``, ``calibration``, ``pairs``
(dedup pair files and their evaluation), ``synth`` and ``demo``.
"""

from memory.eval.calibration import (
    Calibration, calibrate, compare, config_for, format_comparison, load_scales, map_threshold, scale_name,
)
from memory.eval.datasets import LOCOMO_PREFIX, Dataset, is_locomo, load_dataset, parse_locomo, scenario_dataset
from memory.eval.pairs import (
    ERROR_KINDS, MAX_TEXT_CHARS, PairItem, PairReport, PairResult, decide_pairs, error_kind, evaluate_pairs,
    load_pairs, pair_similarities, parse_pairs, shipped_pair_files,
)
from memory.eval.operating_point import (
    MAX_SETTINGS_BYTES, OperatingPoint, check_settings_size, content_hash, load_operating_point, load_studied,
    operating_point_from_study, parse_operating_point, study_provenance,
)
from memory.eval.ranking import MODES, Rankings, rank
from memory.eval.results import StudyResult, SweepRow
from memory.eval.study import (
    AT_K, DEFAULT_DECAY_RATES, DEFAULT_THRESHOLDS, DEFAULT_TOP_KS, Rule, parse_range, parse_rule, run_study, sweep,
    validate_options,
)

__all__ = [
    "AT_K", "Calibration", "DEFAULT_DECAY_RATES", "DEFAULT_THRESHOLDS", "DEFAULT_TOP_KS", "Dataset", "ERROR_KINDS",
    "LOCOMO_PREFIX", "MAX_SETTINGS_BYTES", "MAX_TEXT_CHARS", "MODES", "OperatingPoint", "PairItem", "PairReport", "PairResult", "Rankings", "StudyResult",
    "SweepRow", "calibrate", "compare", "config_for", "decide_pairs", "error_kind", "evaluate_pairs",
    "format_comparison", "is_locomo", "load_dataset", "check_settings_size", "load_operating_point", "load_pairs", "load_scales", "map_threshold", "operating_point_from_study", "pair_similarities",
    "content_hash", "load_studied", "study_provenance",
    "parse_locomo", "parse_operating_point", "parse_pairs", "parse_range", "parse_rule", "rank", "Rule", "run_study", "scale_name", "scenario_dataset",
    "shipped_pair_files", "sweep", "validate_options",
]
