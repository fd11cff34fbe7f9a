"""Hub dataset folders: what ``load_dataset(FOLDER, CONFIG)`` and ``push_to_hub`` agree on.

``datasets`` >= 4 runs no loading scripts, so a benchmark ships as a folder holding ``README.md`` (dataset card
with YAML ``configs`` + ``dataset_info``) and ``<config>/<split>-0000i-of-0000N.parquet`` shards with image
bytes embedded. This module writes such folders from built ``DatasetDict`` objects, adds configs to an
existing folder while keeping its card consistent, and never leaves a half-written folder behind.

Safety rules for every folder written here: a file is never replaced by a folder; a hub folder is written only
into a new or empty folder or one hoi-bench wrote before (its card carries the ``hoi-bench`` tag); entries of an
existing folder that the writer does not own (hidden ones such as ``.git`` always) are carried over; writers of
one folder take turns through a lock file next to it; staging folders left by a killed writer are removed by the
next one; and what is written follows the umask. Splits are embedded and written one shard at a time, so memory
does not grow with the size of a split.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import logging
import math
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import datasets
from datasets.info import DatasetInfo, DatasetInfosDict
from datasets.splits import SplitDict, SplitInfo
from datasets.table import embed_table_storage
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

from hoi_bench.errors import DataError, HoiBenchError, OutputPathError

logger = logging.getLogger(__name__)

DEFAULT_MAX_SHARD_BYTES = 500 * 1024 * 1024
CONFIG_CARD_FILE = "CARD.md"
HOI_BENCH_TAG = "hoi-bench"
LOCK_TIMEOUT_S = 6 * 3600.0
LOCK_POLL_S = 0.2
EMBEDDING_FOLDER = ".embedding"
EMBED_BATCH_BYTES = 16 * 1024 * 1024
EMBED_CHUNK_BYTES = 64 * 1024 * 1024
MAX_BATCH_ROWS = 1000
OUT_EXPECTED = "a new or empty folder, or a dataset folder written by hoi-bench"


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
    force: bool = False,
    lock_timeout: float = LOCK_TIMEOUT_S,
) -> Path:
    """Write (or extend) the Hub dataset folder ``out_dir`` with ``configs``; return its path.

    Configs already in the folder and not in ``configs`` are kept, unless ``force`` (then the folder's configs
    are all replaced by ``configs``); configs named again are replaced. Other files in the folder are kept. The
    new folder is assembled next to the old one and swapped in only when complete. ``out_dir`` must be new, empty
    or a folder hoi-bench wrote (see :func:`check_output_folder`).
    """
    out = output_folder(out_dir)
    if "data" in configs:
        raise DataError("config name 'data' is reserved by the Hub layout; pick another name")
    dropped: set[str] = set()
    with staged_replace(out, owned=lambda entry: entry.name in dropped, lock_timeout=lock_timeout) as stage:
        check_output_folder(out, force=force)
        infos, meta = _read_card_metadata(out / "README.md")
        if force:
            dropped.update(meta)
            infos, meta = {}, {}
        for name, dataset_dict in configs.items():
            infos[name], meta[name] = _write_config(stage, name, dataset_dict, max_shard_bytes)
            section = (config_cards or {}).get(name) or default_config_card(name, dataset_dict)
            (stage / name / CONFIG_CARD_FILE).write_text(section.rstrip() + "\n", encoding="utf-8")
        if default_config is not None:
            for name, entry in meta.items():
                entry.pop("default", None)
                if name == default_config:
                    entry["default"] = True
        _write_card(stage, out, card, infos, meta)
    return out


def output_folder(out_dir: str | os.PathLike) -> Path:
    """The absolute folder ``out_dir`` names (a link to a folder is followed, so its target is written)."""
    out = Path(out_dir).absolute()
    return out.resolve() if out.is_symlink() else out


def check_output_folder(out_dir: str | os.PathLike, *, force: bool = False) -> Path:
    """``out_dir`` if a Hub folder may be written there, else ``OutputPathError``; nothing is changed.

    Accepted: a path that does not exist, a folder with no visible entries (hidden ones such as ``.git`` are
    kept), and a folder whose card says hoi-bench wrote it. Refused: a file, and any other folder, whatever
    ``force`` says: ``force`` only lets the configs of a hoi-bench folder be replaced, never unrelated files.
    """
    out = output_folder(out_dir)
    if out.exists() and not out.is_dir():
        raise OutputPathError(out, "--out", "is a file, not a folder; nothing was written", expected=OUT_EXPECTED)
    if not out.is_dir():
        return out
    visible = sorted(entry.name for entry in out.iterdir() if not entry.name.startswith("."))
    if visible and not is_hub_folder(out):
        shown = ", ".join(visible[:3]) + (f" and {len(visible) - 3} more" if len(visible) > 3 else "")
        hint = "; --force only replaces folders hoi-bench wrote" if force else ""
        raise OutputPathError(out, "--out", f"holds files hoi-bench did not write ({shown}){hint}; nothing was "
                              "written", expected=OUT_EXPECTED)
    return out


def is_hub_folder(folder: str | os.PathLike) -> bool:
    """Whether ``folder``'s ``README.md`` is a card hoi-bench wrote.

    That is: its YAML ``tags`` list ``hoi-bench``, or (folders written before the tag existed) it lists configs
    and each of them has the ``<config>/CARD.md`` section file only hoi-bench writes.
    """
    readme = Path(folder) / "README.md"
    if not readme.is_file():
        return False
    import yaml

    try:
        data = DatasetCard.load(readme).data.to_dict()
    except (OSError, ValueError, yaml.YAMLError):  # a card huggingface_hub cannot parse: not one hoi-bench wrote
        return False
    tags = data.get("tags") or []
    if isinstance(tags, list) and HOI_BENCH_TAG in tags:
        return True
    configs = data.get("configs")
    names = [entry.get("config_name") for entry in configs if isinstance(entry, dict)] if isinstance(
        configs, list) else []
    return bool(names) and all(
        isinstance(name, str) and (Path(folder) / name / CONFIG_CARD_FILE).is_file() for name in names)


@contextlib.contextmanager
def staged_replace(
    target: str | os.PathLike,
    *,
    owned: Callable[[Path], bool] | None = None,
    lock_timeout: float = LOCK_TIMEOUT_S,
) -> Iterator[Path]:
    """Yield a temporary sibling folder of ``target`` that replaces ``target`` only if the block succeeds.

    On an exception the temporary folder is removed and ``target`` is left exactly as it was. Entries of an
    existing ``target`` that the block did not write are carried over (hard links, no copy of the bytes), except
    visible ones for which ``owned(entry)`` is true (the writer's own old outputs); hidden entries always stay.
    A ``target`` that is a file raises ``OutputPathError`` before anything is written. Writers of one ``target``
    take turns (lock file ``.NAME.lock`` next to it; waiting longer than ``lock_timeout`` seconds is an error);
    inside the turn, staging folders of killed writers are removed first. The result follows the umask (or keeps
    the mode of the folder it replaces).
    """
    target = output_folder(target)
    if target.exists() and not target.is_dir():
        raise OutputPathError(target, "output folder", "is a file, not a folder; nothing was written",
                              expected="a folder path")
    target.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(target, lock_timeout):
        remove_stale_staging(target)
        stage = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-{os.getpid()}-", dir=target.parent))
        try:
            yield stage
            if target.is_dir():
                _carry_over(target, stage, owned or (lambda entry: False))
                os.chmod(stage, stat.S_IMODE(target.stat().st_mode))
            else:
                os.chmod(stage, 0o777 & ~_umask())
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        backup = None
        if target.exists():
            backup = target.with_name(f".{target.name}.previous-{os.getpid()}")
            shutil.rmtree(backup, ignore_errors=True)
            os.replace(target, backup)
        os.replace(stage, target)
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)


@contextlib.contextmanager
def folder_lock(target: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the lock file ``.NAME.lock`` next to ``target`` for the block, waiting up to ``timeout`` seconds.

    An OS file lock (``flock``), released when its process ends, so a killed writer never blocks the next one;
    the holder removes the file when done, so nothing is left next to ``target``.
    """
    import fcntl

    path = target.with_name(f".{target.name}.lock")
    deadline = time.monotonic() + timeout
    waiting = False
    while True:
        handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            if time.monotonic() >= deadline:
                raise HoiBenchError(f"{target}: another hoi-bench process has been writing this folder for more "
                                    f"than {timeout:.0f} s (lock file {path}); nothing was written, try again "
                                    "when it has finished") from None
            if not waiting:
                logger.warning("%s: another hoi-bench process is writing this folder; waiting for it to finish "
                               "(lock file %s)", target, path)
                waiting = True
            time.sleep(LOCK_POLL_S)
            continue
        if _same_file(handle, path):
            break
        os.close(handle)  # the previous holder removed the file after we opened it: lock the current one
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        os.close(handle)


def _same_file(handle: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(handle), path.stat())
    except FileNotFoundError:
        return False


def remove_stale_staging(target: Path) -> None:
    """Remove what killed writers of ``target`` left next to it.

    ``.NAME.partial-PID-*`` staging folders whose process ``PID`` is gone are deleted. A ``.NAME.previous-PID``
    (a writer killed between its two renames) is renamed back to ``NAME`` when ``NAME`` is missing, else
    deleted. Entries of live processes, and names without a process id, are left alone.
    """
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(partial|previous)-(\d+)(-.*)?")
    for entry in sorted(target.parent.iterdir()):
        match = pattern.fullmatch(entry.name)
        if match is None or not entry.is_dir() or entry.is_symlink() or _process_alive(int(match.group(2))):
            continue
        if match.group(1) == "previous" and match.group(3) is None and not target.exists():
            os.replace(entry, target)
            logger.warning("%s: restored the folder a killed build had moved to %s", target, entry.name)
            continue
        if match.group(1) == "partial" or match.group(3) is None:
            shutil.rmtree(entry, ignore_errors=True)
            logger.warning("%s: removed %s, left by a build that was killed", target, entry.name)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid() or os.name != "posix":
        return True  # outside POSIX a probe could end the process: never guess there
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _umask() -> int:
    """The process umask (``os.umask`` can only read it by setting it, so it is set back at once)."""
    current = os.umask(0o022)
    os.umask(current)
    return current


def default_config_card(name: str, dataset_dict: datasets.DatasetDict) -> str:
    """A config section listing its splits and sizes, used when a builder gives no richer one."""
    rows = "\n".join(f"| {split} | {len(ds):,} |" for split, ds in dataset_dict.items())
    return f"### `{name}`\n\n| split | rows |\n|---|---|\n{rows}\n"


def _carry_over(old: Path, stage: Path, owned: Callable[[Path], bool]) -> None:
    """Link the entries of ``old`` that ``stage`` lacks into ``stage``, except visible ones ``owned`` drops."""
    for entry in old.iterdir():
        destination = stage / entry.name
        if destination.exists() or destination.is_symlink():
            continue
        if not entry.name.startswith(".") and owned(entry):
            continue
        if entry.is_symlink():
            os.symlink(os.readlink(entry), destination)
        elif entry.is_dir():
            shutil.copytree(entry, destination, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(entry, destination)


def _link_or_copy(src, dst) -> None:
    """Hard-link unchanged files (no extra disk), falling back to a copy across file systems."""
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
        num_bytes, sizes = _write_split(ds, stage / name, split, max_shard_bytes, stage / EMBEDDING_FOLDER)
        info.download_size += sum(sizes)
        split_info = SplitInfo(name=split, num_bytes=num_bytes, num_examples=len(ds))
        info.splits.add(split_info)
        info.dataset_size += split_info.num_bytes
        data_files.append({"split": split, "path": f"{name}/{split}-*"})
    info.size_in_bytes = info.download_size + info.dataset_size
    return info, {"data_files": data_files}


def _write_split(
    ds: datasets.Dataset, folder: Path, split: str, max_shard_bytes: int, scratch: Path
) -> tuple[int, list[int]]:
    """Write ``ds`` as ``<split>-0000i-of-0000N.parquet`` shards of at most ``max_shard_bytes``; return the
    embedded split's Arrow size and the shard file sizes.

    The bytes are those of embedding the whole split in memory and cutting it into shards (what ``push_to_hub``
    does), but memory holds a few MB of rows at a time: files referenced by path are embedded batch by batch
    into Arrow files under ``scratch`` (deleted afterwards), and the rows are read through memory maps that are
    dropped every ``EMBED_CHUNK_BYTES``, so the pages read do not pile up in the process either.
    """
    scratch.mkdir(exist_ok=True)
    parts = []
    batch_rows, chunk_rows = _embedding_rows(ds)
    with _one_progress_bar(len(ds), f"embedding {split}") as progress:
        for start in range(0, len(ds), chunk_rows):
            part = scratch / f"{folder.name}-{split}-{len(parts):05d}.arrow"
            with _remapped(ds) as source:
                chunk = source.select(range(start, min(start + chunk_rows, len(ds)))).with_format("arrow")
                chunk.map(embed_table_storage, batched=True, batch_size=batch_rows, writer_batch_size=batch_rows,
                          cache_file_name=str(part), load_from_cache_file=False)
                progress.update(len(chunk))
                del chunk
            parts.append(part)
    with _opened_parts(parts) as embedded:
        num_bytes = embedded.data.nbytes
    num_shards = max(1, math.ceil(num_bytes / max_shard_bytes))
    sizes = []
    for index, (start, stop) in enumerate(_contiguous_shards(len(ds), num_shards)):
        path = folder / f"{split}-{index:05d}-of-{num_shards:05d}.parquet"
        _write_parquet(parts, ds.features, start, stop, path)
        sizes.append(path.stat().st_size)
    shutil.rmtree(scratch, ignore_errors=True)
    return num_bytes, sizes


def _contiguous_shards(rows: int, num_shards: int) -> list[tuple[int, int]]:
    """Row ranges of ``Dataset.shard(num_shards, index, contiguous=True)``: the first ``rows % num_shards``
    shards one row longer.

    >>> _contiguous_shards(10, 3)
    [(0, 4), (4, 7), (7, 10)]
    """
    size, longer = divmod(rows, num_shards)
    starts = [index * size + min(index, longer) for index in range(num_shards + 1)]
    return list(itertools.pairwise(starts))


def _write_parquet(parts: list[Path], features: datasets.Features, start: int, stop: int, path: Path) -> None:
    """Rows ``[start, stop)`` of the Arrow files ``parts`` as the parquet file ``Dataset.to_parquet`` writes.

    The loop of ``datasets.io.parquet.ParquetDatasetWriter`` (same writer options, same row groups), except that
    the rows are read through a fresh memory map every ``EMBED_CHUNK_BYTES``, so the pages of a 500 MB shard are
    not all mapped at the end; ``tests/hoi_bench/test_hub.py`` checks the bytes against ``to_parquet``.
    """
    import json

    import pyarrow.parquet as pq
    from datasets import config
    from datasets.arrow_writer import (
        get_parquet_column_options,
        get_writer_batch_size_from_data_size,
        get_writer_batch_size_from_features,
    )
    from datasets.formatting import query_table

    with _opened_parts(parts) as embedded:
        shard = embedded.select(range(start, stop))
        batch_size = get_writer_batch_size_from_features(features) or get_writer_batch_size_from_data_size(
            len(shard), shard._estimate_nbytes())
        row_bytes = shard.data.nbytes / max(1, len(shard))
        del shard
    window = max(1, int(EMBED_CHUNK_BYTES / max(1.0, row_bytes * batch_size))) * batch_size
    schema = features.arrow_schema
    chunking = config.DEFAULT_CDC_OPTIONS
    with open(path, "wb") as stream:
        writer = pq.ParquetWriter(stream, schema=schema, use_content_defined_chunking=chunking, write_page_index=True,
                                  **get_parquet_column_options(features, schema))
        for window_start in range(start, stop, window):
            with _opened_parts(parts) as embedded:
                for offset in range(window_start, min(window_start + window, stop), batch_size):
                    writer.write_table(query_table(embedded.data, slice(offset, min(offset + batch_size, stop))))
        writer.add_key_value_metadata({"content_defined_chunking": json.dumps(chunking)})
        writer.close()


def _embedding_rows(ds: datasets.Dataset) -> tuple[int, int]:
    """Rows per embedding batch (about ``EMBED_BATCH_BYTES``) and per memory map (about ``EMBED_CHUNK_BYTES``,
    whole batches). How rows are batched changes neither the parquet bytes nor the Arrow size (tested)."""
    row_bytes = max(1.0, ds.data.nbytes / max(1, len(ds)))
    batch = max(1, min(MAX_BATCH_ROWS, int(EMBED_BATCH_BYTES / row_bytes)))
    return batch, batch * max(1, int(EMBED_CHUNK_BYTES / (row_bytes * batch)))


@contextlib.contextmanager
def _one_progress_bar(total: int, description: str) -> Iterator:
    """A ``datasets`` progress bar for a whole split, with the bars of the per-chunk ``map`` calls hidden."""
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from datasets.utils import tqdm as hf_tqdm

    shown = not are_progress_bars_disabled()
    with hf_tqdm(total=total, unit=" examples", desc=description) as progress:
        disable_progress_bars()
        try:
            yield progress
        finally:
            if shown:
                enable_progress_bars()


@contextlib.contextmanager
def _remapped(ds: datasets.Dataset) -> Iterator[datasets.Dataset]:
    """``ds`` read through fresh memory maps of its Arrow files, unmapped after the block (``ds`` itself when it
    is held in memory or is a selection of its files)."""
    files = [entry["filename"] for entry in ds.cache_files]
    if not files or ds._indices is not None:
        yield ds
        return
    with _opened_parts(files) as source:
        yield source if len(source) == len(ds) and source.features == ds.features else ds


@contextlib.contextmanager
def _opened_parts(files: list) -> Iterator[datasets.Dataset]:
    """The Arrow files ``files`` as one dataset, memory-mapped for the block only."""
    parts = [datasets.Dataset.from_file(str(file)) for file in files]  # features: from the files' schema
    dataset = datasets.concatenate_datasets(parts) if len(parts) > 1 else parts[0]
    try:
        yield dataset
    finally:
        del dataset, parts
        gc.collect()  # a Dataset sits in reference cycles: collect them so its memory maps are closed now


def _write_card(stage: Path, previous: Path, card: CardSpec, infos: dict[str, DatasetInfo],
                meta: dict[str, dict]) -> None:
    """``README.md``: card metadata, ``configs``, per-config sizes, and every config's section.

    ``dataset_info`` lists splits and sizes but no ``features``: the parquet shards carry them (ClassLabel names
    included) in their schema metadata, and ``load_dataset`` reads them from there, so the YAML stays a few KB
    however many configs repeat the same class lists. Sections of configs kept from ``previous`` are read there.
    """
    names = list(meta)
    data = DatasetCardData(
        license=card.license,
        pretty_name=card.pretty_name,
        task_categories=card.task_categories,
        tags=[*card.tags, *([] if HOI_BENCH_TAG in card.tags else [HOI_BENCH_TAG])],
        size_categories=_size_category(sum(s.num_examples for i in infos.values() for s in i.splits.values())),
        **card.extra_metadata,
    )
    DatasetInfosDict({n: infos[n] for n in names}).to_dataset_card_data(data)
    _drop_features(data)
    MetadataConfigs({n: meta[n] for n in names}).to_dataset_card_data(data)
    sections = []
    for name in names:
        for folder in (stage, previous):
            if (folder / name / CONFIG_CARD_FILE).is_file():
                sections.append((folder / name / CONFIG_CARD_FILE).read_text(encoding="utf-8"))
                break
    body = card.template.replace("{{configs}}", "\n".join(sections)).replace("{{citation}}", card.citation.strip())
    DatasetCard(f"---\n{data.to_yaml()}\n---\n{body}").save(stage / "README.md")


def _drop_features(data: DatasetCardData) -> None:
    entries = data.get("dataset_info")
    for entry in entries if isinstance(entries, list) else [entries] if isinstance(entries, dict) else []:
        entry.pop("features", None)


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
    force: bool = False,
    **builder_kwargs,
) -> Path:
    """Run ``builder_cls`` for each config on ``data_dir`` and write the results into the Hub folder ``out_dir``.

    ``builder_kwargs`` go to every config's builder, ``config_kwargs[name]`` to that config's only. ``out_dir``
    is checked before any work (see :func:`check_output_folder`; ``force`` replaces a hoi-bench folder's configs
    instead of adding to them). The builder's Arrow cache lives in a temporary folder that is removed afterwards,
    so a rebuild never reuses a stale cache and a failed build leaves nothing behind. A hoi-bench error raised
    while generating rows (a bad record, an unreadable image) surfaces as itself rather than wrapped in
    ``DatasetGenerationError``.
    """
    if num_proc is not None and num_proc < 1:
        raise HoiBenchError(f"--num-proc {num_proc}: expected a number of processes >= 1 (or none for one process)")
    check_output_folder(out_dir, force=force)
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
        return write_hub_folder(out_dir, built, card, config_cards=cards, default_config=default_config,
                                force=force)


def _hoi_bench_cause(error: BaseException) -> HoiBenchError | None:
    """The hoi-bench error that ``datasets`` wrapped while generating rows, if any."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, HoiBenchError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None
