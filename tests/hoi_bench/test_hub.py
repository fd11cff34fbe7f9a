"""Hub folders: round trip through load_dataset, adding configs, atomic failure, streaming, shard-by-shard
writing, what an existing folder keeps, locks and leftovers of killed writers, and image checks."""

from __future__ import annotations

import io
import math
import struct
import subprocess
import sys
import zlib

import datasets
import pytest
from datasets import ClassLabel, Features, Image, List, Value
from datasets.table import embed_table_storage
from huggingface_hub import DatasetCard
from PIL import Image as PILImage

from hoi_bench import hub
from hoi_bench.errors import FormatError, HoiBenchError, OutputPathError
from hoi_bench.hub import CardSpec, build_hub_folder, folder_lock, staged_replace, write_hub_folder
from hoi_bench.images import embedded_image, image_size

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
    real_write_parquet = hub._write_parquet  # the one place every shard file is written
    written = []

    def write_parquet_then_fail(parts, features, start, stop, path):
        if written:
            raise OSError("disk full")
        written.append(path)
        return real_write_parquet(parts, features, start, stop, path)

    monkeypatch.setattr(hub, "_write_parquet", write_parquet_then_fail)
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


def test_card_yaml_leaves_features_to_the_parquet_files(tmp_path):
    """The YAML lists no features (so it stays small with many configs); load_dataset still gets ClassLabel names."""
    folder = tmp_path / "toy"
    one_more = tmp_path / "one-more"
    write_hub_folder(one_more, {f"c{i}": datasets.DatasetDict(train=_dataset(2)) for i in range(2)}, CARD)
    write_hub_folder(folder, {f"c{i}": datasets.DatasetDict(train=_dataset(2)) for i in range(3)}, CARD)
    readme = (folder / "README.md").read_text()
    yaml = readme.split("\n---\n")[0]
    assert "ride" not in yaml and "- hoi-bench" in readme
    per_config = len(yaml) - len((one_more / "README.md").read_text().split("\n---\n")[0])
    assert 0 < per_config < 250, per_config  # 30 configs stay well inside the Hub's YAML limit
    assert _load(folder, "c2")["train"].features == FEATURES
    streamed = datasets.load_dataset(str(folder), "c1", split="train", streaming=True)
    assert streamed.features == FEATURES


def test_split_is_written_in_several_shards_with_the_same_rows(tmp_path):
    folder = tmp_path / "toy"
    write_hub_folder(folder, {"a": datasets.DatasetDict(train=_dataset(40))}, CARD, max_shard_bytes=1_000)
    shards = sorted((folder / "a").glob("train-*.parquet"))
    assert len(shards) > 3
    loaded = _load(folder, "a")["train"].cast_column("image", Image(decode=False))
    original = _dataset(40).cast_column("image", Image(decode=False))
    assert loaded["image"] == original["image"] and loaded["verbs"] == original["verbs"]
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())


def test_staged_replace_refuses_a_file_and_keeps_it(tmp_path):
    target = tmp_path / "episodes"
    target.write_text("mine")
    with pytest.raises(OutputPathError, match="is a file"), staged_replace(target) as stage:
        (stage / "x").write_text("1")
    assert target.read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["episodes"]


def test_staged_replace_keeps_entries_it_does_not_own(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / ".git").mkdir()
    (target / "theirs.txt").write_text("keep")
    (target / "old_result.json").write_text("stale")
    with staged_replace(target, owned=lambda entry: entry.suffix == ".json") as stage:
        (stage / "new_result.json").write_text("fresh")
    assert sorted(p.name for p in target.iterdir()) == [".git", "new_result.json", "theirs.txt"]


def test_a_build_killed_between_its_renames_gets_the_previous_folder_back(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder = tmp_path / "toy"
    write_hub_folder(folder, {"a": datasets.DatasetDict(train=_dataset(3))}, CARD)
    folder.rename(tmp_path / f".toy.previous-{dead.pid}")  # the moment a killed writer left behind
    write_hub_folder(folder, {"b": datasets.DatasetDict(train=_dataset(2))}, CARD)
    assert datasets.get_dataset_config_names(str(folder)) == ["a", "b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "toy"] or sorted(
        p.name for p in tmp_path.iterdir()) == ["toy"]


def test_a_busy_folder_times_out_with_a_clear_error(tmp_path):
    folder = tmp_path / "toy"
    with folder_lock(folder), pytest.raises(HoiBenchError, match="another hoi-bench process"):
        write_hub_folder(folder, {"a": datasets.DatasetDict(train=_dataset(2))}, CARD, lock_timeout=0.5)
    assert not folder.exists()
    assert list(tmp_path.iterdir()) == []  # the lock file goes with its holder


def test_num_proc_below_one_is_an_error(tmp_path):
    with pytest.raises(HoiBenchError, match="--num-proc 0"):
        build_hub_folder(datasets.GeneratorBasedBuilder, ["x"], tmp_path / "out", CARD, data_dir=tmp_path,
                         num_proc=0)
    assert list(tmp_path.iterdir()) == []


def test_embedded_images_are_checked_before_embedding(tmp_path):
    good = tmp_path / "good.png"
    good.write_bytes(_png(3))
    assert embedded_image(good) == {"bytes": _png(3), "path": "good.png"}
    text = tmp_path / "notes.jpg"
    text.write_text("not a picture")
    with pytest.raises(FormatError, match="notes.jpg: record 7: not an image file"):
        embedded_image(text, record=7)
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(_png_claiming(20_000, 20_000))  # 400 megapixels: Pillow's own limit raises here
    with pytest.raises(FormatError, match=r"bomb.png: image of .* too large"):
        embedded_image(bomb)
    big = tmp_path / "big.png"
    big.write_bytes(_png_claiming(12_000, 9_000))  # 108 megapixels: Pillow only warns; the limit refuses
    with pytest.raises(FormatError, match=r"big.png: image of 12000 x 9000 = 108,000,000 pixels"):
        image_size(big)
    truncated = tmp_path / "cut.jpg"
    buffer = io.BytesIO()
    PILImage.new("RGB", (64, 48), (9, 9, 9)).save(buffer, format="JPEG")
    truncated.write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    with pytest.raises(FormatError, match="cut.jpg: image does not decode"):
        embedded_image(truncated)


def _png_claiming(width: int, height: int) -> bytes:
    """A PNG of a few bytes whose header claims ``width`` x ``height`` pixels (a decompression bomb's shape)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    data = zlib.compress(b"\0" * 64)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", data) + _chunk(b"IEND", b"")


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


@pytest.mark.slow
def test_chunked_embedding_writes_the_bytes_of_a_whole_split_embedded_at_once(tmp_path, monkeypatch):
    """Chunk by chunk and shard by shard, yet the same parquet bytes and sizes as embedding the whole split in
    memory and cutting it into shards (the previous writer, and push_to_hub)."""
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    for i in range(7):
        (pictures / f"{i}.png").write_bytes(_png(i))
    n = 240
    rows = {  # every third image by path only, so embedding reads files
        "image": [{"bytes": None, "path": str(pictures / f"{i % 7}.png")} if i % 3 == 0 else
                  {"bytes": _png(i % 200), "path": f"{i}.png"} for i in range(n)],
        "boxes": [[[0.0, 0.0, float(i + 1), 2.0]] * (i % 3) for i in range(n)],
        "verbs": [[i % 3] * (i % 3) for i in range(n)],
    }
    dataset = datasets.Dataset.from_dict(rows, features=FEATURES)
    dataset.save_to_disk(str(tmp_path / "arrow"))
    mapped = datasets.load_from_disk(str(tmp_path / "arrow"))  # memory-mapped, as builders give it
    monkeypatch.setattr(hub, "EMBED_BATCH_BYTES", 3_000)  # batches of a few dozen rows, not map's 1,000
    monkeypatch.setattr(hub, "EMBED_CHUNK_BYTES", 1)  # one batch per memory map
    folder = tmp_path / "toy"
    write_hub_folder(folder, {"a": datasets.DatasetDict(train=mapped)}, CARD, max_shard_bytes=9_000)

    whole = mapped.with_format("arrow").map(embed_table_storage, batched=True, keep_in_memory=True).with_format()
    num_shards = math.ceil(whole.data.nbytes / 9_000)
    assert num_shards > 2 and whole.data.nbytes / num_shards > 2 * 3_000  # several embedding batches a shard
    written = sorted((folder / "a").glob("train-*.parquet"))
    assert [p.name for p in written] == [f"train-{i:05d}-of-{num_shards:05d}.parquet" for i in range(num_shards)]
    for index, path in enumerate(written):
        reference = tmp_path / "reference.parquet"
        whole.shard(num_shards=num_shards, index=index, contiguous=True).to_parquet(str(reference))
        assert path.read_bytes() == reference.read_bytes(), path.name
    card = DatasetCard.load(folder / "README.md").data.to_dict()
    assert card["dataset_info"]["splits"][0]["num_bytes"] == whole.data.nbytes


def test_an_oversized_image_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from hoi_bench import images

    picture = tmp_path / "huge.png"
    picture.write_bytes(_png(1))
    monkeypatch.setattr(images, "MAX_IMAGE_BYTES", 10)
    with pytest.raises(FormatError, match=r"huge.png: record 3: image file of \d+ bytes: too large"):
        embedded_image(picture, record=3)
