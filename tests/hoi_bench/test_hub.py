"""Hub folders: round trip through load_dataset, adding configs, atomic failure, streaming."""

from __future__ import annotations

import io

import datasets
import pytest
from datasets import ClassLabel, Features, Image, List, Value
from PIL import Image as PILImage

from hoi_bench.hub import CardSpec, staged_replace, write_hub_folder

FEATURES = Features({
    "image": Image(),
    "boxes": List(List(Value("float32"), length=4)),
    "verbs": List(ClassLabel(names=["ride", "hold", "eat"])),
})
CARD = CardSpec(pretty_name="Toy HOI", license="cc0-1.0", task_categories=["object-detection"],
                template="# Toy\n\n{{configs}}\n## Citation\n\n```bibtex\n{{citation}}\n```\n",
                citation="@misc{toy, title={Toy}}")


def _png(color: int) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", (4, 3), (color, 0, 0)).save(buffer, format="PNG")
    return buffer.getvalue()


def _dataset(n: int, offset: int = 0) -> datasets.Dataset:
    rows = {
        "image": [{"bytes": _png(i + offset), "path": f"{i}.png"} for i in range(n)],
        "boxes": [[[0.0, 0.0, float(i + 1), 2.0]] * (i % 3) for i in range(n)],
        "verbs": [[i % 3] * (i % 3) for i in range(n)],
    }
    return datasets.Dataset.from_dict(rows, features=FEATURES)


def _load(folder, config, **kwargs):
    return datasets.load_dataset(str(folder), config, cache_dir=str(folder.parent / "cache"), **kwargs)


def test_round_trip_keeps_features_and_rows(tmp_path):
    folder = tmp_path / "toy"
    write_hub_folder(folder, {"a": datasets.DatasetDict(train=_dataset(5), test=_dataset(2, 10))}, CARD)
    loaded = _load(folder, "a")
    assert loaded["train"].features == FEATURES
    assert loaded["train"]["boxes"] == _dataset(5)["boxes"]
    assert loaded["train"]["verbs"] == _dataset(5)["verbs"]
    assert loaded["test"][1]["image"].getpixel((0, 0)) == (11, 0, 0)
    assert sorted(p.name for p in (folder / "a").glob("*.parquet")) == [
        "test-00000-of-00001.parquet", "train-00000-of-00001.parquet"]
    readme = (folder / "README.md").read_text()
    assert "license: cc0-1.0" in readme and "@misc{toy" in readme and "### `a`" in readme


def test_second_config_keeps_the_first_loadable(tmp_path):
    folder = tmp_path / "toy"
    write_hub_folder(folder, {"a": datasets.DatasetDict(train=_dataset(5))}, CARD)
    write_hub_folder(folder, {"b": datasets.DatasetDict(test=_dataset(3))}, CARD, default_config="b")
    assert datasets.get_dataset_config_names(str(folder)) == ["a", "b"]
    assert _load(folder, "a")["train"].num_rows == 5
    assert _load(folder, "b")["test"].num_rows == 3
    readme = (folder / "README.md").read_text()
    assert "### `a`" in readme and "### `b`" in readme


def test_rebuilding_a_config_replaces_it(tmp_path):
    folder = tmp_path / "toy"
    write_hub_folder(folder, {"a": datasets.DatasetDict(train=_dataset(5))}, CARD)
    write_hub_folder(folder, {"a": datasets.DatasetDict(train=_dataset(2))}, CARD)
    assert _load(folder, "a")["train"].num_rows == 2


def test_failed_write_leaves_previous_folder_intact(tmp_path, monkeypatch):
    folder = tmp_path / "toy"
    write_hub_folder(folder, {"a": datasets.DatasetDict(train=_dataset(5))}, CARD)
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    real_to_parquet = datasets.Dataset.to_parquet
    written = []

    def to_parquet_then_fail(self, path, *args, **kwargs):
        if written:
            raise OSError("disk full")
        written.append(path)
        return real_to_parquet(self, path, *args, **kwargs)

    monkeypatch.setattr(datasets.Dataset, "to_parquet", to_parquet_then_fail)
    with pytest.raises(OSError, match="disk full"):
        write_hub_folder(folder, {"a": datasets.DatasetDict(train=_dataset(3), test=_dataset(2))}, CARD)
    assert len(written) == 1
    after = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir()] == ["toy"]


def test_staged_replace_on_success_swaps_and_on_error_removes(tmp_path):
    target = tmp_path / "out"
    with staged_replace(target) as stage:
        (stage / "x").write_text("1")
    assert (target / "x").read_text() == "1"
    with pytest.raises(KeyError), staged_replace(target) as stage:
        (stage / "x").write_text("2")
        raise KeyError("boom")
    assert (target / "x").read_text() == "1"


def test_streaming_and_name_from_parent(tmp_path, monkeypatch):
    folder = tmp_path / "toy"
    write_hub_folder(folder, {"a": datasets.DatasetDict(train=_dataset(4))}, CARD)
    streamed = list(datasets.load_dataset(str(folder), "a", split="train", streaming=True))
    assert [row["verbs"] for row in streamed] == _dataset(4)["verbs"]
    monkeypatch.chdir(tmp_path)
    assert datasets.load_dataset("toy", "a", split="train", cache_dir=str(tmp_path / "c2")).num_rows == 4


def test_shards_are_size_bounded(tmp_path):
    folder = tmp_path / "toy"
    write_hub_folder(folder, {"a": datasets.DatasetDict(train=_dataset(8))}, CARD, max_shard_bytes=200)
    shards = sorted((folder / "a").glob("train-*.parquet"))
    assert len(shards) > 1 and shards[0].name.endswith(f"-of-{len(shards):05d}.parquet")
    assert _load(folder, "a")["train"].num_rows == 8
