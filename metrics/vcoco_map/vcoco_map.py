"""V-COCO / V-COCO-SG role mAP (QPIC vcoco_eval.py) as an ``evaluate`` metric:
a thin wrapper over ``hoi_sg_dataset.evaluation``."""

import datasets
import evaluate
import numpy as np

from hoi_sg_dataset.evaluation import HoiSet, check_fast_route, vcoco_map

_CITATION = """\
@inproceedings{tamura2021qpic,
  title={QPIC: Query-Based Pairwise Human-Object Interaction Detection with Image-Wide Contextual
  Information}, author={Tamura, Masato and Ohashi, Hiroki and Yoshinaga, Tomoaki}, booktitle={CVPR},
  year={2021}
}
@article{gupta2015visual,
  title={Visual Semantic Role Labeling}, author={Gupta, Saurabh and Malik, Jitendra},
  journal={arXiv preprint arXiv:1505.04474}, year={2015}
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
Role mAP on V-COCO and V-COCO-SG as QPIC's vcoco_eval.py computes it, to the last digit: top-100 per image, GT
HOIs without object (object index -1) matched on the subject alone, 11-point AP per verb role; mAP_all
averages the verb roles with GT, mAP_thesis the 24 roles of the V-COCO paper with absent ones counted as 0 (as
upstream), and mAP_thesis_present (ours) only the thesis roles that have GT. Not the official vsrl_eval.py
scenario 1/2 numbers.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: one dict per image: "boxes" (K x [x1, y1, x2, y2] pixels), "box_labels" (K raw COCO ids),
        "hois" (H x [subject index, object index or -1, verb id 0..28]) and "scores" (H floats).
    references: one dict per image, aligned with predictions: "boxes", "box_labels", "hois" (no scores).
    top_k: per-image cut by score; "default" = 100; None = no cut.
    prediction_set, reference_set: fast route for large inputs: ``hoi_sg_dataset.evaluation.HoiSet`` arrays
    passed
        as keyword arguments, with predictions = references = list(range(number of images)).
Returns:
    mAP_all, mAP_thesis, mAP_thesis_present (None where nothing to average; see "reasons"),
    ap_per_verb ({"<verb id>": AP} for the verbs with GT), reasons, warnings (as hoi_map).
Examples:
    >>> import evaluate, hoi_bench
    >>> metric = evaluate.load(hoi_bench.metric_path("vcoco_map"))
    >>> image = {"boxes": [[0, 0, 9, 9], [5, 5, 20, 20]], "box_labels": [1, 37],
    ...          "hois": [[0, 1, 0], [0, -1, 1]]}
    >>> result = metric.compute(predictions=[dict(image, scores=[0.9, 0.8])], references=[image])
    >>> round(result["mAP_all"], 6), round(result["mAP_thesis"], 4), sorted(result["ap_per_verb"])
    (1.0, 0.0417, ['0', '1'])
"""

_IMAGE = {
    "boxes": datasets.List(datasets.List(datasets.Value("float64"), length=4)),
    "box_labels": datasets.List(datasets.Value("int64")),
    "hois": datasets.List(datasets.List(datasets.Value("int64"), length=3)),
}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class VcocoMap(evaluate.Metric):
    """V-COCO(-SG) role mAP (QPIC vcoco_eval.py)."""

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
                "https://github.com/s-gupta/v-coco",
                "https://github.com/FujitsuResearch/hoi_sg",
            ],
        )

    def _compute(self, predictions, references, top_k="default", prediction_set=None, reference_set=None):
        if prediction_set is not None or reference_set is not None:
            pred, ref = check_fast_route(predictions, references, prediction_set, reference_set)
        else:
            pred = HoiSet.from_feature_rows(predictions, "predictions", with_scores=True)
            ref = HoiSet.from_feature_rows(references, "references", with_scores=False)
        result = vcoco_map(ref, pred, top_k=top_k)
        return {key: float(v) if isinstance(v, np.floating) else v for key, v in result.items()}
