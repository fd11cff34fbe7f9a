"""HICO-DET-SG and V-COCO-SG (and the original HICO-DET / V-COCO splits) as a ``datasets`` builder.

Configs: ``hico_split1..3`` and ``vcoco_split1..3`` (the SG splits; ``train`` = SG trainval, ``test`` = SG
test), ``hico`` and ``vcoco`` (the original trainval/test files). ``hoi-bench build hoi_sg`` runs this builder
and writes a Hub folder that ``load_dataset(FOLDER, CONFIG)`` reads; the builder itself is used
programmatically::

    builder = HoiSgBuilder(config_name="hico_split1", data_dir="/data", with_images=False)
    builder.download_and_prepare()

Where the split files come from: the official ``SGsplits/...`` files when both (trainval and test) are
present, else Algorithm 1 (``splits.make_split``) with the official seed on the original annotation files; the
log says which, and the config's card section records it with the files' sha256.

One row per image: ``image`` (embedded bytes), ``file_name``, ``width``, ``height``, ``img_id`` (HICO trainval
records only, else null), ``boxes`` (``[x1, y1, x2, y2]`` float32, pixels), ``box_labels`` (COCO
``ClassLabel``), ``hois`` (``subject``/``object`` index into ``boxes``, ``object`` = -1 for none; ``verb``
``ClassLabel``; HICO only: ``hoi`` ``ClassLabel`` of the 600 classes, -1 where the upstream record has no
``hoi_category_id``, i.e. test2015 images) and ``origin_split`` (``train2015``/``test2015`` or
``train2014``/``val2014``: SG test sets mix both). ``with_images=False`` (``--no-images``) drops ``image``,
``width`` and ``height`` and needs no image files.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import datasets
from tqdm.auto import tqdm

from hoi_bench.errors import ConfigError, FormatError, MissingFilesError
from hoi_bench.files import resolve_inside
from hoi_bench.images import embedded_image, image_size
from hoi_sg_dataset.formats import BoxAnnotation, Dataset, HoiAnnotation, ImageRecord, read_annotations
from hoi_sg_dataset.splits import OFFICIAL_SEEDS, RATIOS, combinations_of, make_split, official_split_paths
from hoi_sg_dataset.stats import SplitStats, split_stats
from hoi_sg_dataset.vocabulary import coco_objects, hico_hoi_names, hico_verbs, vcoco_verbs

logger = logging.getLogger(__name__)

VERSION = datasets.Version("1.0.0")
RELEASE_NOTES = {
    "1.0.0": "First release: HICO-DET-SG and V-COCO-SG split configs (current split version of hoi_sg, "
    "2023-02-28: mixed images dropped), original hico/vcoco configs, annotation-only builds.",
}
HOMEPAGE = "https://github.com/FujitsuResearch/hoi_sg"
UPSTREAM_COMMIT = "6d5d649cfbd518316e40f20bb545511ba1989da6"
CITATION = """\
@article{takemoto2023hicodetsg,
  title   = {{HICO-DET-SG} and {V-COCO-SG}: New Data Splits for Evaluating the Systematic Generalization
             Performance of Human-Object Interaction Detection Models},
  author  = {Takemoto, Kentaro and Yamada, Moyuru and Sasaki, Tomotake and Akima, Hisanao},
  journal = {arXiv preprint arXiv:2305.09948},
  year    = {2023}
}
@inproceedings{chao2018learning,
  title     = {Learning to Detect Human-Object Interactions},
  author    = {Chao, Yu-Wei and Liu, Yunfan and Liu, Xieyang and Zeng, Huayi and Deng, Jia},
  booktitle = {WACV},
  year      = {2018}
}
@article{gupta2015visual,
  title   = {Visual Semantic Role Labeling},
  author  = {Gupta, Saurabh and Malik, Jitendra},
  journal = {arXiv preprint arXiv:1505.04474},
  year    = {2015}
}"""
LICENSE = (
    "SG split files: CC0-1.0 (hoi_sg README). Images and original annotations keep their own terms: "
    "HICO-DET (non-commercial research use), COCO 2014 images (Flickr terms of use), "
    "V-COCO annotations (MIT)."
)

ROOT_FOLDERS: dict[str, str] = {"hico": "hico_20160224_det", "vcoco": "v-coco"}
IMAGE_FOLDERS: dict[str, tuple[str, str]] = {
    "hico": ("train2015", "test2015"),
    "vcoco": ("train2014", "val2014"),
}

MANUAL_DOWNLOAD_INSTRUCTIONS = """\
Point --data-dir (data_dir=) at a folder laid out as QPIC expects; each dataset may also sit in its own
sub-folder hico_20160224_det/ and v-coco/ of data_dir.

HICO-DET configs (hico, hico_split1..3):
  images/train2015/HICO_train2015_*.jpg      HICO-DET images (hico_20160224_det.tar.gz)
  images/test2015/HICO_test2015_*.jpg
  annotations/trainval_hico.json             PPDM/QPIC annotations
  annotations/test_hico.json
  SGsplits/HICO-DET-SG/trainval/trainval_hico_sg{1,2,3}.json   optional, from FujitsuResearch/hoi_sg
  SGsplits/HICO-DET-SG/test/test_hico_sg{1,2,3}.json           (else regenerated with seeds 368, 680, 750)

V-COCO configs (vcoco, vcoco_split1..3):
  images/train2014/COCO_train2014_*.jpg      COCO 2014 images
  images/val2014/COCO_val2014_*.jpg
  annotations/trainval_vcoco.json            from QPIC's convert_vcoco_annotations.py
  annotations/test_vcoco.json
  SGsplits/V-COCO-SG/trainval/trainval_vcoco_sg{1,2,3}.json    optional, from FujitsuResearch/hoi_sg
  SGsplits/V-COCO-SG/test/test_vcoco_sg{1,2,3}.json            (else regenerated with seeds 564, 966, 2065)

The SGsplits/ folder of a hoi_sg checkout may also sit directly in data_dir (it holds both datasets).
With both official SG files of a split present the original annotation files are not needed for it.
Annotation-only builds (with_images=False, `hoi-bench build --no-images`) need no images.
"""


class HoiSgConfig(datasets.BuilderConfig):
    """One config: which dataset, which SG split (``None`` = the original split), with or without images."""

    def __init__(
        self,
        *,
        dataset: Dataset = "hico",
        split_number: int | None = None,
        with_images: bool = True,
        official_quirks: bool = True,
        **kwargs,
    ) -> None:
        super().__init__(version=VERSION, **kwargs)
        self.dataset = dataset
        self.split_number = split_number
        self.with_images = with_images
        self.official_quirks = official_quirks

    @property
    def seed(self) -> int | None:
        return None if self.split_number is None else OFFICIAL_SEEDS[self.dataset][self.split_number - 1]


def _configs() -> list[HoiSgConfig]:
    configs = []
    for dataset, pretty in (("hico", "HICO-DET-SG"), ("vcoco", "V-COCO-SG")):
        for number in (1, 2, 3):
            configs.append(
                HoiSgConfig(
                    name=f"{dataset}_split{number}",
                    dataset=dataset,
                    split_number=number,
                    description=f"{pretty} split {number} (seed {OFFICIAL_SEEDS[dataset][number - 1]})",
                )
            )
    configs.append(
        HoiSgConfig(name="hico", dataset="hico", description="HICO-DET, original trainval/test split")
    )
    configs.append(
        HoiSgConfig(name="vcoco", dataset="vcoco", description="V-COCO, original trainval/test split")
    )
    return configs


CONFIG_NAMES: tuple[str, ...] = tuple(c.name for c in _configs())


def check_config_names(names: list[str]) -> None:
    """Raise ``ConfigError`` naming the first unknown config and listing the available ones."""
    for name in names:
        if name not in CONFIG_NAMES:
            raise ConfigError("hoi_sg config", name, CONFIG_NAMES)


def official_split_files(data_dir: str | os.PathLike, dataset: Dataset, name: str) -> tuple[Path, Path]:
    """The official files of split ``name`` (``sg1``...): under ``SGsplits/`` of the dataset root, else of
    ``data_dir`` (a hoi_sg checkout's ``SGsplits`` holds both datasets). The first place holding both files
    wins, else the first holding the test file, else the dataset root."""
    roots = list(dict.fromkeys([dataset_root(data_dir, dataset), Path(data_dir)]))
    candidates = [official_split_paths(r, dataset, name) for r in roots]
    for candidate in candidates:
        if all(p.is_file() for p in candidate):
            return candidate
    return next((c for c in candidates if c[1].is_file()), candidates[0])


def buildable_configs(data_dir: str | os.PathLike) -> list[str]:
    """Configs whose files ``data_dir`` holds: the original annotation files, or both official split files.

    Raises ``MissingFilesError`` listing the original annotation files when there is none.
    """
    names = []
    for config in _configs():
        root = dataset_root(data_dir, config.dataset)
        files = original_annotation_paths(root, config.dataset)
        if config.split_number is not None and not all(p.is_file() for p in files):
            files = official_split_files(data_dir, config.dataset, f"sg{config.split_number}")
        if all(p.is_file() for p in files):
            names.append(config.name)
    if not names:
        expected = [
            f"{ROOT_FOLDERS[d]}/{p.relative_to(data_dir)}"
            for d in ("hico", "vcoco")
            for p in original_annotation_paths(Path(data_dir), d)
        ]
        raise MissingFilesError(
            str(data_dir),
            expected,
            what="annotation files",
            hint="each dataset may also sit directly in data_dir; see the manual-download "
            "instructions (docs/hoi_sg.md)",
        )
    return names


def features(dataset: Dataset, with_images: bool = True) -> datasets.Features:
    """The row schema of a config of ``dataset``."""
    verbs = hico_verbs() if dataset == "hico" else vcoco_verbs()
    hoi = {
        "subject": datasets.Value("int32"),
        "object": datasets.Value("int32"),
        "verb": datasets.ClassLabel(names=list(verbs.names)),
    }
    if dataset == "hico":
        hoi["hoi"] = datasets.ClassLabel(names=hico_hoi_names())
    columns = {"image": datasets.Image()} if with_images else {}
    columns["file_name"] = datasets.Value("string")
    if with_images:
        columns.update(width=datasets.Value("int32"), height=datasets.Value("int32"))
    columns.update(
        img_id=datasets.Value("int64"),
        boxes=datasets.List(datasets.List(datasets.Value("float32"), length=4)),
        box_labels=datasets.List(datasets.ClassLabel(names=list(coco_objects().names))),
        hois=datasets.List(hoi),
        origin_split=datasets.Value("string"),
    )
    return datasets.Features(columns)


def dataset_root(data_dir: str | os.PathLike, dataset: Dataset) -> Path:
    """``data_dir/hico_20160224_det`` (or ``data_dir/v-coco``) when it exists, else ``data_dir`` itself."""
    nested = Path(data_dir) / ROOT_FOLDERS[dataset]
    return nested if nested.is_dir() else Path(data_dir)


def original_annotation_paths(root: Path, dataset: Dataset) -> tuple[Path, Path]:
    return root / "annotations" / f"trainval_{dataset}.json", root / "annotations" / f"test_{dataset}.json"


def image_path(root: Path, dataset: Dataset, record: ImageRecord, source: str = "") -> Path:
    """The image file of ``record``: its folder comes from the file-name prefix (SG test sets mix both).

    The path is resolved (symlinks followed) and must stay inside ``root``: a link to a file elsewhere would
    be embedded into the dataset (and uploaded by ``push``), so it is a ``FormatError`` naming the image.
    """
    origin = record.origin_split
    if origin not in IMAGE_FOLDERS[dataset]:
        raise FormatError(
            source or None,
            "cannot tell the image folder from the file name",
            field="file_name",
            record=record.file_name,
            expected=" or ".join(f"*_{f}_*" for f in IMAGE_FOLDERS[dataset]),
            found=record.file_name,
        )
    relative = f"images/{origin}/{record.file_name}"
    return resolve_inside(
        root, relative, file=str(root / relative), record=record.file_name, field="file_name"
    )


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class Provenance:
    """Where a built config's records came from; the config's card section is written from it."""

    source: str = ""
    files: dict[str, str] = field(default_factory=dict)
    seed: int | None = None
    held_out: list[tuple[int, int]] = field(default_factory=list)
    dropped: int | None = None
    stats: dict[str, SplitStats] = field(default_factory=dict)


class HoiSgBuilder(datasets.GeneratorBasedBuilder):
    """HICO-DET-SG / V-COCO-SG builder; see the module docstring for configs, layout and rows."""

    VERSION = VERSION
    BUILDER_CONFIG_CLASS = HoiSgConfig
    BUILDER_CONFIGS = _configs()
    DEFAULT_CONFIG_NAME = "hico_split1"
    MANUAL_DOWNLOAD_INSTRUCTIONS = MANUAL_DOWNLOAD_INSTRUCTIONS

    def __init__(self, *args, config_name: str | None = None, **kwargs) -> None:
        if config_name is not None:
            check_config_names([config_name])
        self.provenance = Provenance()
        super().__init__(*args, config_name=config_name, **kwargs)

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=self.config.description or "",
            features=features(self.config.dataset, self.config.with_images),
            homepage=HOMEPAGE,
            citation=CITATION,
            license=LICENSE,
        )

    def _split_generators(self, dl_manager) -> list[datasets.SplitGenerator]:
        config = self.config
        if not config.data_dir:
            raise MissingFilesError(
                "<no data_dir>",
                ["data_dir"],
                what="setting",
                hint="pass data_dir= (or --data-dir):\n" + MANUAL_DOWNLOAD_INSTRUCTIONS,
            )
        root = dataset_root(config.data_dir, config.dataset)
        train, test = self._records(root)
        self.provenance.stats = {
            "train": split_stats(train, config.dataset),
            "test": split_stats(test, config.dataset),
        }
        sizes = (
            self._check_images(root, train + test)
            if config.with_images
            else [None] * (len(train) + len(test))
        )
        return [
            datasets.SplitGenerator(
                name=datasets.Split.TRAIN,
                gen_kwargs={"records": train, "sizes": sizes[: len(train)], "root": str(root)},
            ),
            datasets.SplitGenerator(
                name=datasets.Split.TEST,
                gen_kwargs={"records": test, "sizes": sizes[len(train) :], "root": str(root)},
            ),
        ]

    def _records(self, root: Path) -> tuple[list[ImageRecord], list[ImageRecord]]:
        config, dataset = self.config, self.config.dataset
        if config.split_number is not None:
            name = f"sg{config.split_number}"
            official = official_split_files(config.data_dir, dataset, name)
            if all(p.is_file() for p in official):
                logger.info(
                    "%s: using the official split files %s", config.name, ", ".join(map(str, official))
                )
                trainval, test = (read_annotations(p, dataset) for p in official)
                self._note(
                    "official SG split files",
                    root,
                    official,
                    seed=config.seed,
                    held_out=combinations_of(test),
                )
                return trainval, test
        originals = original_annotation_paths(root, dataset)
        missing = [p for p in originals if not p.is_file()]
        if missing:
            hint = (
                "the official SGsplits/... files of this split would also do" if config.split_number else ""
            )
            raise MissingFilesError(
                str(root), [str(p.relative_to(root)) for p in missing], what="annotation files", hint=hint
            )
        trainval, test = (read_annotations(p, dataset) for p in originals)
        if config.split_number is None:
            self._note("original annotation files", root, originals)
            return trainval, test
        logger.info(
            "%s: official split files not found under %s; regenerating with seed %d (Algorithm 1)",
            config.name,
            root / "SGsplits",
            config.seed,
        )
        split = make_split(
            trainval,
            test,
            dataset,
            seed=config.seed,
            ratio=RATIOS[dataset],
            official_quirks=config.official_quirks,
        )
        self._compare_with_official_test(official[1], split.test)
        self._note(
            f"regenerated with seed {config.seed} (official_quirks={config.official_quirks})",
            root,
            originals,
            seed=config.seed,
            held_out=list(split.test_combinations),
            dropped=split.dropped,
        )
        return split.trainval, split.test

    def _compare_with_official_test(self, official_test: Path, regenerated: list[ImageRecord]) -> None:
        if not official_test.is_file():
            return
        published = [r.file_name for r in read_annotations(official_test, self.config.dataset)]
        if published == [r.file_name for r in regenerated]:
            logger.info("%s: regenerated test split equals %s", self.config.name, official_test)
        else:
            logger.warning(
                "%s: regenerated test split (%d images) differs from %s (%d images)",
                self.config.name,
                len(regenerated),
                official_test,
                len(published),
            )

    def _note(self, source: str, root: Path, files, *, seed=None, held_out=(), dropped=None) -> None:
        self.provenance = Provenance(
            source,
            {_relative(p, root, Path(self.config.data_dir)): sha256(p) for p in files},
            seed,
            sorted(held_out),
            dropped,
        )

    def _check_images(self, root: Path, records: list[ImageRecord]) -> list[tuple[int, int]]:
        """``(width, height)`` of every record's image, read from the file headers before any row is written;
        missing images raise one ``MissingFilesError``, unreadable ones one ``FormatError``."""
        missing, unreadable, sizes = [], [], []
        progress = tqdm(
            records,
            desc=f"checking {self.config.name} images",
            unit="image",
            leave=False,
            disable=len(records) < 1000,
        )
        inside = root.resolve()
        annotation_files = " or ".join(self.provenance.files)
        for record in progress:
            path = image_path(root, self.config.dataset, record, source=annotation_files)
            if not path.is_file():
                missing.append(str(path.relative_to(inside)))
                continue
            try:
                sizes.append(image_size(path))
            except FormatError:
                unreadable.append(str(path.relative_to(inside)))
        if missing:
            raise MissingFilesError(
                str(root),
                missing,
                what="images",
                hint="or build annotation-only configs with --no-images (with_images=False)",
            )
        if unreadable:
            raise FormatError(
                str(root / unreadable[0]),
                f"not a readable image ({len(unreadable)} unreadable, first: {', '.join(unreadable[:5])})",
                expected="a JPEG/PNG file",
            )
        return sizes

    def _generate_examples(self, records: list[ImageRecord], sizes: list, root: str):
        """Rows of ``records``; ``sizes`` (checked image sizes) runs parallel so ``num_proc`` shards both."""
        root_path = Path(root)
        dataset, with_images = self.config.dataset, self.config.with_images
        for record, size in zip(records, sizes, strict=True):
            row = record_to_row(record, dataset)
            if with_images:
                row["width"], row["height"] = size
                row["image"] = embedded_image(image_path(root_path, dataset, record))
            yield record.file_name, row


def _relative(path: Path, root: Path, data_dir: Path) -> str:
    """``path`` relative to the dataset root, or to ``data_dir`` for files found above it."""
    for base in (root, data_dir):
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return str(path)


def record_to_row(record: ImageRecord, dataset: Dataset) -> dict:
    """The annotation columns of a row (everything but ``image``, ``width``, ``height``)."""
    objects = coco_objects()
    hois = []
    for h in record.hoi_annotation:
        hoi = {"subject": h.subject_id, "object": h.object_id, "verb": _verb_index(dataset, h.category_id)}
        if dataset == "hico":
            hoi["hoi"] = -1 if h.hoi_category_id is None else h.hoi_category_id - 1
        hois.append(hoi)
    return {
        "file_name": record.file_name,
        "img_id": record.img_id,
        "boxes": [[float(v) for v in b.bbox] for b in record.annotations],
        "box_labels": [objects.index(b.category_id) for b in record.annotations],
        "hois": hois,
        "origin_split": record.origin_split,
    }


def row_to_record(row: dict, dataset: Dataset) -> ImageRecord:
    """The upstream record of a loaded row (boxes come back as the stored float32 values).

    Lets users of a Hub folder write ground-truth files with ``formats.write_annotations`` for the metrics.
    """
    objects = coco_objects()
    verbs = hico_verbs() if dataset == "hico" else vcoco_verbs()
    boxes = [
        BoxAnnotation(list(box), objects.raw_id(label))
        for box, label in zip(row["boxes"], row["box_labels"], strict=True)
    ]
    hois = [
        HoiAnnotation(
            h["subject"],
            h["object"],
            verbs.raw_id(h["verb"]),
            h["hoi"] + 1 if dataset == "hico" and h["hoi"] >= 0 else None,
        )
        for h in row["hois"]
    ]
    return ImageRecord(row["file_name"], boxes, hois, row["img_id"])


def _verb_index(dataset: Dataset, raw: int) -> int:
    return (hico_verbs() if dataset == "hico" else vcoco_verbs()).index(raw)
