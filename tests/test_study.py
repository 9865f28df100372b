"""The study runner: its numbers against independent computations, ranges, rules, determinism, output.

The independent computations use numpy cosine over the embedder's own vectors (no Chroma,
no govern) and hand-counted relevant sets; they must agree with the runner exactly.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from locomo_data import require_locomo
from memory import MemoryConfig, govern
from memory.eval.datasets import load_dataset, scenario_dataset
from memory.embed.embedders import LexicalEmbedder
from memory.core.errors import InputError
from memory.eval.ranking import HYBRID_WEIGHT, bm25_tokens, rank
from memory.eval.pools import composite_pools
from memory.eval.study import parse_range, parse_rule, recommend, run_study, sweep, validate_options

DAY = 86400.0

# A small hand-made dataset: two users, five questions (one with no answer).
HAND = {
    "name": "hand-made",
    "messages": [
        {"id": "a1", "tenant_id": "acme", "user_id": "ann", "content": "Ann's dog is called Pepper."},
        {"id": "a2", "tenant_id": "acme", "user_id": "ann", "content": "Ann works as a nurse at the city hospital."},
        {"id": "a3", "tenant_id": "acme", "user_id": "ann", "content": "Ann is allergic to peanuts."},
        {"id": "a4", "tenant_id": "acme", "user_id": "ann", "content": "Ann's favourite dessert is lemon cake."},
        {"id": "a5", "tenant_id": "acme", "user_id": "ann", "content": "The weather was rainy on Tuesday.",
         "labels": ["noise"]},
        {"id": "a6", "tenant_id": "acme", "user_id": "ann", "content": "Ann adopted a second dog named Biscuit."},
        {"id": "b1", "tenant_id": "acme", "user_id": "ben", "content": "Ben's dog is called Rex."},
        {"id": "b2", "tenant_id": "acme", "user_id": "ben", "content": "Ben plays the trumpet in a jazz band."},
        {"id": "b3", "tenant_id": "acme", "user_id": "ben", "content": "Ben is allergic to cats."},
        {"id": "b4", "tenant_id": "acme", "user_id": "ben", "content": "Lunch was a cheese sandwich.", "labels": ["noise"]},
    ],
    "queries": [
        {"id": "q1", "tenant_id": "acme", "user_id": "ann", "query": "What are the names of Ann's dogs?",
         "relevant": ["a1", "a6"], "forbidden": ["b1"]},
        {"id": "q2", "tenant_id": "acme", "user_id": "ann", "query": "What food allergy does Ann have?",
         "relevant": ["a3"], "forbidden": ["b3"]},
        {"id": "q3", "tenant_id": "acme", "user_id": "ben", "query": "Which instrument does Ben play?",
         "relevant": ["b2"], "forbidden": []},
        {"id": "q4", "tenant_id": "acme", "user_id": "ben", "query": "What is Ben's favourite dessert?",
         "relevant": [], "forbidden": ["a4"]},
        {"id": "q5", "tenant_id": "acme", "user_id": "ann", "query": "What is Ann's job?",
         "relevant": ["a2"], "forbidden": []},
    ],
}
for _i, _m in enumerate(HAND["messages"]):
    _m["timestamp"] = f"2026-05-{_i + 1:02d}T09:00:00Z"
for _q in HAND["queries"]:
    _q["as_of"] = "2026-06-01T00:00:00Z"


@pytest.fixture(scope="module")
def hand(tmp_path_factory):
    path = tmp_path_factory.mktemp("hand") / "hand.json"
    path.write_text(json.dumps(HAND), encoding="utf-8")
    return scenario_dataset(path)


@pytest.fixture(scope="module")
def workshop():
    return load_dataset("workshop_en")


@pytest.fixture(scope="module")
def workshop_lexical_dense(workshop):
    """Dense mode with the seed's lexical embedder: cheap, no model."""
    return rank(workshop, mode="dense", embedder="lexical")


# --- the independent computation --------------------------------------------------------

def cosines(dataset, embedder) -> dict[str, dict[str, float]]:
    """question id -> {memory id: cosine} over the question owner's memories (numpy, no store)."""
    out = {}
    by_owner = {o: dataset.memories_of(o) for o in dataset.owners()}
    vecs = {o: embedder.embed([m.text for m in ms]) for o, ms in by_owner.items()}
    qvecs = embedder.embed([q.text for q in dataset.questions])
    for q, qv in zip(dataset.questions, qvecs):
        sims = vecs[q.owner] @ qv
        out[q.id] = {m.id: float(s) for m, s in zip(by_owner[q.owner], sims)}
    return out


def injected(cos: dict[str, float], threshold: float, top_k: int) -> tuple[list[str], bool]:
    """Top-k of the memories at or above the threshold; and whether a float near-tie makes it ambiguous."""
    order = sorted(cos, key=lambda i: (-cos[i], i))
    passing = [i for i in order if cos[i] >= threshold]
    # float32 noise (~1e-7) between Chroma and numpy could only matter for a memory this close to
    # the threshold that would otherwise be among the top k
    borderline = [i for i in order if cos[i] >= threshold - 1e-6][:top_k]
    near_threshold = any(abs(cos[i] - threshold) < 1e-6 for i in borderline)
    near_tie = len(passing) > top_k and abs(cos[passing[top_k - 1]] - cos[passing[top_k]]) < 1e-6
    return passing[:top_k], near_threshold or near_tie


def expected_metrics(dataset, cos, threshold, top_k):
    relevant_injected = labelled_injected = 0
    recalls, empties, total = [], [], 0
    ambiguous = False
    for q in dataset.questions:
        ids, amb = injected(cos[q.id], threshold, top_k)
        ambiguous |= amb
        total += len(ids)
        if q.answerable:
            found = sum(i in q.relevant for i in ids)
            recalls.append(Fraction(found, len(q.relevant)))
            relevant_injected += found
            labelled_injected += len(ids)
        elif q.no_answer:
            empties.append(not ids)
            labelled_injected += len(ids)
    return {
        "precision": None if not labelled_injected else Fraction(relevant_injected, labelled_injected),
        "recall": sum(recalls, Fraction(0)) / len(recalls),
        "avg_injected": Fraction(total, len(dataset.questions)),
        "no_answer_empty_rate": Fraction(sum(empties), len(empties)) if empties else None,
    }, ambiguous


def expected_at_k(dataset, cos, k):
    items = []
    for q in dataset.questions:
        if q.answerable:
            top, _ = injected(cos[q.id], -2.0, k)
            items.append(sum(i in q.relevant for i in top))
    answerable = [q for q in dataset.questions if q.answerable]
    recall = sum((Fraction(f, len(q.relevant)) for f, q in zip(items, answerable)), Fraction(0)) / len(items)
    precision = sum((Fraction(f, k) for f in items), Fraction(0)) / len(items)
    return recall, precision


def assert_row_matches(row, expected):
    for key, value in expected.items():
        got = getattr(row, key)
        if value is None:
            assert got is None, key
        else:
            assert got == pytest.approx(float(value), abs=1e-12), (key, row.threshold, row.top_k)


# --- dense numbers vs the independent computation --------------------------------------

def test_dense_numbers_match_numpy_on_the_hand_made_dataset(hand, minilm):
    thresholds, top_ks = [0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.95], [1, 2, 3]
    cos = cosines(hand, minilm)
    result = run_study(hand, mode="dense", embedder=minilm, thresholds=thresholds, top_ks=top_ks, decay_rates=[0])
    assert len(result.sweep) == len(thresholds) * len(top_ks)
    for row in result.sweep:
        expected, ambiguous = expected_metrics(hand, cos, row.threshold, row.top_k)
        assert not ambiguous, "pick thresholds away from the cosines so the comparison is sound"
        assert_row_matches(row, expected)
    for k in (1, 5, 10):
        recall, precision = expected_at_k(hand, cos, k)
        assert result.at_k[k].recall == pytest.approx(float(recall), abs=1e-12)
        assert result.at_k[k].precision == pytest.approx(float(precision), abs=1e-12)
    # hand-counted: every user has <= 10 memories, so the top 10 hold every relevant one
    assert result.at_k[10].recall == 1.0
    assert result.at_k[10].precision == pytest.approx((2 + 1 + 1 + 1) / 40)
    # and the data is plain enough that the best match is relevant for every answerable question
    assert result.at_k[1].precision == 1.0 and result.at_k[1].recall == pytest.approx((0.5 + 1 + 1 + 1) / 4)
    top = result.row(threshold=0.95, top_k=3)
    assert (top.precision, top.recall, top.f1, top.no_answer_empty_rate, top.avg_injected) == (None, 0.0, 0.0, 1.0, 0.0)
    assert all(r.isolation_leaks == 0 for r in result.sweep)
    # the forbidden ids of q1/q2/q4 belong to the other user: isolation keeps them out
    assert all(r.forbidden_hits == 0 for r in result.sweep)


class Recording:
    """Wraps an embedder and keeps every vector it returned (text -> vector), so the independent
    numpy computation reuses the model's output instead of running the model a second time."""

    def __init__(self, inner):
        self.inner, self.name, self.dim, self.vectors = inner, inner.name, inner.dim, {}

    def embed(self, texts):
        out = self.inner.embed(texts)
        self.vectors.update(zip(texts, out))
        return out


class Replay:
    """An embedder that answers from recorded vectors (fails on any text it has not seen)."""

    def __init__(self, vectors):
        self.vectors = vectors

    def embed(self, texts):
        return np.stack([self.vectors[t] for t in texts])


def test_dense_numbers_match_numpy_on_the_locomo_sample(minilm):
    dataset = load_dataset(f"locomo:{require_locomo()}")
    recording = Recording(minilm)
    thresholds = [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6]  # MiniLM cosines of questions and turns mostly lie here
    result = run_study(dataset, mode="dense", embedder=recording, thresholds=thresholds, top_ks=[5, 10], decay_rates=[0])
    assert result.questions == 304 and len(result.sweep) == len(thresholds) * 2
    cos = cosines(dataset, Replay(recording.vectors))
    compared = 0
    for row in result.sweep:
        expected, ambiguous = expected_metrics(dataset, cos, row.threshold, row.top_k)
        if ambiguous:  # a cosine within 1e-6 of the threshold, or a near-tie at the cut: float noise decides
            continue
        assert_row_matches(row, expected)
        compared += 1
    assert compared >= 12, "too few settings free of float near-ties to compare"
    for k in (1, 5, 10):
        recall, precision = expected_at_k(dataset, cos, k)
        assert result.at_k[k].recall == pytest.approx(float(recall), abs=1e-12)
        assert result.at_k[k].precision == pytest.approx(float(precision), abs=1e-12)
    assert result.at_k[10].questions == sum(q.answerable for q in dataset.questions)


def test_study_pools_equal_the_managers_candidates(hand, make_manager):
    rankings = rank(hand, mode="dense", embedder="minilm")
    mm = make_manager(MemoryConfig())
    mm.add_many([m.to_message() for m in hand.memories])
    for rq in rankings.questions:
        q = rq.question
        c = mm.candidates(q.text, tenant_id=q.tenant_id, user_id=q.user_id, as_of=q.as_of, pool=100)
        mine = {r.message_id: s for r, s in rq.candidates.active}
        theirs = {r.message_id: s for r, s in c.active}
        assert mine.keys() == theirs.keys() == {m.id for m in hand.memories_of(q.owner)}
        assert all(mine[i] == pytest.approx(theirs[i], abs=1e-6) for i in mine)
        assert [s for _, s in rq.candidates.active] == sorted(mine.values(), reverse=True)


def test_cutting_to_the_composite_top_k_first_changes_nothing_govern_returns(workshop_lexical_dense):
    for decay in (0.0, 0.5):
        pools = composite_pools([rq.candidates for rq in workshop_lexical_dense.questions], MemoryConfig(decay_rate=decay))
        for rq, pool in zip(workshop_lexical_dense.questions, pools):
            for threshold in (0.0, 0.15, 0.3, 0.6):
                for top_k in (1, 3, 10):
                    cfg = MemoryConfig(threshold=threshold, top_k=top_k, decay_rate=decay, token_budget=120)
                    full = govern(rq.candidates, cfg).governed
                    cut = govern(pool.top(threshold, top_k), cfg).governed
                    assert [(h.record.memory_id, h.score, h.tokens) for h in full] == \
                        [(h.record.memory_id, h.score, h.tokens) for h in cut]


def test_decay_rate_reorders_by_the_composite_score(workshop, workshop_lexical_dense):
    cos = cosines(workshop, LexicalEmbedder())
    when = {(m.owner, m.id): m.timestamp for m in workshop.memories}
    decay, threshold, top_k = 0.2, 0.1, 2
    result = sweep(workshop_lexical_dense, thresholds=[threshold], top_ks=[top_k], decay_rates=[0.0, decay])
    recalls = []
    for q in workshop.questions:
        if not q.answerable:
            continue
        def composite(i):
            age = max(0.0, (q.as_of - when[(q.owner, i)]) / DAY)
            return 0.7 * cos[q.id][i] + 0.2 * math.exp(-decay * age) + 0.1 * 0.5
        passing = sorted((i for i in cos[q.id] if cos[q.id][i] >= threshold), key=lambda i: -composite(i))[:top_k]
        recalls.append(sum(i in q.relevant for i in passing) / len(q.relevant))
    row = result.row(threshold=threshold, top_k=top_k, decay_rate=decay)
    assert row.recall == pytest.approx(sum(recalls) / len(recalls), abs=1e-12)
    assert row.recall != result.row(threshold=threshold, top_k=top_k, decay_rate=0.0).recall


def test_forbidden_hits_and_label_pollution_are_counted(workshop, workshop_lexical_dense):
    cos = cosines(workshop, LexicalEmbedder())
    labels = {(m.owner, m.id): m.labels for m in workshop.memories}
    result = sweep(workshop_lexical_dense, thresholds=[0.15, 0.3], top_ks=[10], decay_rates=[0])
    for row in result.sweep:
        forbidden = noise = total = 0
        for q in workshop.questions:
            ids, ambiguous = injected(cos[q.id], row.threshold, row.top_k)
            assert not ambiguous
            forbidden += sum(i in q.forbidden for i in ids)
            noise += sum("noise" in labels[(q.owner, i)] for i in ids)
            total += len(ids)
        assert row.forbidden_hits == forbidden
        assert row.pollution_by_label["noise"] == pytest.approx(noise / total)
        assert row.isolation_leaks == 0
    # same-user stale facts are forbidden and plain similarity recalls them: the study shows it
    assert result.sweep[0].forbidden_hits > 0


def test_lexical_scores_are_bm25_normalised_per_question(workshop):
    import bm25s

    rankings = rank(workshop, mode="lexical")
    assert rankings.embedder is None and "BM25" in rankings.scorer
    overlap = []
    for rq in rankings.questions:
        q = rq.question
        mems = workshop.memories_of(q.owner)
        ref = bm25s.BM25()
        ref.index([bm25_tokens(m.text) for m in mems], show_progress=False)
        raw = ref.get_scores(bm25_tokens(q.text))
        best = float(raw.max())
        expected = {m.id: (float(s) / best if best > 0 else 0.0) for m, s in zip(mems, raw)}
        got = {r.message_id: s for r, s in rq.candidates.active}
        assert got.keys() == expected.keys()
        assert all(got[i] == pytest.approx(expected[i], abs=1e-6) for i in got)
        assert max(got.values()) == pytest.approx(1.0 if best > 0 else 0.0) and min(got.values()) >= 0.0
        overlap.append(best > 0)
    assert any(overlap) and not all(overlap)  # some question shares no word with its user's memories


def test_bm25_tokens_drop_stop_words_and_split_chinese():
    assert bm25_tokens("The campaign budget is in a file, 500,000 yuan!") == ["campaign", "budget", "file", "500", "000", "yuan"]
    assert bm25_tokens("记忆污染 Agent") == ["agent", "记忆", "忆污", "污染"]


def test_hybrid_is_the_documented_weighted_sum(workshop, workshop_lexical_dense):
    hybrid = rank(workshop, mode="hybrid", embedder="lexical")
    lexical = rank(workshop, mode="lexical")
    assert HYBRID_WEIGHT == 0.5 and "0.5 * cosine" in hybrid.scorer
    for h, d, lx in zip(hybrid.questions, workshop_lexical_dense.questions, lexical.questions):
        dense = {r.message_id: s for r, s in d.candidates.active}
        lex = {r.message_id: s for r, s in lx.candidates.active}
        for record, score in h.candidates.active:
            i = record.message_id
            assert score == pytest.approx(0.5 * dense[i] + 0.5 * lex[i], abs=1e-6)


# --- ranges, rules, recommendation --------------------------------------------------------

def test_ranges_parse_inclusively_and_cleanly():
    values = parse_range("0.1:0.9:0.05", name="threshold")
    assert len(values) == 17 and values[0] == 0.1 and values[-1] == 0.9 and values[1] == 0.15
    assert parse_range("5,10", name="top_k", integer=True) == (5, 10)
    assert parse_range("10, 5,5", name="top_k", integer=True) == (5, 10)
    assert parse_range("0.3", name="threshold") == (0.3,)
    assert parse_range([0.2, 0.1], name="threshold") == (0.1, 0.2)
    assert parse_range(0, name="decay_rate") == (0.0,)
    assert parse_range("1:3:1", name="top_k", integer=True) == (1, 2, 3)


@pytest.mark.parametrize("spec, name, integer, message", [
    ("", "threshold", False, "threshold: the range is empty"),
    ("   ", "threshold", False, "threshold: the range is empty"),
    ([], "top_k", True, "top_k: the range"),
    ("0.9:0.1:0.1", "threshold", False, "is empty \\(start > stop\\)"),
    ("0.1:0.9:0", "threshold", False, "step .* must be > 0"),
    ("0.1:0.9", "threshold", False, "must be start:stop:step"),
    ("0.1,abc", "threshold", False, "'abc' .* is not a number"),
    ("2.5", "top_k", True, "not a whole number"),
    ("nan", "threshold", False, "not a finite number"),
])
def test_an_empty_or_bad_range_is_an_error(spec, name, integer, message):
    with pytest.raises(InputError, match=message):
        parse_range(spec, name=name, integer=integer)


def test_out_of_range_values_and_empty_sweeps_fail_before_any_work():
    with pytest.raises(InputError, match="threshold: .*must be in"):
        validate_options(thresholds="0.5,1.5", top_ks="5", decay_rates="0")
    with pytest.raises(InputError, match="top_k: .*must be in"):
        validate_options(thresholds="0.5", top_ks="0", decay_rates="0")
    # the dataset does not exist: the range error comes first, so nothing was loaded or embedded
    with pytest.raises(InputError, match="threshold: the range is empty"):
        run_study("no-such-file.json", thresholds="")
    with pytest.raises(InputError, match="rule must be"):
        run_study("no-such-file.json", rule="best")


def test_rules_choose_the_operating_point(workshop_lexical_dense):
    result = sweep(workshop_lexical_dense, thresholds="0.05:0.6:0.05", top_ks="1,3,5", decay_rates="0")
    best_f1 = max(r.f1 for r in result.sweep)
    assert result.recommended.rule == "f1" and result.recommended.row.f1 == best_f1
    assert "highest F1" in result.recommended.description
    rec = recommend(result.sweep, "precision@recall>=0.6")
    qualifying = [r for r in result.sweep if r.recall >= 0.6 and r.precision is not None]
    assert rec.row.precision == max(r.precision for r in qualifying) and rec.row.recall >= 0.6
    assert rec.to_dict()["found"] is True and rec.to_dict()["rule"] == "precision@recall>=0.6"
    none = recommend(result.sweep, "precision@recall>=1")
    if max(r.recall for r in result.sweep) < 1:
        assert none.row is None and "no setting reaches recall >= 1" in none.note
        assert none.to_dict()["found"] is False
    assert parse_rule("precision @ recall >= 0.25").min_recall == 0.25
    for bad in ("precision@recall>=2", "recall", "precision@recall>=x"):
        with pytest.raises(InputError):
            parse_rule(bad)


# --- output, determinism, progress ------------------------------------------------------

def test_the_same_numbers_every_run(hand, minilm):
    kwargs = dict(mode="dense", embedder=minilm, thresholds="0.2:0.6:0.1", top_ks="1,3", decay_rates="0,0.1")
    a = run_study(hand, **kwargs).to_dict()
    b = run_study(hand, **kwargs).to_dict()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    c = run_study("workshop_en", mode="lexical", thresholds="0.2:0.6:0.1").to_dict()
    d = run_study("workshop_en", mode="lexical", thresholds="0.2:0.6:0.1").to_dict()
    assert c == d


def test_progress_counts_memories_questions_and_settings(workshop):
    calls = []
    run_study(workshop, mode="lexical", thresholds="0.1:0.5:0.1", top_ks="3,5", progress=lambda d, t: calls.append((d, t)))
    total = len(workshop.memories) + len(workshop.questions) + 5 * 2
    assert calls[-1] == (total, total)
    assert all(t == total for _, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_json_csv_and_frame(workshop, workshop_lexical_dense, tmp_path):
    result = sweep(workshop_lexical_dense, thresholds="0.1,0.3", top_ks="5,10", decay_rates="0")
    data = result.to_dict()
    assert {"dataset", "unit", "mode", "embedder", "questions", "at_k", "sweep", "recommended"} <= data.keys()
    assert set(data["at_k"]) == {"1", "5", "10"} and set(data["at_k"]["5"]) >= {"recall", "precision"}
    need = {"threshold", "top_k", "decay_rate", "precision", "recall", "f1", "avg_injected", "avg_tokens",
            "no_answer_empty_rate", "forbidden_hits", "pollution_rate", "pollution_by_label", "by_category"}
    assert all(need <= set(row) for row in data["sweep"])
    frame = result.to_frame()
    assert len(frame) == 4 and list(frame["threshold"]) == [0.1, 0.3, 0.1, 0.3]
    assert "pollution_noise" in frame.columns and "by_category" not in frame.columns
    assert list(frame["recall"]) == [round(r.recall, 6) for r in result.sweep]
    out = result.write(tmp_path / "s.json")
    assert json.loads(out.read_text()) == json.loads(json.dumps(data))
    csv_text = result.write(tmp_path / "s.csv").read_text().splitlines()
    assert csv_text[0].startswith("dataset,unit,mode,embedder,threshold,top_k,decay_rate,") and len(csv_text) == 5
    assert len(result.category_frame()) == 4  # one category in this scenario
    with pytest.raises(InputError, match=r"\.json or \.csv"):
        result.write(tmp_path / "s.txt")


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_a_question_whose_user_has_no_memories_gets_an_empty_context(tmp_path, mode):
    path = tmp_path / "lonely.json"
    path.write_text(json.dumps({"name": "lonely", "messages": [
        {"id": "m1", "tenant_id": "t", "user_id": "u", "content": "I like green tea.", "timestamp": "2026-01-01T00:00:00Z"}],
        "queries": [
            {"id": "q1", "tenant_id": "t", "user_id": "u", "query": "Which tea do I like?", "relevant": ["m1"]},
            {"id": "q2", "tenant_id": "t", "user_id": "nobody", "query": "Which tea do I like?", "relevant": []}]}))
    result = run_study(str(path), mode=mode, embedder="lexical", thresholds="0.1", top_ks="3")
    row = result.sweep[0]
    assert (row.recall, row.precision, row.no_answer_empty_rate, row.isolation_leaks) == (1.0, 1.0, 1.0, 0)
