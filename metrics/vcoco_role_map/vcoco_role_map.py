"""V-COCO / V-COCO-SG official role AP and agent AP (s-gupta/v-coco vsrl_eval.py) as an ``evaluate`` metric:
a thin wrapper over ``hoi_sg_dataset.role_ap``."""

import datasets
import evaluate

from hoi_sg_dataset.role_ap import (
    VcocoDetections,
    VcocoGroundTruth,
    detections_from_images,
    ground_truth_from_images,
    vcoco_role_ap,
)

_CITATION = """\
@article{gupta2015visual,
  title={Visual Semantic Role Labeling}, author={Gupta, Saurabh and Malik, Jitendra},
  journal={arXiv preprint arXiv:1505.04474}, year={2015}
}
@article{takemoto2023hoisg,
  title={HICO-DET-SG and V-COCO-SG: New Data Splits for Evaluating the Systematic Generalization Performance
  of Human-Object Interaction Detection Models},
  author={Takemoto, Kentaro and Yamada, Moyuru and Sasaki, Tomotake and Akima, Hisanao},
  journal={arXiv preprint arXiv:2305.09948}, year={2023}
}
"""

_DESCRIPTION = """\
The official V-COCO numbers of s-gupta/v-coco vsrl_eval.py: role AP of the 25 action-roles in scenario 1 (a GT
person without role object wants no predicted role box) and scenario 2 (the predicted box is then ignored),
agent AP of the 26 actions, and the means: the official 25-role mean, the 24-role mean without point_instr
that papers report, and the agent mean (sum / 26). Detections match the GT person of largest IoU (+1 pixel
convention, float32), persons V-COCO does not annotate are skipped, AP is all-point VOC AP stored as float32.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: one dict per image, aligned with references: "person_boxes" (K x [x1, y1, x2, y2]),
        "agent_scores" (K x 26), "role_boxes" (K x 25 x [x1, y1, x2, y2]), "role_scores" (K x 25); None or NaN
        = not predicted (a role box of four None counts as "no object").
    references: one dict per image: "image_id", "person_boxes" (P x 4, upstream's clipped x2 = x + w - 1
        boxes), "actions" (P x 26: 1 / 0, or -1 on every action for a person V-COCO does not annotate),
        "role_boxes" (P x 25 x 4, all -1 where the person has no role object).
    ground_truth, detections: fast route for large inputs: ``hoi_sg_dataset.role_ap.VcocoGroundTruth`` and
        ``VcocoDetections`` (``hoi_sg_dataset.vcoco_role_files`` reads them from the official files), with
        predictions = references = list(range(number of images)).
Returns:
    role_ap_scenario_1, role_ap_scenario_2 ({"hold_obj": AP, ...}, 25 each), agent_ap ({"hold": AP, ...}, 26),
    mean_role_ap_scenario_1, mean_role_ap_scenario_2, mean_role_ap_scenario_1_excl_point,
    mean_role_ap_scenario_2_excl_point, mean_agent_ap; None where undefined (no positive, or no scored
    detection: where the official script stops).
Examples:
    >>> import evaluate, hoi_bench
    >>> metric = evaluate.load(hoi_bench.metric_path("vcoco_role_map"))
    >>> no_role, ball = [[-1] * 4] * 24, [20, 20, 29, 29]
    >>> reference = {"image_id": 1, "person_boxes": [[0, 0, 9, 9]], "actions": [[1] + [0] * 25],
    ...              "role_boxes": [[ball] + no_role]}
    >>> prediction = {"person_boxes": [[0, 0, 9, 4]], "agent_scores": [[0.9] + [None] * 25],
    ...               "role_boxes": [[ball] + [[None] * 4] * 24], "role_scores": [[0.9] + [None] * 24]}
    >>> result = metric.compute(predictions=[prediction], references=[reference])
    >>> result["role_ap_scenario_1"]["hold_obj"], result["agent_ap"]["hold"], result["role_ap_scenario_1"]["sit_instr"]
    (1.0, 1.0, None)
"""

_BOX = datasets.List(datasets.Value("float32"), length=4)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class VcocoRoleMap(evaluate.Metric):
    """V-COCO(-SG) official role AP (scenarios 1 and 2) and agent AP."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features(
                    {
                        "predictions": {
                            "person_boxes": datasets.List(_BOX),
                            "agent_scores": datasets.List(
                                datasets.List(datasets.Value("float32"), length=26)
                            ),
                            "role_boxes": datasets.List(datasets.List(_BOX, length=25)),
                            "role_scores": datasets.List(datasets.List(datasets.Value("float32"), length=25)),
                        },
                        "references": {
                            "image_id": datasets.Value("int64"),
                            "person_boxes": datasets.List(_BOX),
                            "actions": datasets.List(datasets.List(datasets.Value("int8"), length=26)),
                            "role_boxes": datasets.List(datasets.List(_BOX, length=25)),
                        },
                    }
                ),
                datasets.Features(
                    {"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}
                ),
            ],
            reference_urls=["https://github.com/s-gupta/v-coco", "https://github.com/FujitsuResearch/hoi_sg"],
        )

    def _compute(self, predictions, references, ground_truth=None, detections=None):
        if ground_truth is not None or detections is not None:
            gt, dets = _check_fast_route(predictions, references, ground_truth, detections)
        else:
            gt = ground_truth_from_images(
                *(
                    [r[key] for r in references]
                    for key in ("image_id", "person_boxes", "actions", "role_boxes")
                )
            )
            dets = detections_from_images(
                *(
                    [p[key] for p in predictions]
                    for key in ("person_boxes", "agent_scores", "role_boxes", "role_scores")
                )
            )
        return vcoco_role_ap(gt, dets).to_json()


def _check_fast_route(predictions, references, ground_truth, detections):
    if not isinstance(ground_truth, VcocoGroundTruth) or not isinstance(detections, VcocoDetections):
        raise TypeError(
            "give both ground_truth (VcocoGroundTruth) and detections (VcocoDetections), or neither"
        )
    expected = list(range(len(ground_truth.image_ids)))
    if list(predictions) != expected or list(references) != expected:
        raise ValueError(
            "with ground_truth/detections, pass predictions = references = "
            f"list(range({len(expected)})) (one row per image, in order)"
        )
    return ground_truth, detections
