"""The hoi_sg builder: round trip through a Hub folder, adding configs, atomic failure, every bad input."""

from __future__ import annotations

import logging
import shutil

import datasets
import numpy as np
import pytest

from hoi_bench.errors import ConfigError, FormatError, MissingFilesError
from hoi_sg_dataset import builder as builder_module
from hoi_sg_dataset.builder import CONFIG_NAMES, HoiSgBuilder, buildable_configs, row_to_record
from hoi_sg_dataset.formats import read_annotations, write_annotations
from hoi_sg_dataset.hub_folder import build_hoi_sg
from hoi_sg_dataset.splits import make_split, write_split
from hoi_sg_dataset.stats import combination_names


def _load(folder, config, **kwargs):
    return datasets.load_dataset(
        str(folder), config, cache_dir=str(folder.parent / f"cache-{config}"), **kwargs
    )


def _originals(root, dataset):
    base = root / ("hico_20160224_det" if dataset == "hico" else "v-coco") / "annotations"
    return (
        read_annotations(base / f"trainval_{dataset}.json", dataset),
        read_annotations(base / f"test_{dataset}.json", dataset),
    )


def _expected(root, config):
    dataset = "hico" if config.startswith("hico") else "vcoco"
    trainval, test = _originals(root, dataset)
    if config in ("hico", "vcoco"):
        return dataset, {"train": trainval, "test": test}
    split = make_split(trainval, test, dataset, seed=HoiSgBuilder.builder_configs[config].seed)
    return dataset, {"train": split.trainval, "test": split.test}


def _assert_same_annotations(rows, records, dataset):
    rows = list(rows)
    assert [r["file_name"] for r in rows] == [r.file_name for r in records]
    for row, record in zip(rows, records, strict=True):
        back = row_to_record(row, dataset)
        assert back.img_id == record.img_id and row["origin_split"] == record.origin_split
        assert [b.category_id for b in back.annotations] == [b.category_id for b in record.annotations]
        np.testing.assert_array_equal(
            np.array([b.bbox for b in back.annotations], np.float32).reshape(-1, 4),
            record.boxes.astype(np.float32),
        )
        assert back.hoi_annotation == record.hoi_annotation


@pytest.fixture(scope="module")
def hub(sample_root, tmp_path_factory):
    """hico_split1 built first, vcoco added by a second build: the folder every read-only test uses."""
    folder = tmp_path_factory.mktemp("hub") / "hoi_sg"
    build_hoi_sg(sample_root, folder, ["hico_split1"])
    build_hoi_sg(sample_root, folder, ["vcoco"])
    return folder


@pytest.mark.parametrize("config", ["hico_split1", "vcoco"])
def test_round_trip_preserves_every_annotation_and_image(hub, sample_root, config):
    dataset, expected = _expected(sample_root, config)
    loaded = _load(hub, config)
    assert set(loaded) == {"train", "test"}
    for split, records in expected.items():
        _assert_same_annotations(loaded[split], records, dataset)
        raw = loaded[split].cast_column("image", datasets.Image(decode=False))
        for row, record in zip(raw.select(range(5)), records[:5], strict=True):
            source = sample_root / ("hico_20160224_det" if dataset == "hico" else "v-coco") / "images"
            assert row["image"]["bytes"] == (source / record.origin_split / record.file_name).read_bytes()
        first = loaded[split][0]
        assert (first["width"], first["height"]) == first["image"].size == (128, 96)


def test_streaming_gives_the_same_rows(hub, sample_root):
    dataset, expected = _expected(sample_root, "hico_split1")
    streamed = datasets.load_dataset(str(hub), "hico_split1", split="test", streaming=True)
    _assert_same_annotations(streamed, expected["test"], dataset)


def test_second_config_keeps_both_loadable_and_the_card_describes_both(hub):
    assert datasets.get_dataset_config_names(str(hub)) == ["hico_split1", "vcoco"]
    assert _load(hub, "hico_split1")["test"].num_rows == 33
    assert _load(hub, "vcoco")["test"].num_rows == 100
    readme = (hub / "README.md").read_text()
    assert "### `hico_split1`" in readme and "### `vcoco`" in readme
    assert "license: other" in readme and "takemoto2023hicodetsg" in readme and "8,515" in readme


def test_card_names_the_held_out_combinations_and_the_source_checksums(hub, sample_root):
    readme = (hub / "README.md").read_text()
    trainval, test = _originals(sample_root, "hico")
    split = make_split(trainval, test, "hico", seed=368)
    for name in combination_names(split.test_combinations, "hico"):
        verb, obj = name.split(" ", 1)
        assert f"| {verb} | {obj} |" in readme
    assert "regenerated with seed 368" in readme and "`annotations/trainval_hico.json`" in readme
    assert "| test | 33 | 34 | 5 | 25 | 8 |" in readme


def test_features_are_declared(hub):
    features = _load(hub, "hico_split1")["train"].features
    assert features["hois"].feature["verb"].names[87] == "sit_on"
    assert features["hois"].feature["hoi"].names[241] == "sit_on bed"
    assert features["box_labels"].feature.names[0] == "person"
    assert isinstance(features["image"], datasets.Image)


@pytest.mark.slow  # a session build of every config of the sample
def test_every_sample_config_builds_annotation_only_without_images(hoi_sg_annotation_only_hub, tmp_path):
    folder, root_without_images = hoi_sg_annotation_only_hub  # built by default, every buildable config
    assert not list(root_without_images.glob("*/images"))
    assert buildable_configs(root_without_images) == list(CONFIG_NAMES)
    assert sorted(datasets.get_dataset_config_names(str(folder))) == sorted(CONFIG_NAMES)
    loaded = datasets.load_dataset(str(folder), "vcoco_split2", cache_dir=str(tmp_path / "cache"))
    assert "image" not in loaded["test"].column_names and "width" not in loaded["test"].column_names
    assert loaded["test"][0]["hois"] is not None


def test_official_split_files_are_used_when_present(sample_copy, tmp_path, caplog):
    root = sample_copy / "hico_20160224_det"
    trainval, test = _originals(sample_copy, "hico")
    split = make_split(trainval, test, "hico", seed=368)
    write_split(split, root, "sg1")
    (root / "annotations" / "trainval_hico.json").unlink()  # not needed when both split files exist
    with caplog.at_level(logging.INFO, logger="hoi_sg_dataset.builder"):
        folder = build_hoi_sg(sample_copy, tmp_path / "out", ["hico_split1"], with_images=False)
    assert "using the official split files" in caplog.text
    assert "official SG split files" in (folder / "README.md").read_text()
    _assert_same_annotations(_load(folder, "hico_split1")["test"], split.test, "hico")


@pytest.mark.slow
def test_regenerated_split_is_compared_with_an_official_test_file(sample_copy, tmp_path, caplog):
    root = sample_copy / "hico_20160224_det"
    trainval, test = _originals(sample_copy, "hico")
    split = make_split(trainval, test, "hico", seed=680)
    trainval_path, test_path = write_split(split, root, "sg2")
    trainval_path.unlink()  # like the anchors: only the published test file is at hand
    with caplog.at_level(logging.INFO, logger="hoi_sg_dataset.builder"):
        build_hoi_sg(sample_copy, tmp_path / "a", ["hico_split2"], with_images=False)
    assert "regenerating with seed 680" in caplog.text and "regenerated test split equals" in caplog.text
    write_annotations(test_path, split.test[1:], "hico")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="hoi_sg_dataset.builder"):
        build_hoi_sg(sample_copy, tmp_path / "b", ["hico_split2"], with_images=False)
    assert "differs from" in caplog.text


def test_num_proc_gives_the_same_rows(sample_root, tmp_path, hub):
    folder = build_hoi_sg(sample_root, tmp_path / "mp", ["hico_split1"], num_proc=2)
    one, two = _load(hub, "hico_split1")["train"], _load(folder, "hico_split1")["train"]
    assert one.remove_columns("image").to_list() == two.remove_columns("image").to_list()


def test_interrupted_build_leaves_the_previous_folder(sample_root, tmp_path, monkeypatch):
    folder = build_hoi_sg(sample_root, tmp_path / "hoi_sg", ["vcoco"], with_images=False)
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    real_embed, calls = builder_module.embedded_image, []

    def interrupt_midway(path):  # vcoco's 320 rows are generated, then hico_split1 stops at its 51st row
        calls.append(path)
        if len(calls) > 320 + 50:
            raise KeyboardInterrupt
        return real_embed(path)

    monkeypatch.setattr(builder_module, "embedded_image", interrupt_midway)
    with pytest.raises(KeyboardInterrupt):
        build_hoi_sg(sample_root, folder, ["vcoco", "hico_split1"])
    assert len(calls) == 371
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["hoi_sg"]  # no half-written sibling left behind


def test_missing_images_are_counted_and_named_before_anything_is_written(sample_copy, tmp_path):
    images = sample_copy / "hico_20160224_det" / "images"
    (images / "test2015" / "HICO_test2015_00000007.jpg").unlink()
    (images / "train2015" / "HICO_train2015_00000003.jpg").unlink()
    with pytest.raises(MissingFilesError) as caught:
        build_hoi_sg(sample_copy, tmp_path / "out", ["hico"])
    message = str(caught.value)
    assert "2 images missing" in message and "images/train2015/HICO_train2015_00000003.jpg" in message
    assert "images/test2015/HICO_test2015_00000007.jpg" in message and "--no-images" in message
    assert not (tmp_path / "out").exists()


def test_unknown_config_name(sample_root, tmp_path):
    with pytest.raises(ConfigError, match="unknown hoi_sg config 'hico_split4'.*hico_split1"):
        build_hoi_sg(sample_root, tmp_path / "out", ["hico_split4"])
    with pytest.raises(ConfigError):
        HoiSgBuilder(config_name="vcoco_split0", data_dir=str(sample_root))


def test_data_dir_missing_an_annotation_file(sample_copy, tmp_path):
    (sample_copy / "hico_20160224_det" / "annotations" / "test_hico.json").unlink()
    with pytest.raises(
        MissingFilesError, match="1 annotation files missing, first: annotations/test_hico.json"
    ):
        build_hoi_sg(sample_copy, tmp_path / "out", ["hico_split3"])
    assert "hico" not in buildable_configs(sample_copy) and "vcoco" in buildable_configs(sample_copy)
    with pytest.raises(MissingFilesError, match="hico_20160224_det/annotations/trainval_hico.json"):
        buildable_configs(tmp_path)


def test_malformed_annotation_file_is_named(sample_copy, tmp_path):
    path = sample_copy / "v-coco" / "annotations" / "test_vcoco.json"
    path.write_text(path.read_text()[:-3])
    with pytest.raises(FormatError, match="test_vcoco.json.*malformed JSON"):
        build_hoi_sg(sample_copy, tmp_path / "out", ["vcoco"], with_images=False)


def test_image_name_without_a_known_split_prefix(sample_copy, tmp_path):
    path = sample_copy / "hico_20160224_det" / "annotations" / "test_hico.json"
    records = read_annotations(path, "hico")
    records[0].file_name = "my_image.jpg"
    write_annotations(path, records, "hico")
    with pytest.raises(FormatError, match="cannot tell the image folder") as caught:
        build_hoi_sg(sample_copy, tmp_path / "out", ["hico"])
    assert caught.value.found == "my_image.jpg"


@pytest.mark.parametrize("num_proc", [None, 2])
def test_unreadable_image_is_named_not_wrapped(sample_copy, tmp_path, num_proc):
    (sample_copy / "v-coco" / "images" / "val2014" / "COCO_val2014_000000000004.jpg").write_bytes(
        b"not a jpeg"
    )
    with pytest.raises(
        FormatError, match="COCO_val2014_000000000004.jpg: not a readable image .1 unreadable"
    ):
        build_hoi_sg(sample_copy, tmp_path / "out", ["vcoco"], num_proc=num_proc)
    assert not (tmp_path / "out").exists()


def test_builder_without_data_dir_names_the_expected_layout(tmp_path):
    builder = HoiSgBuilder(config_name="hico", cache_dir=str(tmp_path))
    with pytest.raises(MissingFilesError, match="(?s)data_dir.*annotations/trainval_hico.json"):
        builder.download_and_prepare()


def test_official_split_files_may_sit_in_a_shared_sgsplits_folder(sample_copy, tmp_path, caplog):
    trainval, test = _originals(sample_copy, "vcoco")
    split = make_split(trainval, test, "vcoco", seed=966)
    write_split(split, sample_copy, "sg2")  # data_dir/SGsplits/V-COCO-SG/..., as in a hoi_sg checkout
    with caplog.at_level(logging.INFO, logger="hoi_sg_dataset.builder"):
        folder = build_hoi_sg(sample_copy, tmp_path / "out", ["vcoco_split2"], with_images=False)
    assert "using the official split files" in caplog.text
    assert "`SGsplits/V-COCO-SG/test/test_vcoco_sg2.json`" in (folder / "README.md").read_text()


def _build_cli(data_dir, out, config, capsys) -> str:
    from hoi_bench.cli import main

    code = main(["build", "hoi_sg", "--data-dir", str(data_dir), "--config", config, "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("hoi-bench: error: ") and "\n" not in err, err
    assert not out.exists()
    return err


def test_image_symlink_leading_outside_the_data_folder_is_refused(sample_copy, tmp_path, capsys):
    """A link would make the build embed (and push upload) whatever file it points to."""
    image = sample_copy / "v-coco" / "images" / "val2014" / "COCO_val2014_000000000004.jpg"
    outside = tmp_path / "elsewhere.jpg"
    shutil.copyfile(image, outside)
    image.unlink()
    image.symlink_to(outside)
    err = _build_cli(sample_copy, tmp_path / "out", "vcoco", capsys)
    assert "COCO_val2014_000000000004.jpg" in err and "path leaves the data folder" in err


def test_image_symlink_inside_the_data_folder_is_followed(sample_copy, tmp_path):
    images = sample_copy / "v-coco" / "images" / "val2014"
    target = images / "COCO_val2014_000000000005.jpg"
    link = images / "COCO_val2014_000000000004.jpg"
    assert link.read_bytes() != target.read_bytes()
    link.unlink()
    link.symlink_to(target)
    folder = build_hoi_sg(sample_copy, tmp_path / "out", ["vcoco"])
    rows = _load(folder, "vcoco", split="test").cast_column("image", datasets.Image(decode=False))
    embedded = {row["file_name"]: row["image"]["bytes"] for row in rows}
    assert embedded[link.name] == target.read_bytes()  # the target's bytes, embedded under the link's name
    assert embedded[target.name] == target.read_bytes()


@pytest.mark.parametrize("name", ["../../etc/HICO_test2015_00000001.jpg", "/etc/HICO_test2015_00000001.jpg"])
def test_relative_escape_and_absolute_image_names_are_refused(sample_copy, tmp_path, capsys, name):
    path = sample_copy / "hico_20160224_det" / "annotations" / "test_hico.json"
    records = read_annotations(path, "hico")
    records[0].file_name = name
    write_annotations(path, records, "hico")
    err = _build_cli(sample_copy, tmp_path / "out", "hico", capsys)
    assert "test_hico.json" in err and name in err
