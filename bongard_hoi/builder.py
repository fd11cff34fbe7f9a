"""``datasets`` builder of the Bongard-HOI episode files: one row per episode, images embedded.

Splits are named after the official files (``train``, ``val_<obj>_<act>`` x4, ``test_<obj>_<act>`` x4). A row
holds the episode index (0-based, in file order), the concept and its action and object, 6 positive and 6
negative shot images, the positive and negative query images, each with boxes and labels, and the query labels
(``[positive, negative]``: the positive query belongs to the concept).

With ``crop=True`` (default) each image is the official crop (``crop_bbox`` with the openimages x1.6 fix) and the
boxes are in crop pixels, as the official loader feeds the model; ``crop=False`` embeds the whole original file
with boxes shifted to image pixels.
"""

from __future__ import annotations

import functools
import logging
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets

from bongard_hoi.formats import SHOTS, SPLITS, Episode, EpisodeImage, episode_file_name, read_episode_file
from bongard_hoi.geometry import crop_bytes, is_openimages, place_image, resolve_image_path
from hoi_bench.errors import ConfigError, DataError, MissingFilesError
from hoi_bench.files import resolve_inside
from hoi_bench.hub import CardSpec
from hoi_bench.images import embedded_image, image_size

logger = logging.getLogger(__name__)

CONFIG_NAME = "episodes"
REFS_CONFIG_NAME = "episode_refs"
IMAGES_CONFIG_NAME = "images"
CONFIG_NAMES = (CONFIG_NAME, REFS_CONFIG_NAME, IMAGES_CONFIG_NAME)
QUERY_LABELS = ("positive", "negative")

CITATION = """\
@inproceedings{jiang2022bongard,
  title     = {Bongard-HOI: Benchmarking Few-Shot Visual Reasoning for Human-Object Interactions},
  author    = {Jiang, Huaizu and Ma, Xiaojian and Nie, Weili and Yu, Zhiding and Zhu, Yuke and Anandkumar, Anima},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  year      = {2022}
}
"""
_DESCRIPTION = "Bongard-HOI: 2-way 6-shot few-shot episodes of human-object interaction concepts (NVlabs, CVPR 2022)."
_HOMEPAGE = "https://github.com/NVlabs/Bongard-HOI"
_LICENSE = ("Annotations and images: Caltech/Zenodo record 7079175 (HAKE images keep their source licences); "
            "NVlabs code: NVIDIA Source Code License (non-commercial).")

MANUAL_DOWNLOAD_INSTRUCTIONS = """\
Download bongard_hoi_annotations.tar and bongard_hoi_images.tar from Zenodo record 7079175
(https://zenodo.org/record/7079175, see NVlabs/Bongard-HOI assets/dataset.md) and arrange `data_dir` as:

  <data_dir>/bongard_hoi_release/bongard_hoi_train.json
  <data_dir>/bongard_hoi_release/bongard_hoi_val_seen_obj_seen_act.json
  <data_dir>/bongard_hoi_release/bongard_hoi_val_seen_obj_unseen_act.json
  <data_dir>/bongard_hoi_release/bongard_hoi_val_unseen_obj_seen_act.json
  <data_dir>/bongard_hoi_release/bongard_hoi_val_unseen_obj_unseen_act.json
  <data_dir>/bongard_hoi_release/bongard_hoi_test_seen_obj_seen_act.json
  <data_dir>/bongard_hoi_release/bongard_hoi_test_seen_obj_unseen_act.json
  <data_dir>/bongard_hoi_release/bongard_hoi_test_unseen_obj_seen_act.json
  <data_dir>/bongard_hoi_release/bongard_hoi_test_unseen_obj_unseen_act.json
  <data_dir>/images/   the extracted image tar: hake_images_20190730/, hcvrd/, hico_20160224_det/images/,
                       openimages/images/, pic/image/{train,val}/, vcoco/{train2014,val2014}/

(the annotation tar unpacks as bongard_hoi_release/; the image tar is what NVlabs puts in
assets/data/hake/images/). Other places can be named with the builder options `annotation_dir` and `image_dir`
(absolute, or relative to data_dir); `splits` builds a subset of the nine files.
"""

VERSION = datasets.Version("1.0.0")
RELEASE_NOTES = {
    "1.0.0": "First release: one row per episode, crops with the openimages x1.6 fix and the pic folder fallback.",
}


def image_features() -> datasets.Features:
    """The per-image struct: picture, original path, crop (image pixels), boxes and labels."""
    box = datasets.List(datasets.Value("float32"), length=4)
    return datasets.Features({
        "image": datasets.Image(),
        "im_path": datasets.Value("string"),
        "crop_bbox": datasets.List(datasets.Value("int32"), length=4),
        "sub_bbox": box,
        "obj_bbox": box,
        "sub_class": datasets.Value("string"),
        "obj_class": datasets.Value("string"),
        "act_class": datasets.Value("string"),
        "sub_id": datasets.Value("int32"),
        "obj_id": datasets.Value("int32"),
        "act_id": datasets.Value("int32"),
    })


def image_id(image: EpisodeImage, crop_bbox: Sequence[int] | None) -> str:
    """Key of an embedded picture in the ``images`` config: the path, plus the crop when cropping.

    >>> from bongard_hoi.formats import EpisodeImage
    >>> image_id(EpisodeImage("./hcvrd/a.jpg", (1, 2, 30, 40), (0,) * 4, (0,) * 4, "person", "cup", "hold", 1, 1, 2),
    ...          (1, 2, 30, 40))
    'hcvrd/a.jpg#1,2,30,40'
    """
    if crop_bbox is None:
        return image.relative_path
    return f"{image.relative_path}#{','.join(str(int(v)) for v in crop_bbox)}"


def picture_features() -> datasets.Features:
    """A row of the ``images`` config: one picture per distinct (path, crop) of a split."""
    return datasets.Features({"image_id": datasets.Value("string"), "image": datasets.Image(),
                              "im_path": datasets.Value("string"),
                              "crop_bbox": datasets.List(datasets.Value("int32"), length=4)})


def episode_features(refs: bool = False) -> datasets.Features:
    """One row per episode; with ``refs`` each image is an ``image_id`` into the ``images`` config."""
    image = dict(image_features())
    if refs:
        image = {"image_id": datasets.Value("string"), **{k: v for k, v in image.items() if k != "image"}}
    return datasets.Features({
        "episode": datasets.Value("int32"),
        "concept": datasets.Value("string"),
        "concept_id": datasets.Value("int32"),
        "action": datasets.Value("string"),
        "object": datasets.Value("string"),
        "positive_shots": datasets.List(image, length=SHOTS),
        "negative_shots": datasets.List(image, length=SHOTS),
        "positive_query": image,
        "negative_query": image,
        "query_labels": datasets.List(datasets.ClassLabel(names=list(QUERY_LABELS)), length=2),
    })


@dataclass
class BongardHoiConfig(datasets.BuilderConfig):
    """Options: ``crop`` (official crops, or whole images), which ``splits``, and where the files are."""

    crop: bool = True
    splits: tuple[str, ...] | None = None
    annotation_dir: str = "bongard_hoi_release"
    image_dir: str = "images"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.splits is not None:
            self.splits = tuple(self.splits)
            for split in self.splits:
                if split not in SPLITS:
                    raise ConfigError("Bongard-HOI split", split, SPLITS)


class BongardHoi(datasets.GeneratorBasedBuilder):
    """The nine official Bongard-HOI episode files as one config with nine splits."""

    VERSION = VERSION
    BUILDER_CONFIG_CLASS = BongardHoiConfig
    BUILDER_CONFIGS = [
        BongardHoiConfig(name=CONFIG_NAME, version=VERSION,
                         description="one row per episode: 6+6 shots and 2 queries, images embedded"),
        BongardHoiConfig(name=REFS_CONFIG_NAME, version=VERSION,
                         description="one row per episode, each image an image_id into the 'images' config"),
        BongardHoiConfig(name=IMAGES_CONFIG_NAME, version=VERSION,
                         description="each distinct picture (path and crop) of a split once, keyed by image_id"),
    ]
    DEFAULT_CONFIG_NAME = CONFIG_NAME
    MANUAL_DOWNLOAD_INSTRUCTIONS = MANUAL_DOWNLOAD_INSTRUCTIONS

    def _info(self) -> datasets.DatasetInfo:
        if self.config.name == IMAGES_CONFIG_NAME:
            features = picture_features()
        else:
            features = episode_features(refs=self.config.name == REFS_CONFIG_NAME)
        return datasets.DatasetInfo(description=_DESCRIPTION, features=features, homepage=_HOMEPAGE,
                                    license=_LICENSE, citation=CITATION)

    def _split_generators(self, dl_manager):
        if not self.config.data_dir:
            raise MissingFilesError("<no data_dir>", ["bongard_hoi_release/", "images/"], what="folders",
                                    hint=MANUAL_DOWNLOAD_INSTRUCTIONS)
        layout = EpisodeLayout.from_config(self.config)
        splits = self.config.splits or SPLITS
        resolved = layout.check(splits)
        return [datasets.SplitGenerator(name=split, gen_kwargs={"split": split, "resolved": resolved[split]})
                for split in splits]

    def _generate_examples(self, split: str, resolved: dict[str, str]):
        layout = EpisodeLayout.from_config(self.config)
        file = layout.episode_file(split)
        counts: Counter = Counter()
        if self.config.name == IMAGES_CONFIG_NAME:
            yield from self._generate_pictures(read_episode_file(file), resolved, counts, file)
        else:
            refs = self.config.name == REFS_CONFIG_NAME
            for index, episode in enumerate(read_episode_file(file)):
                yield index, episode_row(index, episode, resolved, crop=self.config.crop, counts=counts, file=file,
                                         refs=refs)
        if counts:
            logger.info("%s: %d openimages crops rescaled x1.6, %d crops clamped to the image", split,
                        counts["openimages"], counts["clamped"])


    def _generate_pictures(self, episodes, resolved, counts, file):
        done = set()
        for index, episode in enumerate(episodes):
            for image in episode.images():
                cell = image_cell(image, resolved=resolved, crop=self.config.crop, counts=counts, file=file,
                                  record=index, refs=True)
                if cell["image_id"] in done:
                    continue
                done.add(cell["image_id"])
                picture = image_cell(image, resolved=resolved, crop=self.config.crop, counts=Counter(), file=file,
                                     record=index)
                yield cell["image_id"], {"image_id": cell["image_id"], "image": picture["image"],
                                         "im_path": image.im_path, "crop_bbox": picture["crop_bbox"]}


@dataclass(frozen=True)
class EpisodeLayout:
    """Where the episode files and the image root are for one build."""

    annotation_dir: Path
    image_root: Path

    @classmethod
    def from_config(cls, config: BongardHoiConfig) -> EpisodeLayout:
        data_dir = Path(config.data_dir)
        return cls(data_dir / config.annotation_dir, data_dir / config.image_dir)

    def episode_file(self, split: str) -> Path:
        return self.annotation_dir / episode_file_name(split)

    def check(self, splits) -> dict[str, dict[str, str]]:
        """``{split: {im_path: file}}`` for every image; raises one ``MissingFilesError`` for anything absent."""
        missing_files = [str(self.episode_file(s)) for s in splits if not self.episode_file(s).is_file()]
        if missing_files:
            raise MissingFilesError(str(self.annotation_dir), missing_files, what="episode files",
                                    hint=MANUAL_DOWNLOAD_INSTRUCTIONS)
        resolved: dict[str, dict[str, str]] = {}
        missing, fallbacks, openimages = [], set(), set()
        for split in splits:
            resolved[split] = {}
            file = str(self.episode_file(split))
            for index, episode in enumerate(read_episode_file(self.episode_file(split))):
                for image in episode.images():
                    if image.im_path in resolved[split]:
                        continue
                    # absolute paths, '..' and symlinks out of the image root would embed an unrelated file
                    resolve_inside(self.image_root, image.relative_path, file=file, record=index, field="im_path")
                    path, fell_back = resolve_image_path(self.image_root, image.relative_path)
                    if path is not None and fell_back:
                        resolve_inside(self.image_root, str(path.relative_to(self.image_root)), file=file,
                                       record=index, field="im_path (other pic folder)")
                    if path is None:
                        missing.append(image.relative_path)
                        continue
                    resolved[split][image.im_path] = str(path)
                    if fell_back:
                        fallbacks.add(image.im_path)
                    if is_openimages(image.im_path):
                        openimages.add(image.im_path)
        if missing:
            raise MissingFilesError(str(self.image_root), sorted(set(missing)), what="images",
                                    hint=MANUAL_DOWNLOAD_INSTRUCTIONS)
        logger.info("images: %d pic paths found in the other pic folder (train/val swap), "
                    "%d openimages files get the x1.6 box fix", len(fallbacks), len(openimages))
        return resolved


def episode_row(index: int, episode: Episode, resolved: dict[str, str], *, crop: bool = True,
                counts: Counter | None = None, file: str | os.PathLike = "<episodes>", refs: bool = False) -> dict:
    """The dataset row of ``episode``; ``resolved`` maps each ``im_path`` to its file on disk."""
    counts = Counter() if counts is None else counts
    cell = functools.partial(image_cell, resolved=resolved, crop=crop, counts=counts, file=file, record=index,
                             refs=refs)
    return {
        "episode": index,
        "concept": episode.concept_name,
        "concept_id": episode.concept if isinstance(episode.concept, int) else -1,
        "action": episode.action,
        "object": episode.object,
        "positive_shots": [cell(image) for image in episode.positive_shots],
        "negative_shots": [cell(image) for image in episode.negative_shots],
        "positive_query": cell(episode.positive_query),
        "negative_query": cell(episode.negative_query),
        "query_labels": [0, 1],
    }


def image_cell(image: EpisodeImage, *, resolved: dict[str, str], crop: bool, counts: Counter,
               file: str | os.PathLike = "<episodes>", record: int | None = None, refs: bool = False) -> dict:
    """One image struct of a row: the (cropped) picture with its boxes in the picture's own pixels.

    With ``refs`` the picture is replaced by its ``image_id`` (nothing is decoded or encoded).
    """
    path = resolved[image.im_path]
    width, height = image_size(path)
    placed = place_image(image, width, height)
    counts["openimages"] += placed.openimages_fixed
    counts["clamped"] += placed.clamped
    x1, y1, x2, y2 = placed.crop_bbox
    if x2 <= x1 or y2 <= y1:
        raise DataError(f"{file}: record {record}: image {image.im_path}: empty crop {list(placed.crop_bbox)} "
                        f"(from crop_bbox {list(image.crop_bbox)} on a {width}x{height} image)")
    if crop:
        sub, obj = placed.sub_bbox, placed.obj_bbox
    else:
        sub, obj = placed.boxes_in_image()
    if refs:
        picture = {"image_id": image_id(image, placed.crop_bbox if crop else None)}
    elif crop:
        picture = {"image": {"bytes": _cached_crop(path, placed.crop_bbox), "path": Path(path).name}}
    else:
        picture = {"image": embedded_image(path)}
    return {
        **picture, "im_path": image.im_path, "crop_bbox": list(placed.crop_bbox),
        "sub_bbox": [float(v) for v in sub], "obj_bbox": [float(v) for v in obj],
        "sub_class": image.sub_class, "obj_class": image.obj_class, "act_class": image.act_class,
        "sub_id": image.sub_id, "obj_id": image.obj_id, "act_id": image.act_id,
    }


@functools.lru_cache(maxsize=1024)
def _cached_crop(path: str, crop_bbox: tuple[int, int, int, int]) -> bytes:
    """Crops recur across episodes (same image, same crop): encode each once per process."""
    return crop_bytes(path, crop_bbox)


def card_spec(synthetic: bool = False) -> CardSpec:
    """The dataset card of a Bongard-HOI Hub folder (template ``bongard_hoi/card.md``); ``synthetic``: the folder
    is built from hoi-bench's synthetic sample, and the card says so."""
    from importlib import resources

    from hoi_bench.cards import select_source

    template = resources.files("bongard_hoi").joinpath("card.md").read_text(encoding="utf-8")
    template = select_source(template, synthetic=synthetic)
    return CardSpec(pretty_name="Bongard-HOI", license="other", task_categories=["image-classification"],
                    extra_metadata={"license_name": "bongard-hoi-mixed",
                                    "license_link": "https://github.com/NVlabs/Bongard-HOI/blob/master/LICENSE"},
                    template=template, citation=CITATION, tags=["few-shot", "human-object-interaction", "bongard"])


def build_hub(data_dir: str | os.PathLike, out_dir: str | os.PathLike, *, crop: bool = True,
              splits: tuple[str, ...] | None = None, annotation_dir: str = "bongard_hoi_release",
              image_dir: str = "images", configs: Sequence[str] = (CONFIG_NAME,), synthetic: bool = False,
              force: bool = False) -> Path:
    """Build the episode files under ``data_dir`` into the Hub folder ``out_dir``.

    ``configs``: ``episodes`` (images embedded in every episode row) and/or the pair ``episode_refs`` +
    ``images`` (each distinct picture stored once; see the dataset card for the size trade-off). ``synthetic``:
    ``data_dir`` is hoi-bench's synthetic sample (the card says so).
    """
    for name in configs:
        if name not in CONFIG_NAMES:
            raise ConfigError("Bongard-HOI config", name, CONFIG_NAMES)
    from hoi_bench.hub import build_hub_folder

    kwargs = {"crop": crop, "annotation_dir": annotation_dir, "image_dir": image_dir}
    if splits is not None:
        kwargs["splits"] = tuple(splits)
    return build_hub_folder(BongardHoi, list(configs), out_dir, card_spec(synthetic), data_dir=str(Path(data_dir).absolute()),
                            default_config=configs[0], config_card=config_card, force=force, **kwargs)


def config_card(builder: BongardHoi, built: datasets.DatasetDict) -> str:
    """A config's card section: rows per split and the sha256 of the episode file each split was built from."""
    import hashlib

    layout = EpisodeLayout.from_config(builder.config)
    lines = [f"### `{builder.config.name}`", "", builder.config.description or "", "",
             f"Built by hoi-bench bongard_hoi builder {VERSION} ({'official crops' if builder.config.crop else 'whole images'}).",
             "", "| split | rows | episode file sha256 |", "|---|---|---|"]
    for split, rows in built.items():
        digest = hashlib.sha256(layout.episode_file(split).read_bytes()).hexdigest()
        lines.append(f"| {split} | {len(rows):,} | `{digest}` |")
    return "\n".join(lines) + "\n"
