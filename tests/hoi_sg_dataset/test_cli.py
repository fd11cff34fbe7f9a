"""`hoi-bench build|stats hoi_sg` and `hoi-bench splits` as a user runs them."""

from __future__ import annotations

import json
import logging
import shutil

import datasets
import pytest

from hoi_bench.cli import main
from hoi_sg_dataset.builder import CONFIG_NAMES, buildable_configs
from hoi_sg_dataset.formats import read_annotations
from hoi_sg_dataset.splits import official_split_paths


@pytest.mark.anchors
def test_stats_json_on_an_official_test_file(anchors_dir, capsys):
    assert (
        main(
            ["stats", "hoi_sg", "--split-file", str(anchors_dir / "hoi_sg" / "test_hico_sg2.json"), "--json"]
        )
        == 0
    )
    stats = json.loads(capsys.readouterr().out)
    assert (stats["images"], stats["hoi_triplets"], stats["combinations"]) == (7656, 14811, 60)
    assert stats["images_per_origin"] == {"train2015": 5924, "test2015": 1732}


@pytest.mark.anchors
def test_stats_table_lists_combinations_by_name(anchors_dir, capsys):
    path = anchors_dir / "hoi_sg" / "test_vcoco_sg1.json"
    assert main(["stats", "hoi_sg", "--split-file", str(path), "--combinations"]) == 0
    out = capsys.readouterr().out
    assert (
        "images                                 2850" in out
        and "combinations via the last-box quirk  3" in out
    )
    assert "ride_instr" in out and "images from val2014" in out


def test_stats_of_a_broken_file_is_a_clean_error(tmp_path, capsys):
    path = tmp_path / "test_hico_sg1.json"
    path.write_text("[{")
    assert main(["stats", "hoi_sg", "--split-file", str(path)]) == 2
    assert "hoi-bench: error:" in capsys.readouterr().err


def test_splits_with_official_seeds_then_build_uses_them(sample_copy, tmp_path, capsys, caplog):
    root = sample_copy / "hico_20160224_det"
    assert (
        main(
            [
                "splits",
                "--dataset",
                "hico",
                "--data-dir",
                str(sample_copy),
                "--official-seeds",
                "--out",
                str(root),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.count("pass") == 3 and "sg1 held out:" in out
    for name in ("sg1", "sg2", "sg3"):
        assert all(p.is_file() for p in official_split_paths(root, "hico", name))
    with caplog.at_level(logging.INFO, logger="hoi_sg_dataset.builder"):
        assert (
            main(
                [
                    "build",
                    "hoi_sg",
                    "--data-dir",
                    str(sample_copy),
                    "--config",
                    "hico_split2",
                    "--no-images",
                    "--out",
                    str(tmp_path / "hub"),
                ]
            )
            == 0
        )
    assert "using the official split files" in caplog.text
    test = datasets.load_dataset(
        str(tmp_path / "hub"), "hico_split2", split="test", cache_dir=str(tmp_path / "c")
    )
    published = read_annotations(official_split_paths(root, "hico", "sg2")[1])
    assert test["file_name"] == [r.file_name for r in published]


def test_splits_seed_search_writes_flat_files(sample_root, tmp_path, capsys):
    base = sample_root / "v-coco" / "annotations"
    assert (
        main(
            [
                "splits",
                "--dataset",
                "vcoco",
                "--trainval",
                str(base / "trainval_vcoco.json"),
                "--test",
                str(base / "test_vcoco.json"),
                "--count",
                "2",
                "--flat",
                "--no-official-quirks",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    assert "seed search from 0:" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "test_vcoco_sg1.json",
        "test_vcoco_sg2.json",
        "trainval_vcoco_sg1.json",
        "trainval_vcoco_sg2.json",
    ]
    assert all(
        r.hoi_annotation for r in read_annotations(tmp_path / "test_vcoco_sg1.json")
    )  # no quirk: no empties


def test_splits_without_inputs_is_a_clean_error(capsys):
    assert main(["splits", "--dataset", "hico"]) == 2
    assert "--trainval" in capsys.readouterr().err


def test_build_unknown_config_is_a_clean_error(sample_root, tmp_path, capsys):
    assert (
        main(
            [
                "build",
                "hoi_sg",
                "--data-dir",
                str(sample_root),
                "--config",
                "hico_split9",
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    assert "unknown hoi_sg config 'hico_split9'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


@pytest.mark.slow  # a session build of every config of the sample
def test_build_defaults_to_every_config_the_data_allows(hoi_sg_annotation_only_hub, sample_copy):
    folder, _ = hoi_sg_annotation_only_hub  # `build hoi_sg --no-images` without --config, images removed
    assert sorted(datasets.get_dataset_config_names(str(folder))) == sorted(CONFIG_NAMES)
    shutil.rmtree(sample_copy / "v-coco")  # the default follows the data: HICO-DET's folder alone, its 4 configs
    hico_only = ["hico", "hico_split1", "hico_split2", "hico_split3"]
    assert sorted(buildable_configs(sample_copy / "hico_20160224_det")) == hico_only
    assert sorted(buildable_configs(sample_copy)) == hico_only


@pytest.mark.slow  # a session build of every config of the sample
def test_demo_step_builds_loads_and_reports_the_sample(hoi_sg_demo):
    context, said, _ = hoi_sg_demo  # the build step's rows come first; the scoring step's follow
    rows = {(r.benchmark, r.split, r.metric): r.value for r in context.rows}
    assert rows[("hoi_sg/hico_split1", "test", "images")] == 33
    assert rows[("hoi_sg/vcoco_split1", "train", "images")] == 198
    assert rows[("hoi_sg/hico_split1", "test", "held-out combinations in test")] == 5
    assert sorted(datasets.get_dataset_config_names(str(context.artifacts["hoi_sg Hub folder"]))) == sorted(
        [
            "hico",
            "hico_split1",
            "hico_split2",
            "hico_split3",
            "vcoco",
            "vcoco_split1",
            "vcoco_split2",
            "vcoco_split3",
        ]
    )
    assert any("load_dataset" in line for line in said)
