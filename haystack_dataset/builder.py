"""``datasets`` builder for PSG and Haystack: panoptic scene graphs, with Haystack's explicit negative relations.

Configs:

- ``psg``: OpenPSG ``psg.json``; ``train`` = images not in ``test_image_ids``, ``test`` = images in it.
  Every image of the file is kept (OpenPSG's evaluation drops images without relations; the dataset does not).
- ``haystack``: the Haystack annotation file; one ``test`` split. ``negative_relations`` holds its
  ``neg_relations``; entries with predicate ``-1`` are kept with the ClassLabel's "no label" value ``-1``.

Use it through ``hoi-bench build haystack --data-dir DIR --out FOLDER`` and then ``load_dataset(FOLDER, "psg")``;
the class can also be run directly: ``Haystack(config_name="haystack", data_dir=DIR).download_and_prepare()``.
"""

from __future__ import annotations

import hashlib
import logging
import os
from importlib import resources
from pathlib import Path

import datasets

from haystack_dataset.formats import (
    HAYSTACK_FILE,
    IMAGE_ROOT,
    PSG_FILE,
    SceneGraphAnnotation,
    image_key,
    psg_classes,
    read_annotation,
    read_panoptic,
    segment_masks,
)
from hoi_bench.errors import ConfigError, FormatError, MissingFilesError
from hoi_bench.files import resolve_inside
from hoi_bench.hub import CardSpec, build_hub_folder
from hoi_bench.images import embedded_image

logger = logging.getLogger(__name__)

_HOMEPAGE = "https://github.com/lorjul/haystack"

HAYSTACK_CITATION = """\
@inproceedings{lorenz2023haystack,
  title     = {Haystack: A Panoptic Scene Graph Dataset to Evaluate Rare Predicate Classes},
  author    = {Lorenz, Julian and Pest, Florian and Kienzle, Daniel and Ludwig, Katja and Lienhart, Rainer},
  booktitle = {Proceedings of the IEEE/CVF International Conference on Computer Vision Workshops (ICCVW)},
  year      = {2023}
}
"""

PSG_CITATION = """\
@inproceedings{yang2022psg,
  title     = {Panoptic Scene Graph Generation},
  author    = {Yang, Jingkang and Ang, Yi Zhe and Guo, Zujin and Zhou, Kaiyang and Zhang, Wayne and Liu, Ziwei},
  booktitle = {European Conference on Computer Vision (ECCV)},
  year      = {2022}
}
"""

CITATION = HAYSTACK_CITATION + PSG_CITATION

MANUAL_DOWNLOAD_INSTRUCTIONS = f"""\
Nothing is downloaded. Put your local copies under one folder DIR (the names below are the defaults; change them
with --psg-file / --haystack-file / --image-root, or the builder arguments annotation_file= and image_root=) and
run `hoi-bench build haystack --data-dir DIR --out FOLDER`:

  DIR/{PSG_FILE}                         OpenPSG psg.json (the full release of 31 Oct 2022, not
                                                psg_val_test.json, whose test images have no relations)
  DIR/{HAYSTACK_FILE}          the Haystack annotation file (http://myweb.rz.uni-augsburg.de/~lorenjul/haystack/v1/)
  DIR/{IMAGE_ROOT}/train2017/*.jpg                    COCO 2017 train images
  DIR/{IMAGE_ROOT}/val2017/*.jpg                      COCO 2017 val images
  DIR/{IMAGE_ROOT}/panoptic_train2017/*.png           COCO 2017 panoptic PNGs (train), from panoptic_annotations_trainval2017.zip
  DIR/{IMAGE_ROOT}/panoptic_val2017/*.png             COCO 2017 panoptic PNGs (val)

Every file_name / pan_seg_file_name in the annotation file is looked up relative to DIR/{IMAGE_ROOT}; the Haystack
images and masks are expected in the same COCO folders (Haystack reuses PSG's record layout). The builder checks
every file before writing anything and lists the missing ones.
"""

VERSION_NOTES = {
    "1.0.0": "First release: psg (train/test) and haystack (test) configs; image, panoptic PNG, segments, "
             "relations and negative_relations per image.",
}


class HaystackConfig(datasets.BuilderConfig):
    """A config names the annotation file (relative to ``data_dir``) and the folder its images are in."""

    def __init__(self, *, annotation_file: str, image_root: str = IMAGE_ROOT, negatives: bool, **kwargs) -> None:
        super().__init__(version=datasets.Version("1.0.0"), **kwargs)
        self.annotation_file = annotation_file
        self.image_root = image_root
        self.negatives = negatives


def features(object_classes: list[str] | None = None, predicate_classes: list[str] | None = None) -> datasets.Features:
    """Row schema shared by both configs (PSG rows have empty ``negative_relations``)."""
    classes = psg_classes()
    objects = object_classes or classes["thing_classes"] + classes["stuff_classes"]
    predicates = predicate_classes or classes["predicate_classes"]
    relation = {"subject": datasets.Value("int32"), "object": datasets.Value("int32"),
                "predicate": datasets.ClassLabel(names=predicates)}
    return datasets.Features({
        "image_id": datasets.Value("string"),
        "file_name": datasets.Value("string"),
        "image": datasets.Image(),
        "height": datasets.Value("int32"),
        "width": datasets.Value("int32"),
        "panoptic_segmentation": datasets.Image(),
        "segments": datasets.List({
            "id": datasets.Value("int64"),
            "category": datasets.ClassLabel(names=objects),
            "isthing": datasets.Value("bool"),
            "iscrowd": datasets.Value("bool"),
            "area": datasets.Value("int64"),
            "box": datasets.List(datasets.Value("float32"), length=4),
        }),
        "relations": datasets.List(relation),
        "negative_relations": datasets.List(relation),
    })


class Haystack(datasets.GeneratorBasedBuilder):
    """PSG and Haystack panoptic scene graphs built from a local copy (see ``MANUAL_DOWNLOAD_INSTRUCTIONS``)."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = HaystackConfig
    BUILDER_CONFIGS = [
        HaystackConfig(name="psg", annotation_file=PSG_FILE, negatives=False,
                       description="Panoptic Scene Graph (PSG): train/test split of OpenPSG's psg.json."),
        HaystackConfig(name="haystack", annotation_file=HAYSTACK_FILE, negatives=True,
                       description="Haystack: PSG-format test images with positive and negative relation labels."),
    ]
    DEFAULT_CONFIG_NAME = "haystack"

    @property
    def manual_download_instructions(self) -> str:
        return MANUAL_DOWNLOAD_INSTRUCTIONS

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(description=self.config.description, features=features(), homepage=_HOMEPAGE,
                                    citation=CITATION, license="see the dataset card (COCO images: CC BY 4.0 "
                                    "Flickr terms; PSG annotations; Haystack annotations: no license stated)")

    def _split_generators(self, dl_manager) -> list[datasets.SplitGenerator]:
        if not self.config.data_dir:
            raise MissingFilesError("<no data_dir>", [self.config.annotation_file], what="annotation files",
                                    hint="pass data_dir= (hoi-bench build haystack --data-dir DIR)")
        root = Path(self.config.data_dir)
        annotation_path = root / self.config.annotation_file
        if not annotation_path.is_file():
            raise MissingFilesError(str(root), [self.config.annotation_file], what="annotation files",
                                    hint=MANUAL_DOWNLOAD_INSTRUCTIONS)
        annotation = read_annotation(annotation_path, require_negatives=self.config.negatives)
        _check_classes(annotation)
        if self.config.name == "psg" and not annotation.has_test_image_ids:
            raise FormatError(annotation.source, "no test split", field="test_image_ids",
                              expected="the list of test image ids that defines the psg test split (OpenPSG's "
                                       "full psg.json has 2,186)", found="no test_image_ids key")
        for index, image in enumerate(annotation.images):  # absolute, '..' and escaping symlinks are refused
            for name in ("file_name", "pan_seg_file_name"):
                resolve_inside(root, str(Path(self.config.image_root) / getattr(image, name)),
                               file=annotation.source, record=index, field=name)
        image_root = root / self.config.image_root
        missing = [f"{self.config.image_root}/{name}" for image in annotation.images
                   for name in (image.file_name, image.pan_seg_file_name) if not (image_root / name).is_file()]
        if missing:
            raise MissingFilesError(str(root), missing, what="image or panoptic files", hint=MANUAL_DOWNLOAD_INSTRUCTIONS)
        if self.config.name == "psg":
            test_keys = {image_key(t) for t in annotation.test_image_ids}
            train = [i for i in annotation.images if i.key not in test_keys]
            test = [i for i in annotation.images if i.key in test_keys]
            logger.info("psg: %d train, %d test images", len(train), len(test))
            return [datasets.SplitGenerator(name=datasets.Split.TRAIN, gen_kwargs={"images": train, "ann": annotation,
                                                                                 "image_root": image_root}),
                    datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={"images": test, "ann": annotation,
                                                                                "image_root": image_root})]
        return [datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={
            "images": annotation.images, "ann": annotation, "image_root": image_root})]

    def _generate_examples(self, images, ann: SceneGraphAnnotation, image_root: Path):
        for image in images:
            panoptic = image_root / image.pan_seg_file_name
            panoptic_cell = embedded_image(panoptic, record=image.key)  # size and pixel limits, before decoding
            segment_masks(read_panoptic(panoptic_cell["bytes"], file=panoptic, record=image.key),
                          image.segments_info, file=str(panoptic), record=image.key)
            segments = [{"id": int(s["id"]), "category": int(s["category_id"]), "isthing": bool(s["isthing"]),
                         "iscrowd": bool(s.get("iscrowd", 0)), "area": int(s.get("area", 0)),
                         "box": [float(v) for v in box]}
                        for s, box in zip(image.segments_info, image.boxes)]
            yield image.key, {
                "image_id": image.key,
                "file_name": image.file_name,
                "image": embedded_image(image_root / image.file_name),
                "height": image.height,
                "width": image.width,
                "panoptic_segmentation": panoptic_cell,
                "segments": segments,
                "relations": _relation_rows(image.relations),
                "negative_relations": _relation_rows(image.neg_relations),
            }


def _relation_rows(triplets) -> list[dict]:
    return [{"subject": int(s), "object": int(o), "predicate": int(p)} for s, o, p in triplets]


def _check_classes(annotation: SceneGraphAnnotation) -> None:
    """The rows use the released PSG class lists as ClassLabels; a file with other lists is refused by name."""
    classes = psg_classes()
    for field_name in ("thing_classes", "stuff_classes", "predicate_classes"):
        found = getattr(annotation, field_name)
        if found != classes[field_name]:
            differing = next((i for i, (a, b) in enumerate(zip(found, classes[field_name])) if a != b),
                             min(len(found), len(classes[field_name])))
            raise FormatError(annotation.source, "class list differs from the released PSG list", field=field_name,
                              expected=f"{len(classes[field_name])} PSG names (position {differing}: "
                                       f"{classes[field_name][differing] if differing < len(classes[field_name]) else 'end'!r})",
                              found=f"{len(found)} names (position {differing}: "
                                    f"{found[differing] if differing < len(found) else 'end'!r})")


def config_card(builder: datasets.DatasetBuilder, dataset_dict: datasets.DatasetDict) -> str:
    """The card section of one config: split sizes and relation counts (positive, negative)."""
    annotation = Path(builder.config.data_dir) / builder.config.annotation_file
    digest = hashlib.sha256(annotation.read_bytes()).hexdigest()
    version = str(builder.config.version)
    lines = [f"### `{builder.config.name}`", "", builder.config.description or "", "",
             f"Built by `haystack_dataset.builder.Haystack` {version} ({VERSION_NOTES.get(version, '')}) from "
             f"`{builder.config.annotation_file}` (sha256 `{digest}`).", "",
             "| split | images | positive relations | negative relations |", "|---|---|---|---|"]
    for split, ds in dataset_dict.items():
        positives = sum(len(r) for r in ds["relations"])
        negatives = sum(len(r) for r in ds["negative_relations"])
        lines.append(f"| {split} | {len(ds):,} | {positives:,} | {negatives:,} |")
    return "\n".join(lines) + "\n"


CONFIG_NAMES = ("psg", "haystack")


def card_spec(synthetic: bool = False) -> CardSpec:
    """Dataset card of the Hub folder: ``card.md`` with the per-config sections and the citation filled in;
    ``synthetic``: the folder is built from hoi-bench's synthetic sample, and the card says so."""
    from hoi_bench.cards import select_source

    template = resources.files("haystack_dataset").joinpath("card.md").read_text(encoding="utf-8")
    template = select_source(template, synthetic=synthetic)
    return CardSpec(pretty_name="Haystack and PSG panoptic scene graphs", license="other",
                    extra_metadata={"license_name": "haystack-psg-mixed",
                                    "license_link": "https://github.com/lorjul/haystack"},
                    task_categories=["image-segmentation", "image-to-text"], template=template, citation=CITATION,
                    tags=["scene-graph", "panoptic-segmentation", "visual-relationship-detection", "psg", "haystack"])


def build(data_dir: str | os.PathLike, out_dir: str | os.PathLike, configs: list[str] | tuple[str, ...] = CONFIG_NAMES,
          *, annotation_files: dict[str, str] | None = None, image_root: str | None = None,
          synthetic: bool = False,
          num_proc: int | None = None, force: bool = False) -> Path:
    """Build ``configs`` from the local copy in ``data_dir`` into the Hub folder ``out_dir`` (load it with
    ``load_dataset(out_dir, "haystack")``); configs already in ``out_dir`` and not rebuilt are kept.

    ``synthetic``: ``data_dir`` is hoi-bench's synthetic sample (the card says so).
    ``annotation_files`` maps a config to its annotation file relative to ``data_dir`` (defaults: ``psg/psg.json``,
    ``haystack/annotation_v1.json``); ``image_root`` replaces ``coco`` as the folder images are looked up in.
    """
    for name in list(configs) + list(annotation_files or {}):
        if name not in CONFIG_NAMES:
            raise ConfigError("config", name, CONFIG_NAMES)
    overrides: dict[str, dict] = {name: {} for name in configs}
    for name, annotation_file in (annotation_files or {}).items():
        if annotation_file:
            overrides.setdefault(name, {})["annotation_file"] = annotation_file
    extra = {"image_root": image_root} if image_root else {}
    return build_hub_folder(Haystack, list(configs), out_dir, card_spec(synthetic), data_dir=data_dir,
                            num_proc=num_proc,
                            config_card=config_card, config_kwargs=overrides,
                            default_config="haystack" if "haystack" in configs else None, force=force, **extra)
