"""The QPIC-style triplet detector shared by the benchmarks whose unit is a (subject, object, interaction)
triplet: ``transformers``' DETR body with QPIC's heads (:class:`HoiDetector`), matcher
(:class:`HungarianMatcherHOI`), losses (:class:`SetCriterionHOI`) and post-processing
(:class:`PostProcessHOI`, :func:`rank_triplets`), QPIC's DETR initialisation (:func:`init_from_detr`) and
training augmentation (:mod:`hoi_bench.detection.transforms`).

Constructor arguments and dict keys are QPIC's (hitachi-rd-cv/qpic, ``models/hoi.py``, ``models/matcher.py``),
so results can be compared with QPIC's own code. ``docs/baselines.md`` says what differs and why.
"""

from hoi_bench.detection.criterion import SetCriterionHOI, focal_verb_loss, weight_dict
from hoi_bench.detection.detr_init import init_from_detr, load_detr_detector
from hoi_bench.detection.matcher import HungarianMatcherHOI
from hoi_bench.detection.model import HoiDetector, detr_config
from hoi_bench.detection.postprocess import PostProcessHOI, RankedTriplets, rank_triplets
from hoi_bench.detection.targets import pair_targets

__all__ = ["HoiDetector", "HungarianMatcherHOI", "PostProcessHOI", "RankedTriplets", "SetCriterionHOI",
           "detr_config", "focal_verb_loss", "init_from_detr", "load_detr_detector", "pair_targets",
           "rank_triplets", "weight_dict"]
