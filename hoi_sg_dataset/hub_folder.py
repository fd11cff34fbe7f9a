"""The hoi_sg Hub folder: the build that writes it and its dataset card.

``build_hoi_sg`` runs ``HoiSgBuilder`` for the asked configs and writes (or extends) a folder that
``load_dataset(FOLDER, CONFIG)`` reads. The card is ``card.md`` plus one section per config saying where its
records came from (official split files or regenerated, with the files' sha256), the Table 1 statistics of
each split, and the held-out combinations by name.
"""

from __future__ import annotations

import logging
import os
from importlib import resources
from pathlib import Path

import datasets

import hoi_bench
from hoi_bench.errors import DataError
from hoi_bench.hub import CardSpec, build_hub_folder
from hoi_sg_dataset.builder import (
    CITATION,
    CONFIG_NAMES,
    LICENSE,
    RELEASE_NOTES,
    UPSTREAM_COMMIT,
    VERSION,
    HoiSgBuilder,
    buildable_configs,
    check_config_names,
)
from hoi_sg_dataset.stats import combination_table

logger = logging.getLogger(__name__)


def build_hoi_sg(
    data_dir: str | os.PathLike,
    out_dir: str | os.PathLike = "hoi_sg",
    configs: list[str] | None = None,
    *,
    with_images: bool = True,
    synthetic: bool = False,
    num_proc: int | None = None,
    force: bool = False,
) -> Path:
    """Build ``configs`` (default: every config ``data_dir`` has files for) into the Hub folder ``out_dir``.

    Unknown config names and missing files raise before anything is written; configs already in ``out_dir``
    and not rebuilt are kept. ``synthetic``: ``data_dir`` is hoi-bench's synthetic sample (the card says so).
    """
    if configs:
        check_config_names(configs)
    else:
        configs = buildable_configs(data_dir)
    logger.info("building %s from %s into %s", ", ".join(configs), data_dir, out_dir)
    order = {name: i for i, name in enumerate(CONFIG_NAMES)}
    return build_hub_folder(
        HoiSgBuilder,
        sorted(configs, key=order.get),
        out_dir,
        card_spec(synthetic),
        data_dir=data_dir,
        num_proc=num_proc,
        config_card=config_card,
        default_config="hico_split1" if "hico_split1" in configs else None,
        with_images=with_images,
        force=force,
    )


def card_spec(synthetic: bool = False) -> CardSpec:
    """The hoi_sg ``CardSpec`` for ``hoi_bench.hub.write_hub_folder`` / ``build_hub_folder``; ``synthetic``: the
    folder is built from hoi-bench's synthetic sample, and its card says so."""
    from hoi_bench.cards import select_source

    template = resources.files("hoi_sg_dataset").joinpath("card.md").read_text(encoding="utf-8")
    template = select_source(template, synthetic=synthetic)
    notes = "\n".join(f"- **{version}**: {text}" for version, text in RELEASE_NOTES.items())
    template = (
        template.replace("{{version}}", f"{hoi_bench.__version__} (builder version {VERSION})")
        .replace("{{upstream_commit}}", UPSTREAM_COMMIT[:7])
        .replace("{{release_notes}}", notes)
        .replace("{{license}}", LICENSE)
    )
    return CardSpec(
        pretty_name="HICO-DET-SG and V-COCO-SG",
        license="other",
        extra_metadata={"license_name": "hico-det-sg-mixed",
                        "license_link": "https://github.com/FujitsuResearch/hoi_sg"},
        task_categories=["object-detection"],
        template=template,
        citation=CITATION,
        tags=["human-object-interaction", "systematic-generalization", "hico-det", "v-coco"],
    )


def config_card(builder: datasets.DatasetBuilder, built: datasets.DatasetDict) -> str:
    """Markdown section of one built config (``build_hub_folder``'s ``config_card`` hook)."""
    config = builder.config
    provenance = builder.provenance
    dataset = config.dataset
    lines = [
        f"### `{config.name}`",
        "",
        f"{config.description}.",
        "",
        f"Records: {provenance.source}"
        + ("" if config.with_images else "; annotation-only (no images)")
        + ".",
        "",
    ]
    if provenance.files:
        lines += ["| built from | sha256 |", "|---|---|"]
        lines += [f"| `{name}` | `{digest}` |" for name, digest in provenance.files.items()]
        lines.append("")
    origins = ("train2015", "test2015") if dataset == "hico" else ("train2014", "val2014")
    lines += [
        f"| split | images | HOI triplets | combinations | from {origins[0]} | from {origins[1]} |",
        "|---|---|---|---|---|---|",
    ]
    for split, stats in provenance.stats.items():
        if len(built[split]) != stats.images:
            raise DataError(
                f"config {config.name!r}: split {split!r} has {len(built[split])} rows "
                f"(expected {stats.images}, one per image record)"
            )
        per_origin = [stats.images_per_origin.get(o, 0) for o in origins]
        lines.append(
            f"| {split} | {stats.images:,} | {stats.hoi_triplets:,} | {stats.combinations} | "
            f"{per_origin[0]:,} | {per_origin[1]:,} |"
        )
    lines.append("")
    if provenance.dropped is not None:
        lines += [f"Mixed images dropped: {provenance.dropped:,}.", ""]
    if provenance.held_out:
        qualifier = (
            " (as seen in the official V-COCO-SG test file; combinations of dropped or quirk-assigned "
            "images may be missing)"
            if dataset == "vcoco" and "official" in provenance.source
            else ""
        )
        lines += [
            f"Held-out combinations ({len(provenance.held_out)}, seed {provenance.seed}){qualifier}:",
            "",
        ]
        header = "| HOI id | verb | object |" if dataset == "hico" else "| verb | object |"
        lines += [header, "|---|---|---|" if dataset == "hico" else "|---|---|"]
        for hoi_id, verb, obj in combination_table(provenance.held_out, dataset):
            lines.append(f"| {hoi_id} | {verb} | {obj} |" if dataset == "hico" else f"| {verb} | {obj} |")
        lines.append("")
    return "\n".join(lines)
