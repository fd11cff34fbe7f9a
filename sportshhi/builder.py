"""``datasets`` builder for SportsHHI: one row per annotated keyframe, with temporal context and proposals.

Used programmatically (``datasets`` >= 4 runs no loading scripts): ``hoi-bench build sportshhi --data-dir DIR
--out FOLDER`` runs it and writes a Hub folder that ``load_dataset(FOLDER, "hhi")`` reads.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from numbers import Integral
from pathlib import Path

import datasets
import numpy as np

from hoi_bench.boxes import iou_matrix
from hoi_bench.errors import FormatError, MissingFilesError
from hoi_bench.files import resolve_inside
from hoi_bench.hub import CardSpec, build_hub_folder
from hoi_bench.images import embedded_image, image_size
from sportshhi import formats

logger = logging.getLogger(__name__)

CITATION = """\
@inproceedings{wu2024sportshhi,
  title     = {SportsHHI: A Dataset for Human-Human Interaction Detection in Sports Videos},
  author    = {Wu, Tao and He, Runyu and Wu, Gangshan and Wang, Limin},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  year      = {2024}
}
"""

_DESCRIPTION = """\
SportsHHI: human-human interaction detection in basketball and volleyball videos (MultiSports clips, 25 FPS,
keyframes annotated at 5 FPS). One row per annotated keyframe: the keyframe image, a short clip of context
frames around it, every human box of the keyframe (GT proposals, HHICls mode), detected human boxes with
scores (HHIDet mode) and the interactions as ordered (subject, object) pairs of human boxes with a class from
sports_action_list.pbtxt. The release has no test split; the official code tests on validation.
"""

_HOMEPAGE = "https://github.com/MCG-NJU/SportsHHI"
_LICENSE = "cc-by-nc-4.0"
SAME_PERSON_IOU = 0.95
"""A GT proposal box overlapping an annotated person at least this much (IoU) is that person, not another."""


@dataclass
class SportsHHIConfig(datasets.BuilderConfig):
    """A SportsHHI config; ``clip_len`` frames at ``frame_interval`` around frame ``5·t`` form the context.

    The default is the official clip (SampleAVAFrames with clip_len 4, frame_interval 2): frames
    ``5t-4, 5t-2, 5t, 5t+2``, each clipped to the first and last frame present for the video.
    ``clip_len=0`` leaves the context out (smaller folders).
    """

    clip_len: int = 4
    frame_interval: int = 2

    def __post_init__(self):
        super().__post_init__()
        if self.clip_len < 0 or self.frame_interval < 1:
            raise ValueError(f"clip_len must be >= 0 and frame_interval >= 1, found {self.clip_len}, "
                             f"{self.frame_interval}")


def context_frame_indices(keyframe: int, clip_len: int, frame_interval: int, first: int,
                          last: int) -> list[int]:
    """Frame indices of the context clip of keyframe ``t`` (mmaction's SampleAVAFrames), clipped to the video.

    >>> context_frame_indices(21, 4, 2, first=1, last=4500)
    [101, 103, 105, 107]
    >>> context_frame_indices(1, 4, 2, first=1, last=6)
    [1, 3, 5, 6]
    """
    centre = keyframe * formats.FRAMES_PER_KEYFRAME
    start = centre - (clip_len // 2) * frame_interval
    return [int(min(max(start + i * frame_interval, first), last)) for i in range(clip_len)]


class SportsHHI(datasets.GeneratorBasedBuilder):
    """SportsHHI keyframes with temporal context, human boxes, detections and interactions."""

    VERSION = datasets.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "First release: config hhi (train, validation) from the v1 annotation CSVs."}
    BUILDER_CONFIG_CLASS = SportsHHIConfig
    BUILDER_CONFIGS = [SportsHHIConfig(name="hhi", version=VERSION,
                                       description="Annotated keyframes with the official 4-frame clip.")]
    DEFAULT_CONFIG_NAME = "hhi"
    MANUAL_DOWNLOAD_INSTRUCTIONS = """\
SportsHHI is gated on the Hugging Face Hub (MCG-NJU/SportsHHI, CC BY-NC 4.0): accept its conditions, download
it, unzip frames.zip, and pass the folder holding `annotations/` and `frames/` as data_dir. Expected files:
  annotations/sports_action_list.pbtxt
  annotations/sports_train_v1.csv               annotations/sports_val_v1.csv
  annotations/gt_dense_proposals_train.pkl      annotations/gt_dense_proposals_val.pkl
  annotations/sports_dense_proposals_train.pkl  annotations/sports_dense_proposals_val.pkl
  frames/<video_id>/<frame:06d>.jpg             every keyframe (frame 5·t) and its context frames
"""

    def _info(self) -> datasets.DatasetInfo:
        actions = read_release_action_list(self.config.data_dir).sorted_by_id()
        box = datasets.List(datasets.Value("float64"), length=4)
        pixel_box = datasets.List(datasets.Value("float32"), length=4)
        features = datasets.Features({
            "keyframe_key": datasets.Value("string"),
            "video_id": datasets.Value("string"),
            "keyframe": datasets.Value("int32"),
            "frame_index": datasets.Value("int32"),
            "image": datasets.Image(),
            "width": datasets.Value("int32"),
            "height": datasets.Value("int32"),
            "context": datasets.List(datasets.Image()),
            "context_frame_indices": datasets.List(datasets.Value("int32")),
            "human_boxes": datasets.List(box),
            "human_boxes_pixels": datasets.List(pixel_box),
            "human_person_ids": datasets.List(datasets.Value("int32")),
            "detected_boxes": datasets.List(box),
            "detected_boxes_pixels": datasets.List(pixel_box),
            "detected_scores": datasets.List(datasets.Value("float32")),
            "interactions": datasets.List({
                "subject_index": datasets.Value("int32"),
                "object_index": datasets.Value("int32"),
                "label": datasets.ClassLabel(names=list(actions.names)),
                "label_id": datasets.Value("int32"),
                "subject_person_id": datasets.Value("int32"),
                "object_person_id": datasets.Value("int32"),
            }),
        })
        return datasets.DatasetInfo(description=_DESCRIPTION, features=features, homepage=_HOMEPAGE,
                                    license=_LICENSE, citation=CITATION)

    def _split_generators(self, dl_manager) -> list[datasets.SplitGenerator]:
        root = Path(self.config.data_dir or dl_manager.manual_dir or "")
        check_release_files(root)
        actions = read_release_action_list(root)
        keyframes = {split: read_split(root, split, actions) for split in formats.RELEASE_SPLITS}
        plan = FramePlan(root, self.config.clip_len, self.config.frame_interval)
        missing = sorted({path for records in keyframes.values() for record in records
                          for path in plan.missing(record)})
        if missing:
            raise MissingFilesError(str(root), missing, what="frames",
                                    hint="unzip frames.zip of the release into data_dir/frames")
        return [datasets.SplitGenerator(name=split, gen_kwargs={"records": records, "plan": plan,
                                                                "actions": actions})
                for split, records in keyframes.items()]

    def _generate_examples(self, records: list[KeyframeRecord], plan: FramePlan,
                           actions: formats.ActionList) -> Iterator[tuple[str, dict]]:
        class_index = {label_id: i for i, label_id in enumerate(actions.sorted_by_id().label_ids)}
        for record in records:
            yield record.key, record.example(plan, class_index)


# --------------------------------------------------------------------------------------------- release files


def read_release_action_list(data_dir: str | os.PathLike | None) -> formats.ActionList:
    """The action list of a release folder (names always come from its pbtxt), once every annotation file is
    known to be present."""
    if data_dir is None:
        raise MissingFilesError("<no data_dir>", [formats.ACTION_LIST_FILE], what="files",
                                hint="pass data_dir= (the folder holding annotations/ and frames/)")
    check_release_files(Path(data_dir))
    return formats.read_action_list(Path(data_dir) / formats.ACTION_LIST_FILE)


def release_annotation_files() -> list[str]:
    """Every annotation file the builder reads, relative to ``data_dir``."""
    files = [formats.ACTION_LIST_FILE]
    for split in formats.RELEASE_SPLITS:
        files += [formats.annotation_file(split), formats.gt_proposal_file(split),
                  formats.detector_proposal_file(split)]
    return files


def check_release_files(root: Path) -> None:
    """Raise one ``MissingFilesError`` naming every absent annotation file (before anything is read)."""
    missing = [name for name in release_annotation_files() if not (root / name).is_file()]
    if missing:
        raise MissingFilesError(str(root), missing, what="annotation files",
                                hint=SportsHHI.MANUAL_DOWNLOAD_INSTRUCTIONS)


@dataclass
class KeyframeRecord:
    """Everything known about one annotated keyframe before its frames are read."""

    video_id: str
    keyframe: int
    interactions: list[tuple]  # (subject box, object box, label id, subject person id, object person id)
    gt_boxes: np.ndarray  # (N, 5) GT proposals of the keyframe (score column 1.0)
    detections: np.ndarray  # (M, 5) detector proposals with scores
    source: str = ""  # the annotation CSV the keyframe comes from, named in errors

    @property
    def key(self) -> str:
        return formats.keyframe_key(self.video_id, self.keyframe)

    def humans(self) -> tuple[np.ndarray, list[int], list[tuple[int, int]]]:
        """Human boxes (annotated people first, then unmatched GT proposals), their person ids, and each
        interaction's (subject index, object index) into them."""
        boxes: list[tuple] = []
        person_ids: list[int] = []
        pairs = []
        for subject_box, object_box, _, subject_id, object_id in self.interactions:
            indices = []
            for box, person in ((subject_box, subject_id), (object_box, object_id)):
                box = tuple(float(v) for v in box)
                if box not in boxes:
                    boxes.append(box)
                    person_ids.append(int(person))
                indices.append(boxes.index(box))
            pairs.append((indices[0], indices[1]))
        annotated = np.array(boxes, dtype=np.float64).reshape(-1, 4)
        extra = self.gt_boxes[:, :4]
        if len(extra) and len(annotated):
            extra = extra[iou_matrix(extra, annotated).max(axis=1) < SAME_PERSON_IOU]
        return np.concatenate([annotated, extra]), person_ids + [-1] * len(extra), pairs

    def example(self, plan: FramePlan, class_index: dict[int, int]) -> dict:
        frame = self.keyframe * formats.FRAMES_PER_KEYFRAME
        image_path = plan.frame_path(self, frame)
        width, height = image_size(image_path)
        scale = np.array([width, height, width, height], dtype=np.float64)
        context = plan.context(self.video_id, self.keyframe)
        boxes, person_ids, pairs = self.humans()
        return {
            "keyframe_key": self.key,
            "video_id": self.video_id,
            "keyframe": self.keyframe,
            "frame_index": frame,
            "image": embedded_image(image_path),
            "width": width,
            "height": height,
            "context": [embedded_image(plan.frame_path(self, f)) for f in context],
            "context_frame_indices": context,
            "human_boxes": boxes.tolist(),
            "human_boxes_pixels": (boxes * scale).tolist(),
            "human_person_ids": person_ids,
            "detected_boxes": self.detections[:, :4].tolist(),
            "detected_boxes_pixels": (self.detections[:, :4] * scale).tolist(),
            "detected_scores": self.detections[:, 4].tolist(),
            "interactions": [
                {"subject_index": s, "object_index": o, "label": class_index[label], "label_id": label,
                 "subject_person_id": subject_id, "object_person_id": object_id}
                for (s, o), (_, _, label, subject_id, object_id) in zip(pairs, self.interactions)],
        }


def read_split(root: Path, split: str, actions: formats.ActionList) -> list[KeyframeRecord]:
    """The annotated keyframes of a split, sorted by video and keyframe, with their proposals attached.

    Keyframes without a GT-proposal entry get only their annotated people; keyframes without a detector entry
    get no detections (the official loader substitutes a dummy [0, 0, 1, 1] box instead).
    """
    csv_path = root / formats.annotation_file(split)
    annotations = formats.read_annotation_csv(csv_path, actions, one_label_per_pair=True)
    if not len(annotations):
        raise FormatError(str(csv_path), f"no interactions: the {split} split would be empty",
                          expected="at least one annotation row", found="no rows")
    gt_proposals = formats.read_proposals(root / formats.gt_proposal_file(split))
    detections = formats.read_proposals(root / formats.detector_proposal_file(split))
    grouped: dict[tuple[str, int], list[tuple]] = {}
    for i, keyframe in enumerate(annotations.keyframes.tolist()):
        grouped.setdefault((str(annotations.video_ids[i]), keyframe), []).append(
            (annotations.subject_boxes[i], annotations.object_boxes[i], int(annotations.labels[i]),
             int(annotations.subject_ids[i]), int(annotations.object_ids[i])))
    empty = np.zeros((0, 5))
    records = []
    for (video_id, keyframe), interactions in sorted(grouped.items()):
        key = formats.keyframe_key(video_id, keyframe)
        records.append(KeyframeRecord(video_id, keyframe, interactions, gt_proposals.get(key, empty),
                                      detections.get(key, empty), str(csv_path)))
    without_gt = sum(1 for r in records if r.key not in gt_proposals)
    if without_gt:
        logger.warning("%s: %d of %d keyframes have no GT proposals; only their annotated people are kept",
                       split, without_gt, len(records))
    return records


class FramePlan:
    """Which frame files a keyframe needs; each video's frame range comes from the frames present on disk.

    Every frame path stays inside ``root``: a ``video_id`` with ``..`` or an absolute path, and a frame or video
    folder that is a symlink leading out of the release, are a ``FormatError`` naming the CSV, the keyframe and
    the field (as the other builders refuse image paths that leave the data folder), so a build never embeds
    (and later uploads) an unrelated file.
    """

    def __init__(self, root: Path, clip_len: int, frame_interval: int) -> None:
        for name, value, least in (("clip_len", clip_len, 0), ("frame_interval", frame_interval, 1)):
            if not isinstance(value, Integral) or value < least:  # datasets sets fields without __post_init__
                raise FormatError(None, "invalid SportsHHI config", field=name, expected=f"an integer >= {least}",
                                  found=value)
        self.root = root
        self.clip_len = clip_len
        self.frame_interval = frame_interval
        self._ranges: dict[str, tuple[int, int] | None] = {}

    def frame_path(self, record: KeyframeRecord, frame: int) -> Path:
        """The frame file ``frame`` of the record's video, checked (links resolved) to stay inside ``root``; the
        path keeps its own name, so an embedded frame is named ``000105.jpg`` even when it is a link."""
        relative = formats.frame_file(record.video_id, frame)
        resolve_inside(self.root, relative, file=record.source, record=record.key, field="video_id")
        return self.root / relative

    def frame_range(self, video_id: str) -> tuple[int, int] | None:
        """(first, last) frame index present for ``video_id``, or ``None`` when it has no frames."""
        if video_id not in self._ranges:
            folder = self.root / "frames" / video_id
            files = folder.glob("*.jpg") if folder.is_dir() else []
            numbers = [int(p.stem) for p in files if p.stem.isdigit()]
            self._ranges[video_id] = (min(numbers), max(numbers)) if numbers else None
        return self._ranges[video_id]

    def context(self, video_id: str, keyframe: int) -> list[int]:
        first, last = self.frame_range(video_id) or (1, 10 ** 9)
        return context_frame_indices(keyframe, self.clip_len, self.frame_interval, first, last)

    def missing(self, record: KeyframeRecord) -> list[str]:
        """Relative paths of the keyframe's frames (keyframe + context) that are not on disk; a frame path that
        leaves ``root`` is refused (see the class docstring) before the video folder is listed."""
        resolve_inside(self.root, str(Path(formats.frame_file(record.video_id, 0)).parent), file=record.source,
                       record=record.key, field="video_id")
        centre = record.keyframe * formats.FRAMES_PER_KEYFRAME
        frames = sorted({centre, *self.context(record.video_id, record.keyframe)})
        return [formats.frame_file(record.video_id, f) for f in frames if not self.frame_path(record, f).is_file()]


# --------------------------------------------------------------------------------------------- Hub folder


def card_spec(synthetic: bool = False) -> CardSpec:
    """The dataset card of a SportsHHI Hub folder (template ``card.md``, CC BY-NC 4.0, gated-access note);
    ``synthetic``: the folder is built from hoi-bench's synthetic sample, and the card says so."""
    from hoi_bench.cards import select_source

    template = select_source((resources.files("sportshhi") / "card.md").read_text(encoding="utf-8"),
                             synthetic=synthetic)
    return CardSpec(pretty_name="SportsHHI", license=_LICENSE, task_categories=["video-classification"],
                    template=template, citation=CITATION,
                    tags=["human-human-interaction", "video", "sports", "hoi-bench"],
                    extra_metadata={"extra_gated_prompt": "The SportsHHI release is gated and licensed "
                                    "CC BY-NC 4.0; accept the conditions of MCG-NJU/SportsHHI to use it."})


def release_checksums(data_dir: str | os.PathLike) -> dict[str, str]:
    """SHA-256 of every annotation file the builder reads, recorded in the card as the release used."""
    checksums = {}
    for name in release_annotation_files():
        digest = hashlib.sha256()
        with open(Path(data_dir) / name, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        checksums[name] = digest.hexdigest()
    return checksums


def config_card(builder: datasets.DatasetBuilder, built: datasets.DatasetDict) -> str:
    """The ``hhi`` section of the card: sizes per split, the context clip, and the source files' checksums."""
    config = builder.config
    rows = "\n".join(f"| {split} | {len(ds):,} | {sum(len(i) for i in ds['interactions']):,} |"
                     for split, ds in built.items())
    context = (f"{config.clip_len} context frames at interval {config.frame_interval} around frame 5·t"
               if config.clip_len else "no context frames (clip_len=0)")
    checksums = release_checksums(config.data_dir)
    sources = "\n".join(f"| `{name}` | `{digest}` |" for name, digest in checksums.items())
    return (f"### `{config.name}`\n\nAnnotated keyframes with {context}. "
            f"Builder version {builder.VERSION}.\n\n"
            f"| split | keyframes | interactions |\n|---|---|---|\n{rows}\n\n"
            f"Built from (SHA-256):\n\n| file | sha256 |\n|---|---|\n{sources}\n")


def build_sportshhi_folder(data_dir: str | os.PathLike, out_dir: str | os.PathLike, *,
                           num_proc: int | None = None, synthetic: bool = False, **config_kwargs) -> Path:
    """Build config ``hhi`` from the release folder ``data_dir`` into the Hub folder ``out_dir``; return it.

    ``config_kwargs`` go to :class:`SportsHHIConfig` (``clip_len``, ``frame_interval``). ``synthetic``: ``data_dir``
    is hoi-bench's synthetic sample (the card says so).
    """
    return build_hub_folder(SportsHHI, ["hhi"], out_dir, card_spec(synthetic), data_dir=data_dir, num_proc=num_proc,
                            config_card=config_card, default_config="hhi", **config_kwargs)
