"""Bongard-HOI query accuracy per split, the official mean of the four test splits, and episode accuracy."""

import datasets
import evaluate

from bongard_hoi.evaluation import bongard_accuracy, decisions_from_scores

_DESCRIPTION = """\
Bongard-HOI accuracy. Each episode has two queries: the positive query (reference 0, "belongs to the positive
set") and the negative query (reference 1). A query is right when the predicted side equals its reference; a
split's accuracy is the mean over all its queries, as in the official NVlabs script, and `test_mean` is the
unweighted mean of the four test splits (`--test_only`). `episode_accuracy` (both queries of an episode right)
is an extra, not an official number.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: per query, the chosen side (0 = positive set, 1 = negative set); with the config "scores",
        [score of the positive set, score of the negative set] (argmax, ties go to the positive set).
    references: per query, the true side (0 for the positive query, 1 for the negative query).
    splits: per query, the split name (official file name without "bongard_hoi_" and ".json").
    episodes: optional, per query, the 0-based episode index; enables `episode_accuracy`.
Returns:
    accuracy: {split: accuracy in [0, 1]}
    test_mean: mean of the four test-split accuracies, or None unless all four are present
    episode_accuracy: {split: share of episodes with both queries right}, or None without `episodes`
    num_queries: {split: number of queries scored}
Examples:
    >>> import evaluate, hoi_bench
    >>> metric = evaluate.load(hoi_bench.metric_path("bongard_accuracy"))
    >>> result = metric.compute(predictions=[0, 1, 1, 1], references=[0, 1, 0, 1], splits=["train"] * 4,
    ...                         episodes=[0, 0, 1, 1])
    >>> result["accuracy"], result["episode_accuracy"], result["test_mean"]
    ({'train': 0.75}, {'train': 0.5}, None)
    >>> scores = evaluate.load(hoi_bench.metric_path("bongard_accuracy"), "scores")
    >>> scores.compute(predictions=[[2.0, 1.0], [0.3, 0.9]], references=[0, 0], splits=["val_seen_obj_seen_act"] * 2)["accuracy"]
    {'val_seen_obj_seen_act': 0.5}
"""

_CITATION = """\
@inproceedings{jiang2022bongard,
  title     = {Bongard-HOI: Benchmarking Few-Shot Visual Reasoning for Human-Object Interactions},
  author    = {Jiang, Huaizu and Ma, Xiaojian and Nie, Weili and Yu, Zhiding and Zhu, Yuke and Anandkumar, Anima},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  year      = {2022}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class BongardAccuracy(evaluate.Metric):
    """Thin wrapper over ``bongard_hoi.evaluation.bongard_accuracy``."""

    def _info(self):
        if self.config_name == "scores":
            prediction = datasets.Sequence(datasets.Value("float64"), length=2)
        else:
            prediction = datasets.Value("int32")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": prediction,
                "references": datasets.Value("int32"),
                "splits": datasets.Value("string"),
            }),
            reference_urls=["https://github.com/NVlabs/Bongard-HOI"],
        )

    def _compute(self, predictions, references, splits, episodes=None):
        if self.config_name == "scores":
            predictions = decisions_from_scores(predictions)
        return bongard_accuracy(predictions, references, splits, episodes)
