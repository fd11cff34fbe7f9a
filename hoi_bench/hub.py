"""Hub dataset folders: what ``load_dataset(FOLDER, CONFIG)`` and ``push_to_hub`` agree on.

``datasets`` >= 4 runs no loading scripts, so a benchmark ships as a folder holding ``README.md`` (dataset card
with YAML ``configs`` + ``dataset_info``) and ``<config>/<split>-0000i-of-0000N.parquet`` shards with image
bytes embedded. This module writes such folders from built ``DatasetDict`` objects, adds configs to an
existing folder while keeping its card consistent, and never leaves a half-written folder behind.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import datasets
from datasets.info import DatasetInfo, DatasetInfosDict
from datasets.splits import SplitDict, SplitInfo
from datasets.table import embed_table_storage
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

from hoi_bench.errors import DataError, HoiBenchError

logger = logging.getLogger(__name__)

DEFAULT_MAX_SHARD_BYTES = 500 * 1024 * 1024
CONFIG_CARD_FILE = "CARD.md"


@dataclass
class CardSpec:
    """What a dataset card says besides the per-config sections: the benchmark's identity and citation.

    ``template`` is markdown; ``{{configs}}`` is replaced by every config's section (``<config>/CARD.md``)
    and ``{{citation}}`` by the BibTeX, so a card built config by config always describes the whole folder.
    """

    pretty_name: str
    license: str
    task_categories: list[str]
    template: str
    citation: str = ""
    tags: list[str] = field(default_factory=list)
    extra_metadata: dict = field(default_factory=dict)


def write_hub_folder(
    out_dir: str | os.PathLike,
    configs: Mapping[str, datasets.DatasetDict],
    card: CardSpec,
    *,
    config_cards: Mapping[str, str] | None = None,
    default_config: str | None = None,
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
) -> Path:
    """Write (or extend) the Hub dataset folder ``out_dir`` with ``configs``; return its path.

    Configs already in the folder and not in ``configs`` are kept; configs named again are replaced. The new
    folder is assembled next to the old one and swapped in only when complete.
    """
    out = Path(out_dir).absolute()
    with staged_replace(out) as stage:
        if out.is_dir():
            _copy_tree_except(out, stage, skip=set(configs))
        infos, meta = _read_card_metadata(stage / "README.md")
        for name, dataset_dict in configs.items():
            if name == "data":
                raise DataError("config name 'data' is reserved by the Hub layout; pick another name")
            infos[name], meta[name] = _write_config(stage, name, dataset_dict, max_shard_bytes)
            section = (config_cards or {}).get(name) or default_config_card(name, dataset_dict)
            (stage / name / CONFIG_CARD_FILE).write_text(section.rstrip() + "\n", encoding="utf-8")
        if default_config is not None:
            for name, entry in meta.items():
                entry.pop("default", None)
                if name == default_config:
                    entry["default"] = True
        _write_card(stage, card, infos, meta)
    return out


@contextlib.contextmanager
def staged_replace(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling folder of ``target`` that replaces ``target`` only if the block succeeds.

    On an exception the temporary folder is removed and ``target`` is left exactly as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    backup = None
    if target.exists():
        backup = target.with_name(f".{target.name}.previous-{os.getpid()}")
        os.replace(target, backup)
    os.replace(stage, target)
    if backup is not None:
        shutil.rmtree(backup, ignore_errors=True)


def default_config_card(name: str, dataset_dict: datasets.DatasetDict) -> str:
    """A config section listing its splits and sizes, used when a builder gives no richer one."""
    rows = "\n".join(f"| {split} | {len(ds):,} |" for split, ds in dataset_dict.items())
    return f"### `{name}`\n\n| split | rows |\n|---|---|\n{rows}\n"


def _copy_tree_except(src: Path, dst: Path, skip: set[str]) -> None:
    for entry in src.iterdir():
        if entry.name in skip or entry.name.startswith("."):
            continue
        if entry.is_dir():
            shutil.copytree(entry, dst / entry.name, copy_function=_link_or_copy)
        else:
            _link_or_copy(entry, dst / entry.name)


def _link_or_copy(src, dst) -> None:
    """Hard-link unchanged shards (no extra disk), falling back to a copy across file systems."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _read_card_metadata(readme: Path) -> tuple[dict[str, DatasetInfo], dict[str, dict]]:
    if not readme.is_file():
        return {}, {}
    data = DatasetCard.load(readme).data
    infos = dict(DatasetInfosDict.from_dataset_card_data(data))
    meta = {name: dict(entry) for name, entry in MetadataConfigs.from_dataset_card_data(data).items()}
    readme.unlink()
    return infos, meta


def _write_config(
    stage: Path, name: str, dataset_dict: datasets.DatasetDict, max_shard_bytes: int
) -> tuple[DatasetInfo, dict]:
    features = next(iter(dataset_dict.values())).features
    info = DatasetInfo(config_name=name, features=features, splits=SplitDict(), download_size=0, dataset_size=0)
    data_files = []
    (stage / name).mkdir(parents=True, exist_ok=True)
    for split, ds in dataset_dict.items():
        if ds.features != features:
            raise DataError(f"config {name!r}: split {split!r} has other features than the first split")
        ds = ds.with_format("arrow").map(embed_table_storage, batched=True, keep_in_memory=True).with_format()
        num_shards = max(1, math.ceil(ds.data.nbytes / max_shard_bytes))
        for index in range(num_shards):
            shard = ds.shard(num_shards=num_shards, index=index, contiguous=True)
            path = stage / name / f"{split}-{index:05d}-of-{num_shards:05d}.parquet"
            shard.to_parquet(str(path))
            info.download_size += path.stat().st_size
        split_info = SplitInfo(name=split, num_bytes=ds.data.nbytes, num_examples=len(ds))
        info.splits.add(split_info)
        info.dataset_size += split_info.num_bytes
        data_files.append({"split": split, "path": f"{name}/{split}-*"})
    info.size_in_bytes = info.download_size + info.dataset_size
    return info, {"data_files": data_files}


def _write_card(stage: Path, card: CardSpec, infos: dict[str, DatasetInfo], meta: dict[str, dict]) -> None:
    names = list(meta)
    data = DatasetCardData(
        license=card.license,
        pretty_name=card.pretty_name,
        task_categories=card.task_categories,
        tags=card.tags or None,
        size_categories=_size_category(sum(s.num_examples for i in infos.values() for s in i.splits.values())),
        **card.extra_metadata,
    )
    DatasetInfosDict({n: infos[n] for n in names}).to_dataset_card_data(data)
    MetadataConfigs({n: meta[n] for n in names}).to_dataset_card_data(data)
    sections = "\n".join((stage / n / CONFIG_CARD_FILE).read_text(encoding="utf-8") for n in names
                         if (stage / n / CONFIG_CARD_FILE).is_file())
    body = card.template.replace("{{configs}}", sections).replace("{{citation}}", card.citation.strip())
    DatasetCard(f"---\n{data.to_yaml()}\n---\n{body}").save(stage / "README.md")


def _size_category(rows: int) -> str:
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")]
    return next((label for bound, label in bounds if rows < bound), "1M<n<10M")


def build_hub_folder(
    builder_cls: type[datasets.DatasetBuilder],
    config_names: list[str],
    out_dir: str | os.PathLike,
    card: CardSpec,
    *,
    data_dir: str | os.PathLike,
    num_proc: int | None = None,
    config_card: Callable[[datasets.DatasetBuilder, datasets.DatasetDict], str] | None = None,
    default_config: str | None = None,
    config_kwargs: Mapping[str, Mapping] | None = None,
    **builder_kwargs,
) -> Path:
    """Run ``builder_cls`` for each config on ``data_dir`` and write the results into the Hub folder ``out_dir``.

    ``builder_kwargs`` go to every config's builder, ``config_kwargs[name]`` to that config's only. The
    builder's Arrow cache lives in a temporary folder that is removed afterwards, so a rebuild never reuses a
    stale cache and a failed build leaves nothing behind. A hoi-bench error raised while generating rows (a bad
    record, an unreadable image) surfaces as itself rather than wrapped in ``DatasetGenerationError``.
    """
    built: dict[str, datasets.DatasetDict] = {}
    cards: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="hoi-bench-build-") as cache_dir:
        for name in config_names:
            kwargs = {**builder_kwargs, **(config_kwargs or {}).get(name, {})}
            builder = builder_cls(config_name=name, data_dir=str(data_dir), cache_dir=cache_dir, **kwargs)
            logger.info("building config %s from %s", name, data_dir)
            try:
                builder.download_and_prepare(num_proc=num_proc)
            except datasets.exceptions.DatasetGenerationError as error:
                cause = _hoi_bench_cause(error)
                if cause is None:
                    raise
                raise cause from error
            built[name] = builder.as_dataset()
            if config_card is not None:
                cards[name] = config_card(builder, built[name])
        return write_hub_folder(out_dir, built, card, config_cards=cards, default_config=default_config)


def _hoi_bench_cause(error: BaseException) -> HoiBenchError | None:
    """The hoi-bench error that ``datasets`` wrapped while generating rows, if any."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, HoiBenchError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None
