"""P-AUC / PDD / PDO: the official script's numbers on the golden fixture, properties, crash inputs, bad inputs."""

from __future__ import annotations

import copy
import warnings

import loop_reference
import numpy as np
import pytest
from haystack_fixtures import GOLDEN_ANNOTATION, GOLDEN_ROWS
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.metrics import roc_auc_score

from haystack_dataset import evaluation
from haystack_dataset.evaluation import (
    HaystackInputWarning,
    annotated_relations,
    haystack_scores,
    predicate_discrimination,
)
from haystack_dataset.formats import parse_annotation
from hoi_bench.errors import FormatError, PredictionError


def predicate_ranks(scores, predicate, rank_mode="paper"):
    """0-based rank of each relation's own predicate in its score row, through the library's rank code."""
    scores = evaluation._score_matrix(scores)
    predicate = np.asarray(predicate, dtype=np.int64)
    return evaluation._ranks(scores, predicate, evaluation._own_scores(scores, predicate), None, rank_mode)


def golden(**changes):
    raw = copy.deepcopy(GOLDEN_ANNOTATION)
    raw["data"][0].update(changes)
    return parse_annotation(raw)


# ------------------------------------------------------------------------------------------- golden fixture


def test_official_mode_reproduces_the_released_script_on_the_golden_fixture():
    report = haystack_scores(golden(), GOLDEN_ROWS, rank_mode="official")
    assert list(report["per_predicate"]) == ["on"]              # holding/chasing have < 4 positives
    on = report["per_predicate"]["on"]
    assert (on["positives"], on["negatives"]) == (4, 3)
    assert on["p_auc"] == pytest.approx(0.75)
    assert on["pdd"] == pytest.approx(0.25)
    assert on["pdo"] == pytest.approx(0.3055555555555557)
    assert report["mean"] == pytest.approx({"p_auc": 0.75, "pdd": 0.25, "pdo": 0.3055555555555557})
    assert report["rank_mode"] == "official"


def test_paper_mode_ranks_over_all_predicates_on_the_golden_fixture():
    report = haystack_scores(golden(), GOLDEN_ROWS)
    assert report["rank_mode"] == "paper" and "tie_rule" in report
    assert report["mean"] == pytest.approx({"p_auc": 0.75, "pdd": 0.416667, "pdo": 0.333333}, abs=1e-6)


def test_string_and_numeric_image_ids_match():
    report = haystack_scores(golden(image_id="7"), GOLDEN_ROWS, rank_mode="official")
    assert report["mean"]["pdd"] == pytest.approx(0.25)


def test_minus_one_predicates_are_skipped():
    assert annotated_relations(golden()).skipped_no_predicate == 1


# ----------------------------------------------------------------------------------------------- properties


def _random_case(seed: int, n: int, size: int, tie_levels: int | None):
    rng = np.random.default_rng(seed)
    scores = rng.random((size, n))
    if tie_levels:
        scores = np.round(scores * tie_levels) / tie_levels
    predicates = rng.integers(0, n, size)
    labels = rng.integers(0, 2, size)
    present = rng.random(size) > 0.15
    scores[~present] = 0.0
    return scores, predicates, labels, present


_IGNORE_INPUT_WARNINGS = pytest.mark.filterwarnings("ignore::haystack_dataset.evaluation.HaystackInputWarning")


@_IGNORE_INPUT_WARNINGS
@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 7), st.integers(2, 80), st.sampled_from([None, 3, 10]))
def test_p_auc_equals_sklearn_and_is_invariant_to_increasing_transforms(seed, n, size, tie_levels):
    scores, predicates, labels, present = _random_case(seed, n, size, tie_levels)
    result = predicate_discrimination(scores, predicates, labels, present, min_positives=1)
    for p in range(n):
        mask = predicates == p
        y = labels[mask]
        if y.sum() >= 1 and (y == 0).sum() >= 1:
            assert result.p_auc[p] == pytest.approx(roc_auc_score(y, scores[mask, p]), abs=1e-12)
        elif result.reported[p]:
            assert np.isnan(result.p_auc[p])
    # every row present here: a missing row's fixed score 0 is not part of the model's scores
    raw = predicate_discrimination(scores, predicates, labels, min_positives=1)
    transformed = predicate_discrimination(np.exp(3 * scores) + scores ** 3, predicates, labels, min_positives=1)
    np.testing.assert_allclose(transformed.p_auc, raw.p_auc, equal_nan=True, atol=1e-12)
    np.testing.assert_allclose(transformed.pdd, raw.pdd, equal_nan=True, atol=1e-12)
    np.testing.assert_allclose(transformed.pdo, raw.pdo, equal_nan=True, atol=1e-12)


@_IGNORE_INPUT_WARNINGS
@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 7), st.integers(1, 80), st.sampled_from([None, 2, 5]),
       st.sampled_from(["paper", "official"]), st.integers(1, 4), st.sampled_from(["C", "F"]))
def test_pdd_pdo_lie_in_unit_interval_and_equal_the_loop_reference(seed, n, size, tie_levels, rank_mode, min_pos,
                                                                   layout):
    scores, predicates, labels, present = _random_case(seed, n, size, tie_levels)
    result = predicate_discrimination(np.asarray(scores, order=layout), predicates, labels, present,
                                      rank_mode=rank_mode, min_positives=min_pos)
    rows = [row.tolist() if keep else None for row, keep in zip(scores, present)]
    reference = loop_reference.loop_metrics(rows, predicates.tolist(), labels.tolist(), n, rank_mode=rank_mode,
                                            min_positives=min_pos)
    assert sorted(reference) == np.flatnonzero(result.reported).tolist()
    for p, values in reference.items():
        assert 0.0 <= result.pdd[p] <= 1.0 and 0.0 <= result.pdo[p] <= 1.0
        assert result.pdd[p] == pytest.approx(values["pdd"], abs=1e-12)
        assert result.pdo[p] == pytest.approx(values["pdo"], abs=1e-12)
        if values["p_auc"] is None:
            assert np.isnan(result.p_auc[p])
        else:
            assert result.p_auc[p] == pytest.approx(values["p_auc"], abs=1e-12)
    for name, value in result.mean().items():
        expected = loop_reference.loop_mean([v[name] for v in reference.values()], rank_mode)
        assert np.isnan(value) if expected is None else value == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("n", [9, 300, 2100])  # padding to whole words; counters past 255; byte lanes flushed
@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("rank_mode", ["paper", "official"])
def test_ranks_count_every_competitor_in_both_layouts_for_wide_score_rows(n, layout, rank_mode):
    rng = np.random.default_rng(n)
    scores = np.round(rng.random((30, n)) * 4) / 4          # few levels: many ties
    scores[0] = 0.5                                         # a constant row: the worst rank
    predicates = rng.integers(0, n, 30)
    predicates[1] = n - 1                                   # the last column, which official mode never compares
    ranks = predicate_ranks(np.asarray(scores, order=layout), predicates, rank_mode=rank_mode)
    expected = [loop_reference.loop_rank(row.tolist(), int(p), rank_mode) for row, p in zip(scores, predicates)]
    assert ranks.tolist() == expected
    if rank_mode == "paper" or predicates[0] == n - 1:
        assert ranks[0] == (n - 1 if rank_mode == "paper" else n - 2)   # after every tied competitor


def test_ties_rank_the_predicate_after_its_equals():
    scores = np.full((4, 3), 0.5)
    result = predicate_discrimination(scores, np.zeros(4, dtype=int), np.array([1, 1, 1, 0]), min_positives=1)
    assert result.pdd[0] == 1.0                # a constant model never puts the predicate in the top k
    assert result.p_auc[0] == 0.5


def test_official_ties_follow_numpys_reversed_argsort_worked_example():
    # the notes' example: two predicates + the ignored last column, p0 and p1 tied -> p1 gets rank 0, p0 rank 1
    scores = np.array([[0.4, 0.4, 0.2], [0.4, 0.4, 0.2]])
    assert predicate_ranks(scores, np.array([0, 1]), rank_mode="official").tolist() == [1, 0]
    assert predicate_ranks(scores, np.array([0, 1]), rank_mode="paper").tolist() == [1, 1]


def test_official_ties_use_the_dtype_the_scores_came_in():
    rows = np.array([[7, 0, 1, *([0.25] * 20), 0.1]], dtype=np.float32)   # n = 21, a 20-way tie
    for dtype in (np.float32, np.float64):
        order = rows[0, 3:-1].astype(dtype).argsort()[::-1]
        expected = [int(np.flatnonzero(order == p)[0]) for p in range(20)]
        scores = np.repeat(rows[:, 3:].astype(np.float64), 20, axis=0)
        result = evaluation._ranks(scores, np.arange(20), scores[np.arange(20), np.arange(20)], None, "official",
                                   dtype)
        assert result.tolist() == expected


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 60), st.integers(1, 4))
def test_two_dimensional_rows_rank_like_the_one_dimensional_call(seed, n, levels):
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random((12, n)) * levels) / levels
    predicates = rng.integers(0, n - 1, 12)
    for layout in ("C", "F"):
        ranks = predicate_ranks(np.asarray(scores, order=layout), predicates, rank_mode="official")
        expected = [list(row[:-1].argsort()[::-1]).index(p) for row, p in zip(scores, predicates)]
        assert ranks.tolist() == expected


# ----------------------------------------------------------------------------- inputs the official script crashes on


def test_image_without_output_rows_warns_and_counts_as_missing():
    raw = copy.deepcopy(GOLDEN_ANNOTATION)
    second = copy.deepcopy(raw["data"][0])
    second["image_id"] = 8
    raw["data"].append(second)
    with pytest.warns(HaystackInputWarning, match="1 annotated images have no output rows"):
        report = haystack_scores(parse_annotation(raw), GOLDEN_ROWS, rank_mode="official")
    on = report["per_predicate"]["on"]
    assert (on["positives"], on["negatives"]) == (8, 6)
    assert any("no output rows" in w for w in report["warnings"])


def test_predicate_with_positives_but_no_negatives_gives_nan_auc_and_a_warning():
    with pytest.warns(HaystackInputWarning, match="no negatives"):
        result = predicate_discrimination(np.eye(4)[[0, 0, 0, 0]], np.zeros(4, dtype=int), np.ones(4, dtype=int))
    assert np.isnan(result.p_auc[0]) and result.pdd[0] == 0.0 and result.pdo[0] == 0.0
    assert result.mean()["pdd"] == 0.0


def test_official_mean_p_auc_is_nan_when_a_reported_predicate_has_no_negatives():
    # "on" is defined (4 positives, 3 negatives); "holding" gets 4 positives and no negative: P-AUC NaN
    raw = copy.deepcopy(GOLDEN_ANNOTATION)
    record = raw["data"][0]
    record["relations"] += [[0, 3, 1], [1, 3, 1], [2, 3, 1]]
    record["neg_relations"] = [t for t in record["neg_relations"] if t[2] != 1]
    with pytest.warns(HaystackInputWarning, match="no negatives"):
        official = haystack_scores(parse_annotation(raw), GOLDEN_ROWS, rank_mode="official")
    assert official["per_predicate"]["holding"]["p_auc"] is None
    assert official["mean"]["p_auc"] is None                 # the script's df.values.mean: NaN
    assert official["mean"]["pdd"] is not None
    with pytest.warns(HaystackInputWarning, match="no negatives"):
        paper = haystack_scores(parse_annotation(raw), GOLDEN_ROWS)
    assert paper["mean"]["p_auc"] == pytest.approx(0.75)     # the paper mode averages the defined values


def test_last_predicate_in_official_mode_warns_and_is_defined():
    ann = golden(neg_relations=GOLDEN_ANNOTATION["data"][0]["neg_relations"] + [[0, 2, 3]])
    with pytest.warns(HaystackInputWarning, match="last predicate"):
        report = haystack_scores(ann, GOLDEN_ROWS, rank_mode="official")
    assert report["mean"]["pdd"] == pytest.approx(0.25)       # "on" is unaffected


# ------------------------------------------------------------------------------------------------ bad inputs


def test_duplicate_output_rows_are_an_error():
    rows = np.vstack([GOLDEN_ROWS, GOLDEN_ROWS[2]])
    with pytest.raises(PredictionError, match=r"rows 2 and 8 both score image 7 pair \(2, 3\)"):
        haystack_scores(golden(), rows)


def test_duplicate_rows_for_a_pair_no_annotation_uses_are_ignored():
    unused = np.array([[7, 3, 1, .1, .2, .3, .4]] * 2)           # pair (3, 1) is in no relation list
    report = haystack_scores(golden(), np.vstack([GOLDEN_ROWS, unused]), rank_mode="official")
    assert report["mean"] == pytest.approx({"p_auc": 0.75, "pdd": 0.25, "pdo": 0.3055555555555557})


def test_rows_no_annotation_can_use_are_counted_in_a_warning():
    unusable = np.array([[7, 0, 9, .1, .2, .3, .4], [7, 2, 2, .1, .2, .3, .4], [7, 2, 2, .1, .2, .3, .4]])
    with pytest.warns(HaystackInputWarning, match=r"3 output rows of annotated images can match no annotation.*"
                                                  r"1 with a segment index past.*2 pairing a segment with itself"):
        report = haystack_scores(golden(), np.vstack([GOLDEN_ROWS, unusable]), rank_mode="official")
    assert report["mean"]["pdd"] == pytest.approx(0.25)          # the official numbers stay official
    assert any("can match no annotation" in note for note in report["warnings"])


def test_rows_read_in_blocks_give_the_same_report_as_one_array(monkeypatch):
    rows = np.vstack([GOLDEN_ROWS, [[7, 2, 2, .1, .2, .3, .4]]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HaystackInputWarning)
        whole = haystack_scores(golden(), rows, rank_mode="official")
        monkeypatch.setattr(evaluation, "_ROWS_PER_CHUNK", 3)
        blocks = haystack_scores(golden(), rows, rank_mode="official")
    assert blocks == whole


def test_score_row_of_the_wrong_width_is_an_error():
    with_background = np.column_stack([GOLDEN_ROWS[:, :3], np.zeros(len(GOLDEN_ROWS)), GOLDEN_ROWS[:, 3:]])
    with pytest.raises(PredictionError, match=r"remove the no-relation score column.*expected 7 columns.*found 8"):
        haystack_scores(golden(), with_background)


def test_nan_scores_are_an_error_naming_row_and_column():
    rows = GOLDEN_ROWS.copy()
    rows[3, 5] = np.nan
    with pytest.raises(PredictionError, match=r"row 3, column 5 \(score of predicate 2\)"):
        haystack_scores(golden(), rows)
    with pytest.raises(PredictionError, match="relation 0, predicate column 0: NaN score"):
        predicate_discrimination(np.array([[np.nan, 1.0]]), np.array([0]), np.array([1]))


@pytest.mark.parametrize("layout", ["C", "F"])
def test_nan_in_a_column_that_is_never_compared_is_still_an_error(layout):
    scores = np.asarray(np.full((5, 3), 0.25), order=layout)
    scores[4, 2] = np.nan                                   # official mode ranks among the first n - 1 columns only
    with pytest.raises(PredictionError, match="relation 4, predicate column 2: NaN score"):
        predicate_discrimination(scores, np.zeros(5, dtype=int), np.ones(5, dtype=int), rank_mode="official")


def test_ids_that_match_no_image_are_an_error():
    rows = GOLDEN_ROWS.copy()
    rows[:, 0] = 99
    with pytest.raises(PredictionError, match=r"image ids match no annotated image.*\['7'\].*\['99'\]"):
        haystack_scores(golden(), rows)


def test_rows_of_other_images_are_ignored_with_a_warning():
    extra = GOLDEN_ROWS[:1].copy()
    extra[0, 0] = 99
    with pytest.warns(HaystackInputWarning, match="1 output rows belong to images that are not annotated"):
        report = haystack_scores(golden(), np.vstack([GOLDEN_ROWS, extra]), rank_mode="official")
    assert report["mean"]["pdd"] == pytest.approx(0.25)


def test_predicate_index_out_of_range_is_an_error():
    with pytest.raises(FormatError, match=r"record 0: field 'relations\[0\]': predicate index out of range"):
        golden(relations=[[0, 3, 4]])
    with pytest.raises(PredictionError, match="predicate index out of range"):
        predicate_discrimination(np.zeros((1, 2)), np.array([2]), np.array([1]))


def test_relation_index_past_segments_info_is_an_error():
    with pytest.raises(FormatError, match=r"field 'neg_relations\[1\]': object index past segments_info"):
        golden(neg_relations=[[3, 0, 0], [1, 4, 0]])


def test_unknown_rank_mode_is_refused():
    from hoi_bench.errors import ConfigError

    with pytest.raises(ConfigError, match="rank_mode"):
        predicate_discrimination(np.zeros((1, 2)), np.array([0]), np.array([1]), rank_mode="pessimistic")


def _official_script_emulation(annotation_raw, rows):
    """The released calc_metrics.py as described step by step in the reference notes (argsort over sc[:-1],
    sklearn recall/precision per k); valid only where the script does not crash."""
    from sklearn.metrics import precision_score, recall_score

    n = len(annotation_raw["predicate_classes"])
    labels, scores, ranks = ([[] for _ in range(n)] for _ in range(3))
    for image in annotation_raw["data"]:
        image_rows = rows[rows[:, 0] == image["image_id"]]
        assert len(image_rows) > 0
        for key, label in (("relations", 1), ("neg_relations", 0)):
            for s, o, p in image[key]:
                if p == -1:
                    continue
                labels[p].append(label)
                match = image_rows[(image_rows[:, 1] == s) & (image_rows[:, 2] == o)]
                if len(match) == 0:
                    scores[p].append(0.0)
                    ranks[p].append(n - 1)
                    continue
                sc = match[0, 3:]
                scores[p].append(sc[p])
                ranks[p].append(int(np.flatnonzero(sc[:-1].argsort()[::-1] == p)[0]))
    out = {}
    for p in range(n):
        y = np.array(labels[p])
        if y.sum() <= 3:
            continue
        r = np.array(ranks[p])
        dd = 1 - np.mean([recall_score(y, r < k) for k in range(1, n)])
        do = 1 - np.mean([1.0 if (r < k).sum() == 0 else precision_score(y, r < k) for k in range(1, n)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # scikit-learn >= 1.6 warns and returns NaN for one class
            out[p] = (roc_auc_score(y, scores[p]), dd, do)
    mean = tuple(np.array(list(out.values())).mean(axis=0)) if out else None   # df.values.mean: NaN stays
    return out, mean


@pytest.mark.slow
@_IGNORE_INPUT_WARNINGS
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([None, 2, 3]))
def test_official_mode_equals_an_emulation_of_the_released_script(seed, tie_levels):
    rng = np.random.default_rng(seed)
    n, segments = 5, 5
    data, rows = [], []
    for image_id in range(3):
        s, o = np.nonzero(~np.eye(segments, dtype=bool))
        keep = rng.random(len(s)) > 0.2
        values = rng.random((len(s), n)) if tie_levels is None else rng.integers(0, tie_levels, (len(s), n)) / 4
        rows += [[image_id, a, b, *v] for a, b, v in zip(s[keep], o[keep], values[keep])]
        triplets = [[int(a), int(b), int(rng.integers(0, n - 1))] for a, b in zip(s, o)]   # never the last predicate
        positive = rng.random(len(triplets)) < 0.5
        record = copy.deepcopy(GOLDEN_ANNOTATION["data"][0])
        record["segments_info"] = record["segments_info"] + [dict(record["segments_info"][0], id=5)]
        record["annotations"] = record["annotations"] + [record["annotations"][0]]
        record.update(image_id=image_id, relations=[t for t, pos in zip(triplets, positive) if pos],
                      neg_relations=[t for t, pos in zip(triplets, positive) if not pos])
        data.append(record)
    raw = dict(GOLDEN_ANNOTATION, predicate_classes=[f"p{i}" for i in range(n)], data=data)
    rows = np.array(rows, dtype=np.float64)
    expected, mean = _official_script_emulation(raw, rows)
    report = haystack_scores(parse_annotation(raw), rows, rank_mode="official")
    assert sorted(report["per_predicate"]) == sorted(f"p{p}" for p in expected)
    as_nan = [np.nan if v is None else v for v in (report["mean"][k] for k in ("p_auc", "pdd", "pdo"))]
    for p, (auc, dd, do) in expected.items():
        got = report["per_predicate"][f"p{p}"]
        got = [np.nan if got[k] is None else got[k] for k in ("p_auc", "pdd", "pdo")]
        np.testing.assert_allclose(got, [auc, dd, do], atol=1e-12)
    if mean is not None:
        np.testing.assert_allclose(as_nan, mean, atol=1e-12)


WIDE_PREDICATES, WIDE_SEGMENTS = 24, 4
WIDE_PAIRS = WIDE_SEGMENTS * (WIDE_SEGMENTS - 1)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(predicates=hnp.arrays(np.int64, (WIDE_PAIRS, 3), elements=st.integers(0, 5)),
       positive=hnp.arrays(np.bool_, (WIDE_PAIRS, 3)),
       levels=hnp.arrays(np.int64, (WIDE_PAIRS, WIDE_PREDICATES), elements=st.integers(0, 2)))
def test_official_mode_on_a_float32_npy_with_wide_tied_rows_equals_the_script(tmp_path_factory, predicates,
                                                                               positive, levels):
    # 24 predicates: rows of 23 ranked columns are past numpy's insertion-sort size, so its tie order is the
    # quick/SIMD sort's; the file is float32, so the script sorts float32 rows
    from haystack_dataset.predictions import NpyRows

    n, segments = WIDE_PREDICATES, WIDE_SEGMENTS
    s, o = np.nonzero(~np.eye(segments, dtype=bool))
    triplets = [[int(a), int(b), int(p)] for a, b, row in zip(s, o, predicates) for p in row]
    positive = positive.reshape(-1)
    record = copy.deepcopy(GOLDEN_ANNOTATION["data"][0])
    record.update(relations=[t for t, keep in zip(triplets, positive) if keep],
                  neg_relations=[t for t, keep in zip(triplets, positive) if not keep])
    raw = dict(GOLDEN_ANNOTATION, predicate_classes=[f"p{i}" for i in range(n)], data=[record])
    rows = np.column_stack([np.full(len(s), 7), s, o, levels / 4]).astype(np.float32)
    path = tmp_path_factory.mktemp("npy") / "rows.npy"
    np.save(path, rows)
    expected, _ = _official_script_emulation(raw, np.load(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HaystackInputWarning)
        report = haystack_scores(parse_annotation(raw), NpyRows(path), rank_mode="official")
    assert sorted(report["per_predicate"]) == sorted(f"p{p}" for p in expected)
    for p, (auc, dd, do) in expected.items():
        got = report["per_predicate"][f"p{p}"]
        got = [np.nan if got[k] is None else got[k] for k in ("p_auc", "pdd", "pdo")]
        np.testing.assert_allclose(got, [auc, dd, do], atol=1e-12)
