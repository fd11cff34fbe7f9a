"""The Bongard-HOI episode sampler (paper, Sec. 3): few-shot episodes from any HOI annotation.

For each concept ⟨person, action, object⟩: positives are instances with that action and object; negatives have
the same object and another action (hard negatives) and come from images where the concept does not occur.
Each side gets ``shots`` images plus one query, all from distinct images. An episode is kept only if it shares at
most ``max_overlap`` (τ) images with every episode kept before (the paper uses 3 for train, 2 for test). Each
image is cropped around the union of the human and object boxes with a margin. Val/test episodes are assigned
to the split named by whether the concept's object and action are in the training vocabulary.

Input is a list of ``HoiInstance`` (one human-object pair with one action), made from the PPDM/QPIC files of
HICO-DET, V-COCO and HICO-DET-SG / V-COCO-SG (``instances_from_annotations``), from hoi_sg dataset rows
(``instances_from_rows``) or built by hand. Output is
``SampledEpisode`` records, written in the official episode-file format (``write_episode_set``) or turned into
a dataset with the builder's features (``episodes_dataset``). Same instances and seed, same episodes.
"""

from __future__ import annotations

import logging
import math
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from bongard_hoi.formats import (
    SHOTS,
    Episode,
    EpisodeImage,
    episode_file_name,
    split_name,
    write_episode_file,
)
from hoi_bench.errors import ConfigError, DataError

logger = logging.getLogger(__name__)

DEFAULT_MAX_OVERLAP = {"train": 3, "val": 2, "test": 2}
DEFAULT_MARGIN = 0.1
_IMAGE_FOLDERS = {"hico": "hico_20160224_det/images", "vcoco": "vcoco"}


@dataclass(frozen=True)
class HoiInstance:
    """One human-object pair doing one action in one image.

    ``image`` is the path relative to the image root (what becomes ``im_path``); ``width``/``height`` clamp the
    crop when known.
    """

    image: str
    subject_box: tuple[float, float, float, float]
    object_box: tuple[float, float, float, float]
    action: str
    object: str
    width: int | None = None
    height: int | None = None


@dataclass(frozen=True)
class TrainingVocabulary:
    """Actions and objects seen in training; their positions are the ``act_id``/``obj_id`` written (-1 if unseen)."""

    actions: tuple[str, ...]
    objects: tuple[str, ...]

    @classmethod
    def from_instances(cls, instances: Iterable[HoiInstance]) -> TrainingVocabulary:
        """The sorted actions and objects occurring in ``instances`` (e.g. the training split's)."""
        instances = list(instances)
        return cls(tuple(sorted({i.action for i in instances})), tuple(sorted({i.object for i in instances})))

    def action_id(self, action: str) -> int:
        return self.actions.index(action) if action in self.actions else -1

    def object_id(self, obj: str) -> int:
        return self.objects.index(obj) if obj in self.objects else -1


@dataclass(frozen=True)
class SampledEpisode:
    """An episode in the official record format and the split it belongs to."""

    split: str
    episode: Episode


def class_name(name: str) -> str:
    """Bongard-HOI spelling of a class name: spaces become underscores.

    >>> class_name("tennis racket")
    'tennis_racket'
    """
    return name.replace(" ", "_")


def instances_from_annotations(records, dataset: str | None = None, *, image_folder: str | None = None
                               ) -> list[HoiInstance]:
    """Instances of PPDM/QPIC ``ImageRecord`` objects (``hoi_sg_dataset.formats.read_annotations``).

    Image paths follow the HAKE layout the Bongard-HOI images use: ``hico_20160224_det/images/<train2015|
    test2015>/<file>`` for HICO-DET and ``vcoco/<train2014|val2014>/<file>`` for V-COCO (``image_folder`` replaces
    the part before the original split). HOIs without an object (V-COCO ``object_id`` -1) are skipped.
    """
    from hoi_sg_dataset.formats import detect_dataset
    from hoi_sg_dataset.vocabulary import coco_objects, hico_verbs, vcoco_verbs

    records = list(records)
    if dataset is None:
        dataset = (detect_dataset(records[0].file_name) if records else None) or "hico"
    if dataset not in _IMAGE_FOLDERS:
        raise ConfigError("dataset", dataset, list(_IMAGE_FOLDERS))
    verbs = hico_verbs() if dataset == "hico" else vcoco_verbs()
    objects = coco_objects()
    folder = _IMAGE_FOLDERS[dataset] if image_folder is None else image_folder
    instances, seen = [], set()
    for record in records:
        origin = record.origin_split
        image = "/".join(p for p in (folder, origin, record.file_name) if p)
        for hoi in record.hoi_annotation:
            if hoi.object_id < 0:
                continue
            key = (image, hoi.subject_id, hoi.object_id, hoi.category_id)
            if key in seen:
                continue
            seen.add(key)
            subject, obj = record.annotations[hoi.subject_id], record.annotations[hoi.object_id]
            instances.append(HoiInstance(image, tuple(subject.bbox), tuple(obj.bbox),
                                         class_name(verbs.name_of(hoi.category_id)),
                                         class_name(objects.name_of(obj.category_id))))
    return instances


def instances_from_rows(rows, dataset: str, *, image_folder: str | None = None) -> list[HoiInstance]:
    """Instances of hoi_sg dataset rows (``load_dataset(HOI_SG_FOLDER, "hico_split3")["test"]``).

    Rows go back to upstream records through ``hoi_sg_dataset.builder.row_to_record``; the ``width``/``height``
    columns (present when images were embedded) clamp the crops. The ``image`` column is never decoded.
    """
    from dataclasses import replace

    from hoi_sg_dataset.builder import row_to_record

    if hasattr(rows, "column_names") and "image" in rows.column_names:
        rows = rows.remove_columns("image")
    records, sizes = [], {}
    for row in rows:
        record = row_to_record(row, dataset)
        records.append(record)
        if row.get("width") is not None:
            sizes[record.file_name] = (row["width"], row["height"])
    instances = instances_from_annotations(records, dataset, image_folder=image_folder)
    if not sizes:
        return instances
    return [replace(i, width=sizes[name][0], height=sizes[name][1]) if (name := i.image.rsplit("/", 1)[-1]) in sizes
            else i for i in instances]


def crop_around(instance: HoiInstance, margin: float = DEFAULT_MARGIN) -> tuple[int, int, int, int]:
    """Integer crop around the union of the human and object boxes, grown by ``margin`` of its size per side.

    >>> crop_around(HoiInstance("a.jpg", (10, 10, 50, 90), (40, 60, 110, 100), "ride", "horse", 105, 200))
    (0, 1, 105, 109)
    """
    x1 = min(instance.subject_box[0], instance.object_box[0])
    y1 = min(instance.subject_box[1], instance.object_box[1])
    x2 = max(instance.subject_box[2], instance.object_box[2])
    y2 = max(instance.subject_box[3], instance.object_box[3])
    dx, dy = margin * (x2 - x1), margin * (y2 - y1)
    crop = [max(math.floor(x1 - dx), 0), max(math.floor(y1 - dy), 0), math.ceil(x2 + dx), math.ceil(y2 + dy)]
    if instance.width is not None:
        crop[2] = min(crop[2], instance.width)
    if instance.height is not None:
        crop[3] = min(crop[3], instance.height)
    return tuple(crop)


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else round(float(value), 2)


def episode_image(instance: HoiInstance, vocabulary: TrainingVocabulary, margin: float = DEFAULT_MARGIN
                  ) -> EpisodeImage:
    """The official image dict of ``instance``: crop in image pixels, boxes relative to the crop."""
    crop = crop_around(instance, margin)

    def relative(box):
        return tuple(_number(v - crop[i % 2]) for i, v in enumerate(box))

    return EpisodeImage(f"./{instance.image}", crop, relative(instance.subject_box), relative(instance.object_box),
                        "person", instance.object, instance.action, vocabulary.object_id(instance.object), 1,
                        vocabulary.action_id(instance.action))


def sample_episodes(
    instances: Sequence[HoiInstance],
    num_episodes: int,
    *,
    role: str = "train",
    vocabulary: TrainingVocabulary | None = None,
    shots: int = SHOTS,
    max_overlap: int | None = None,
    margin: float = DEFAULT_MARGIN,
    seed: int = 0,
    max_failures: int | None = None,
) -> list[SampledEpisode]:
    """Sample up to ``num_episodes`` episodes (fewer, with a warning, when the overlap limit leaves no more).

    ``role`` is ``"train"``, ``"val"`` or ``"test"``; ``vocabulary`` defaults to the classes of ``instances``
    (everything seen). Concepts take turns in a seeded random order so every concept gets episodes. An attempt
    is rejected when it shares more than ``max_overlap`` images with any kept episode; sampling stops after
    ``max_failures`` consecutive rejections (default: 20 per concept).
    """
    if role not in DEFAULT_MAX_OVERLAP:
        raise ConfigError("episode role", role, list(DEFAULT_MAX_OVERLAP))
    if shots < 1 or num_episodes < 0:
        raise DataError(f"shots must be >= 1 and num_episodes >= 0, found shots={shots}, num_episodes={num_episodes}")
    tau = DEFAULT_MAX_OVERLAP[role] if max_overlap is None else max_overlap
    vocabulary = vocabulary or TrainingVocabulary.from_instances(instances)
    rng = np.random.default_rng(seed)
    pools = _concept_pools(instances, shots + 1)
    if not pools:
        logger.warning("no concept has %d positive and %d negative images; no episodes", shots + 1, shots + 1)
        return []
    concepts = sorted(pools)
    limit = max_failures if max_failures is not None else 20 * len(concepts)
    kept: list[SampledEpisode] = []
    episodes_of_image: dict[str, list[int]] = defaultdict(list)
    failures, turn, order = 0, 0, []
    with tqdm(total=num_episodes, desc=f"sampling {role} episodes", unit="episode", leave=False) as progress:
        while len(kept) < num_episodes and failures < limit:
            if turn == len(order):
                order, turn = [concepts[i] for i in rng.permutation(len(concepts))], 0
            concept = order[turn]
            turn += 1
            positives, negatives = pools[concept].draw(rng, shots + 1)
            images = [i.image for i in positives + negatives]
            shared = Counter(e for image in images for e in episodes_of_image.get(image, ()))
            if shared and max(shared.values()) > tau:
                failures += 1
                continue
            failures = 0
            for image in images:
                episodes_of_image[image].append(len(kept))
            kept.append(_episode(concept, positives, negatives, role, vocabulary, margin))
            progress.update(1)
    if len(kept) < num_episodes:
        logger.warning("%s: kept %d of %d episodes: %d attempts in a row shared more than %d images with an "
                       "earlier episode", role, len(kept), num_episodes, limit, tau)
    return kept


def why_no_episodes(instances: Sequence[HoiInstance], num_episodes: int, shots: int = SHOTS) -> str:
    """In words, why :func:`sample_episodes` returns no episode for ``instances`` (for an error message)."""
    need = shots + 1
    if num_episodes < 1:
        return f"--num-episodes is {num_episodes}"
    if not instances:
        return "the annotations hold no human-object interaction"
    candidates = _concept_pools(instances, 1)
    if not candidates:
        return "no object occurs with two different actions, so no concept has negative images"
    if _concept_pools(instances, need):
        return "every attempt shared more images with an earlier episode than the overlap limit allows"
    (action, obj), best = max(candidates.items(), key=lambda item: (
        min(len(item[1].positive_images), len(item[1].negative_images)), item[0]))
    return (f"no (action, object) concept has {need} images showing it and {need} images of the object with "
            f"other actions (--shots {shots} plus one query per side); the best, {action} {obj}, has "
            f"{len(best.positive_images)} and {len(best.negative_images)}")


@dataclass
class _ConceptPool:
    """Candidate instances of one concept, grouped by image so an episode never uses an image twice."""

    positive_images: list[list[HoiInstance]]
    negative_images: list[list[HoiInstance]]

    def draw(self, rng: np.random.Generator, size: int) -> tuple[list[HoiInstance], list[HoiInstance]]:
        return self._pick(rng, self.positive_images, size), self._pick(rng, self.negative_images, size)

    @staticmethod
    def _pick(rng, images, size):
        chosen = rng.choice(len(images), size=size, replace=False)
        return [images[i][int(rng.integers(len(images[i])))] for i in chosen]


def _concept_pools(instances: Sequence[HoiInstance], size: int) -> dict[tuple[str, str], _ConceptPool]:
    by_concept: dict[tuple[str, str], dict[str, list[HoiInstance]]] = defaultdict(lambda: defaultdict(list))
    images_of_object: dict[str, set[str]] = defaultdict(set)
    for instance in instances:
        by_concept[(instance.action, instance.object)][instance.image].append(instance)
        images_of_object[instance.object].add(instance.image)
    pools = {}
    for (action, obj), positive in by_concept.items():
        if len(positive) < size:
            continue
        negative: dict[str, list[HoiInstance]] = defaultdict(list)
        for (other_action, other_obj), images in by_concept.items():
            if other_obj != obj or other_action == action:
                continue
            for image, found in images.items():
                if image not in positive:  # the concept must not occur in a negative image
                    negative[image].extend(found)
        if len(negative) < size:
            continue
        pools[(action, obj)] = _ConceptPool([positive[i] for i in sorted(positive)],
                                            [negative[i] for i in sorted(negative)])
    return pools


def _episode(concept, positives, negatives, role, vocabulary, margin) -> SampledEpisode:
    action, obj = concept
    if role == "train":
        split = "train"
    else:
        split = split_name(role, obj in vocabulary.objects, action in vocabulary.actions)
    episode = Episode(tuple(episode_image(i, vocabulary, margin) for i in positives),
                      tuple(episode_image(i, vocabulary, margin) for i in negatives), f"{action}++{obj}")
    return SampledEpisode(split, episode)


def group_by_split(sampled: Iterable[SampledEpisode]) -> dict[str, list[Episode]]:
    """``{split: [episodes in sampling order]}``; an episode's index in its list is its official index."""
    splits: dict[str, list[Episode]] = defaultdict(list)
    for item in sampled:
        splits[item.split].append(item.episode)
    return dict(splits)


def write_episode_set(out_dir: str | os.PathLike, sampled: Iterable[SampledEpisode]) -> dict[str, Path]:
    """Write one official ``bongard_hoi_<split>.json`` per split into ``out_dir`` (replaced atomically)."""
    from hoi_bench.hub import staged_replace

    out_dir = Path(out_dir)
    grouped = group_by_split(sampled)
    # episode files of an earlier run are replaced; other files in out_dir are kept
    with staged_replace(out_dir, owned=lambda entry: entry.name.startswith("bongard_hoi_")) as stage:
        for split, episodes in grouped.items():
            write_episode_file(stage / episode_file_name(split), episodes)
    return {split: out_dir / episode_file_name(split) for split in grouped}


def episodes_dataset(sampled: Iterable[SampledEpisode]):
    """A ``DatasetDict`` with the builder's features; ``image`` is empty (build with images via the builder)."""
    import datasets

    from bongard_hoi.builder import episode_features

    def cell(image: EpisodeImage) -> dict:
        return {"image": None, "im_path": image.im_path, "crop_bbox": [int(v) for v in image.crop_bbox],
                "sub_bbox": list(image.sub_bbox), "obj_bbox": list(image.obj_bbox), "sub_class": image.sub_class,
                "obj_class": image.obj_class, "act_class": image.act_class, "sub_id": image.sub_id,
                "obj_id": image.obj_id, "act_id": image.act_id}

    features = episode_features()
    splits = {}
    for split, episodes in group_by_split(sampled).items():
        rows = [{"episode": index, "concept": e.concept_name, "concept_id": -1, "action": e.action,
                 "object": e.object, "positive_shots": [cell(i) for i in e.positive_shots],
                 "negative_shots": [cell(i) for i in e.negative_shots], "positive_query": cell(e.positive_query),
                 "negative_query": cell(e.negative_query), "query_labels": [0, 1]}
                for index, e in enumerate(episodes)]
        splits[split] = datasets.Dataset.from_list(rows, features=features)
    return datasets.DatasetDict(splits)
