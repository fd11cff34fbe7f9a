"""A deterministic, tiny, synthetic SportsHHI release in the native on-disk layout (tests, demo, baselines).

``write_sample(root)`` writes::

    root/annotations/sports_action_list.pbtxt          34 synthetic classes in the release's pbtxt format
    root/annotations/sports_{train,val}_v1.csv          13-column interaction rows
    root/annotations/gt_dense_proposals_{train,val}.pkl every human box per keyframe (N×4)
    root/annotations/sports_dense_proposals_{train,val}.pkl  jittered "detections" + a false one (N×5)
    root/frames/<video_id>/<frame:06d>.jpg              tiny 128×72 frames, people drawn as coloured boxes

Nothing here is real SportsHHI data. People walk smoothly across the frames; keyframes are every 5th
frame. The interaction label of an ordered (subject, object) pair is a function of the pair's geometry
(:func:`sample_interaction_label`), so a baseline that sees the two boxes can learn it: pairs whose box
centres are at least ``INTERACTION_DISTANCE`` apart do not interact, closer pairs get the direction from
the subject to the object (right 2, left 3, below 5, above 6 — ids of the sample's own action list).
The last frame of every video is a keyframe, so the official clip (4 frames at interval 2) is clipped there.
"""

from __future__ import annotations

import io
import logging
import os
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from hoi_bench.hub import staged_replace
from sportshhi import formats

logger = logging.getLogger(__name__)

FRAME_SIZE = (128, 72)
INTERACTION_DISTANCE = 0.3
LABEL_RIGHT, LABEL_LEFT, LABEL_BELOW, LABEL_ABOVE = 2, 3, 5, 6
_COLOURS = [(220, 60, 60), (60, 160, 220), (240, 200, 40), (120, 220, 120), (200, 90, 220), (250, 140, 40)]


def sample_action_list_path() -> Path:
    """The synthetic ``sports_action_list.pbtxt`` shipped with the package (release format, made-up names)."""
    return Path(str(resources.files("sportshhi") / "data" / "sample_action_list.pbtxt"))


def sample_interaction_label(subject_box: np.ndarray, object_box: np.ndarray) -> int | None:
    """The label the sample gives an ordered pair of normalised xyxy boxes, or ``None`` (no interaction).

    >>> sample_interaction_label(np.array([0.1, 0.2, 0.2, 0.5]), np.array([0.3, 0.25, 0.4, 0.55]))
    2
    >>> sample_interaction_label(np.array([0.3, 0.25, 0.4, 0.55]), np.array([0.1, 0.2, 0.2, 0.5]))
    3
    >>> sample_interaction_label(np.array([0.0, 0.2, 0.1, 0.5]), np.array([0.8, 0.2, 0.9, 0.5])) is None
    True
    """
    s = np.asarray(subject_box, dtype=np.float64)
    o = np.asarray(object_box, dtype=np.float64)
    dx = (o[0] + o[2]) / 2 - (s[0] + s[2]) / 2
    dy = (o[1] + o[3]) / 2 - (s[1] + s[3]) / 2
    if np.hypot(dx, dy) >= INTERACTION_DISTANCE:
        return None
    if abs(dx) >= abs(dy):
        return LABEL_RIGHT if dx > 0 else LABEL_LEFT
    return LABEL_BELOW if dy > 0 else LABEL_ABOVE


@dataclass(frozen=True)
class SampleLayout:
    """What :func:`write_sample` wrote: the root and the videos of each split."""

    root: Path
    videos: dict[str, list[str]]
    keyframes_per_video: int


def write_sample(
    root: str | os.PathLike,
    *,
    train_videos: int = 2,
    validation_videos: int = 1,
    keyframes_per_video: int = 8,
    people_per_video: int = 5,
    seed: int = 0,
) -> SampleLayout:
    """Write the synthetic release under ``root`` (replacing ``root`` atomically) and describe it.

    The same arguments always give the same bytes. Defaults make 3 videos of 8 keyframes (40 frames each);
    raise ``keyframes_per_video`` / ``train_videos`` for a bigger training set.
    """
    if min(train_videos, validation_videos) < 1 or keyframes_per_video < 1 or people_per_video < 2:
        raise ValueError("need at least one video per split, one keyframe per video and two people per video")
    rng = np.random.default_rng(seed)
    videos = {"train": [f"v_sample-court{i:02d}_c001" for i in range(train_videos)],
              "validation": [f"v_sample-court{train_videos + i:02d}_c001" for i in range(validation_videos)]}
    root = Path(root).absolute()
    with staged_replace(root) as stage:
        (stage / "annotations").mkdir()
        shutil.copyfile(sample_action_list_path(), stage / formats.ACTION_LIST_FILE)
        for split, names in videos.items():
            rows, gt_proposals, detections = [], {}, {}
            for video_id in names:
                tracks = _walk(rng, people_per_video, keyframes_per_video)
                _write_frames(stage, video_id, tracks)
                for t in range(1, keyframes_per_video + 1):
                    boxes = tracks[:, t]
                    key = formats.keyframe_key(video_id, t)
                    gt_proposals[key] = boxes.astype(np.float32)
                    detections[key] = _detect(rng, boxes)
                    rows += _interactions(video_id, t, boxes)
            formats.write_annotation_csv(stage / formats.annotation_file(split), _annotations(rows))
            formats.write_proposals(stage / formats.gt_proposal_file(split), gt_proposals)
            formats.write_proposals(stage / formats.detector_proposal_file(split), detections)
    logger.info("wrote the synthetic SportsHHI sample to %s", root)
    return SampleLayout(root=root, videos=videos, keyframes_per_video=keyframes_per_video)


def _walk(rng: np.random.Generator, people: int, keyframes: int) -> np.ndarray:
    """Person boxes at keyframes 0..K: (people, K + 1, 4) normalised xyxy, moving by a smooth random walk."""
    size = np.stack([rng.uniform(0.07, 0.11, people), rng.uniform(0.2, 0.3, people)], axis=1)
    centre = rng.uniform(0.15, 0.85, (people, 2))
    centres = [centre]
    for _ in range(keyframes):
        centre = np.clip(centre + rng.normal(0.0, 0.07, centre.shape), 0.12, 0.88)
        centres.append(centre)
    centres = np.stack(centres, axis=1)
    half = size[:, None, :] / 2
    boxes = np.concatenate([centres - half, centres + half], axis=2)
    return np.round(np.clip(boxes, 0.0, 1.0), 4)


def _boxes_at_frame(tracks: np.ndarray, frame: int) -> np.ndarray:
    """Boxes at any frame, interpolated linearly between the keyframes around it (frame 5·t is keyframe t)."""
    position = frame / formats.FRAMES_PER_KEYFRAME
    low = min(int(np.floor(position)), tracks.shape[1] - 1)
    high = min(low + 1, tracks.shape[1] - 1)
    weight = position - low
    return tracks[:, low] * (1 - weight) + tracks[:, high] * weight


def _write_frames(stage: Path, video_id: str, tracks: np.ndarray) -> None:
    folder = stage / "frames" / video_id
    folder.mkdir(parents=True)
    width, height = FRAME_SIZE
    last_frame = (tracks.shape[1] - 1) * formats.FRAMES_PER_KEYFRAME
    for frame in range(1, last_frame + 1):
        image = Image.new("RGB", FRAME_SIZE, (150, 110, 70))
        draw = ImageDraw.Draw(image)
        draw.line([(width // 2, 0), (width // 2, height)], fill=(235, 235, 235), width=1)
        for person, box in enumerate(_boxes_at_frame(tracks, frame)):
            pixels = [box[0] * width, box[1] * height, box[2] * width, box[3] * height]
            draw.rectangle(pixels, fill=_COLOURS[person % len(_COLOURS)], outline=(20, 20, 20))
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=90)
        (folder / f"{frame:06d}.jpg").write_bytes(buffer.getvalue())


def _detect(rng: np.random.Generator, boxes: np.ndarray) -> np.ndarray:
    """Detector-like proposals: every person jittered with a high score, plus one low-scored false box."""
    jittered = np.clip(boxes + rng.normal(0.0, 0.008, boxes.shape), 0.0, 1.0)
    jittered[:, 2:] = np.maximum(jittered[:, 2:], jittered[:, :2])
    x, y = rng.uniform(0.05, 0.8, 2)
    false_box = np.array([[x, y, x + 0.1, y + 0.15]])
    scores = np.concatenate([rng.uniform(0.9, 1.0, len(boxes)), rng.uniform(0.3, 0.9, 1)])
    return np.concatenate([np.vstack([jittered, false_box]), scores[:, None]], axis=1).astype(np.float32)


def _interactions(video_id: str, keyframe: int, boxes: np.ndarray) -> list[tuple]:
    rows = []
    for subject in range(len(boxes)):
        for obj in range(len(boxes)):
            label = None if subject == obj else sample_interaction_label(boxes[subject], boxes[obj])
            if label is not None:
                frame = keyframe * formats.FRAMES_PER_KEYFRAME
                rows.append((video_id, frame, boxes[subject], boxes[obj], label, subject + 1, obj + 1))
    return rows


def _annotations(rows: list[tuple]) -> formats.Annotations:
    return formats.Annotations(
        video_ids=np.array([r[0] for r in rows], dtype=object),
        frame_ids=np.array([r[1] for r in rows], dtype=np.int64),
        subject_boxes=np.array([r[2] for r in rows], dtype=np.float64).reshape(-1, 4),
        object_boxes=np.array([r[3] for r in rows], dtype=np.float64).reshape(-1, 4),
        labels=np.array([r[4] for r in rows], dtype=np.int64),
        subject_ids=np.array([r[5] for r in rows], dtype=np.int64),
        object_ids=np.array([r[6] for r in rows], dtype=np.int64))
