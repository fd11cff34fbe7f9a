"""PDO, a predicate-wise Haystack metric (Lorenz et al., ICCVW 2023; lower is better), as an ``evaluate`` metric.

Thin wrapper over ``haystack_dataset.evaluation``; see README.md (the metric card) for inputs and semantics.
"""

import datasets
import evaluate

from haystack_dataset.builder import HAYSTACK_CITATION as _CITATION
from haystack_dataset.evaluation import DEFAULT_MIN_POSITIVES, discrimination_from_records

_DESCRIPTION = """\
PDO is, for each predicate p, 1 - mean_{k=1..n-1} precision_k, where precision_k is
the fraction of p's annotated pairs ranking p below k that are positive (1 when none does). It measures how
often a model ranks a predicate high on pairs annotated as not having it.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions: one entry per annotated (pair, predicate) of a Haystack file: the model's n predicate scores for
        that pair (no no-relation column), or an empty list when the model gave the pair no output.
    references: one entry per annotated relation: {"predicate": p (0-based), "label": 1 positive / 0 negative}.
    rank_mode: "paper" (default; rank among all n predicates) or "official" (as the released calc_metrics.py:
        rank among the first n - 1 columns, ties in numpy's reversed argsort order; a predicate without
        negatives makes the P-AUC mean None).
    min_positives: predicates with fewer positives are not reported (default 4).
    predicate_names: optional names for the per-predicate keys (default: the indices as strings).
    scores, predicates, labels, present: array form instead of predictions/references (pass those as empty
        lists): (R, n) scores, (R,) predicate indices, (R,) 0/1 labels, optional (R,) bool "has an output row".
        Skips evaluate's Arrow round trip, which is slow for 10^5 relations; not accumulated by add_batch.
Returns:
    pdo: mean over the reported predicates (lower is better),
    per_predicate: {name: value} for every reported predicate,
    rank_mode, min_positives.
Examples:
    >>> from hoi_bench.metric_modules import metric_path
    >>> metric = evaluate.load(metric_path("pdo"))   # or evaluate.load("pdo") after `hoi-bench install-metrics`
    >>> metric.compute(predictions=[[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.6, 0.4], [0.1, 0.9]],
    ...                references=[{"predicate": 0, "label": 1}] * 4 + [{"predicate": 0, "label": 0}],
    ...                predicate_names=["on", "holding"])["pdo"]
    0.0
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Pdo(evaluate.Metric):
    """PDO per predicate and its mean over predicates."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": datasets.List(datasets.Value("float64")),
                "references": {"predicate": datasets.Value("int64"), "label": datasets.Value("int64")},
            }),
            homepage="https://github.com/lorjul/haystack",
        )

    def _compute(self, predictions, references, rank_mode="paper", min_positives=DEFAULT_MIN_POSITIVES,
                 predicate_names=None, scores=None, predicates=None, labels=None, present=None):
        result = discrimination_from_records(predictions, references, scores=scores, predicates=predicates,
                                             labels=labels, present=present, rank_mode=rank_mode,
                                             min_positives=min_positives)
        return result.single_metric("pdo", predicate_names)
