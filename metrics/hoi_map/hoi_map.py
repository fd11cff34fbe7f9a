"""HICO-DET / HICO-DET-SG HOI detection mAP as an ``evaluate`` metric:
a thin wrapper over ``hoi_sg_dataset.evaluation``."""

import datasets
import evaluate
import numpy as np

from hoi_sg_dataset.evaluation import HoiSet, check_fast_route, hoi_map

_CITATION = """\
@inproceedings{tamura2021qpic,
  title={QPIC: Query-Based Pairwise Human-Object Interaction Detection with Image-Wide Contextual
  Information}, author={Tamura, Masato and Ohashi, Hiroki and Yoshinaga, Tomoaki}, booktitle={CVPR},
  year={2021}
}
@inproceedings{chao2018learning,
  title={Learning to Detect Human-Object Interactions},
  author={Chao, Yu-Wei and Liu, Yunfan and Liu, Xieyang and Zeng, Huayi and Deng, Jia},
  booktitle={WACV}, year={2018}
}
@article{takemoto2023hoisg,
  title={HICO-DET-SG and V-COCO-SG: New Data Splits for Evaluating the Systematic Generalization Performance
  of
         Human-Object Interaction Detection Models},
  author={Takemoto, Kentaro and Yamada, Moyuru and Sasaki, Tomotake and Akima, Hisanao},
  journal={arXiv preprint arXiv:2305.09948}, year={2023}
}
"""

_DESCRIPTION = """\
HOI detection mAP on HICO-DET and HICO-DET-SG. protocol="qpic" (default) reproduces QPIC's hico_eval.py to the
last digit (top-100 per image, predicted-label triplets absent from the GT ignored, 11-point AP per GT
triplet); protocol="ho-rcnn" follows the official MATLAB evaluation (fixed 600 classes, no cap, optional
known-object mode).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: one dict per image: "boxes" (K x [x1, y1, x2, y2] pixels), "box_labels" (K raw COCO ids),
        "hois" (H x [subject index, object index, verb id]) and "scores" (H floats).
    references: one dict per image, aligned with predictions: "boxes", "box_labels", "hois" (no scores).
    protocol: "qpic" (default) or "ho-rcnn".
    train_references: optional list of reference dicts of the training split; rare = fewer than 10 instances.
    top_k: per-image cut by score; "default" = 100 for qpic, none for ho-rcnn; None = no cut.
    known_object: ho-rcnn only; score each class only on images whose GT has its object category.
    prediction_set, reference_set: fast route for large inputs: ``hoi_sg_dataset.evaluation.HoiSet`` arrays
    passed
        as keyword arguments, with predictions = references = list(range(number of images)).
Returns:
    mAP, mAP_rare, mAP_non_rare, mean_max_recall (None where nothing to average; see "reasons"),
    ap_per_triplet ({"<subject category>_<object category>_<verb>": AP}), protocol, num_classes, reasons,
    warnings (one counted line per kind of input scored as the official code scores it though it looks wrong).
Examples:
    >>> import evaluate, hoi_bench
    >>> metric = evaluate.load(hoi_bench.metric_path("hoi_map"))
    >>> image = {"boxes": [[0, 0, 9, 9], [5, 5, 20, 20]], "box_labels": [1, 47], "hois": [[0, 1, 37]]}
    >>> result = metric.compute(predictions=[dict(image, scores=[0.9])], references=[image])
    >>> round(result["mAP"], 6), result["ap_per_triplet"]["1_47_37"] > 0.99
    (1.0, True)
"""

_IMAGE = {
    "boxes": datasets.List(datasets.List(datasets.Value("float64"), length=4)),
    "box_labels": datasets.List(datasets.Value("int64")),
    "hois": datasets.List(datasets.List(datasets.Value("int64"), length=3)),
}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class HoiMap(evaluate.Metric):
    """HICO-DET(-SG) HOI detection mAP."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features(
                    {
                        "predictions": dict(_IMAGE, scores=datasets.List(datasets.Value("float64"))),
                        "references": dict(_IMAGE),
                    }
                ),
                datasets.Features(
                    {"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}
                ),
            ],
            reference_urls=[
                "https://github.com/hitachi-rd-cv/qpic",
                "https://github.com/ywchao/ho-rcnn",
                "https://github.com/FujitsuResearch/hoi_sg",
            ],
        )

    def _compute(
        self,
        predictions,
        references,
        protocol="qpic",
        train_references=None,
        top_k="default",
        known_object=False,
        prediction_set=None,
        reference_set=None,
    ):
        if prediction_set is not None or reference_set is not None:
            pred, ref = check_fast_route(predictions, references, prediction_set, reference_set)
        else:
            pred = HoiSet.from_feature_rows(predictions, "predictions", with_scores=True)
            ref = HoiSet.from_feature_rows(references, "references", with_scores=False)
        train = None
        if train_references is not None:
            train = (
                train_references
                if isinstance(train_references, HoiSet)
                else HoiSet.from_feature_rows(train_references, "train_references", with_scores=False)
            )
        result = hoi_map(
            ref, pred, protocol=protocol, train_references=train, top_k=top_k, known_object=known_object
        )
        return {key: float(v) if isinstance(v, np.floating) else v for key, v in result.items()}
