"""The bongard_hoi commands end to end: stats, episodes (files and Hub folder), show, and the demo steps."""

from __future__ import annotations

import json

import pytest
from datasets import load_dataset
from PIL import Image

from bongard_hoi.formats import read_episode_file
from bongard_hoi.samples import ANNOTATION_DIR, write_sample
from bongard_hoi.sheet import draw_episode, load_episode_row
from hoi_bench.cli import main
from hoi_bench.plugins import DemoContext, load_registry
from hoi_sg_dataset.formats import BoxAnnotation, HoiAnnotation, ImageRecord, write_annotations


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return write_sample(tmp_path_factory.mktemp("bongard-cli") / "native")


def test_stats_counts_episodes_concepts_and_recurring_images(sample, capsys):
    assert main(["stats", "bongard_hoi", str(sample / ANNOTATION_DIR / "bongard_hoi_train.json")]) == 0
    out = capsys.readouterr().out
    episodes = read_episode_file(sample / ANNOTATION_DIR / "bongard_hoi_train.json")
    unique = len({i.im_path for e in episodes for i in e.images()})
    assert f"train  {len(episodes)}" in out and f"{len(episodes) * 14}" in out and f" {unique} " in out


def test_show_draws_a_sheet_from_native_files_and_from_a_built_folder(sample, tmp_path):
    png = tmp_path / "sheet.png"
    assert main(["show", "bongard_hoi", "--data", str(sample), "--split", "val_unseen_obj_seen_act",
                 "--episode", "1", "--out", str(png)]) == 0
    width, height = Image.open(png).size
    assert width > 900 and height > 300
    row = load_episode_row(sample, "val_unseen_obj_seen_act", 1)
    assert row["positive_query"]["image"]["bytes"][:2] == b"\xff\xd8"
    assert main(["show", "bongard_hoi", "--data", str(sample), "--split", "train", "--episode", "99",
                 "--out", str(png)]) == 2


def test_sheet_of_episodes_without_pixels_draws_grey_tiles(sample):
    row = load_episode_row(sample / ANNOTATION_DIR, "train", 0, images=sample / "no-images-here")
    assert row["positive_shots"][0]["image"] is None
    assert draw_episode(row).size == draw_episode(load_episode_row(sample, "train", 0)).size


def _hico_file(path):
    """24 images: 8 ride horse (verb 77), 8 feed horse (27), 8 with both on one pair (never a negative)."""
    records = []
    for number in range(1, 25):
        verbs = [77] if number <= 8 else [27] if number <= 16 else [77, 27]
        boxes = [BoxAnnotation([10, 10, 50, 120], 1), BoxAnnotation([30, 60, 90, 110], 19)]
        hois = [HoiAnnotation(0, 1, verb) for verb in verbs]
        records.append(ImageRecord(f"HICO_test2015_{number:08d}.jpg", boxes, hois))
    write_annotations(path, records, "hico")
    return path


def test_episodes_command_writes_official_files(tmp_path, capsys):
    annotations = _hico_file(tmp_path / "test_hico.json")
    assert main(["episodes", "--annotations", str(annotations), "--num-episodes", "3", "--max-overlap", "14",
                 "--out", str(tmp_path / "episodes")]) == 0
    written = json.loads((tmp_path / "episodes" / "bongard_hoi_test_seen_obj_seen_act.json").read_text())
    assert len(written) == 3
    assert written[0][0][0]["im_path"].startswith("./hico_20160224_det/images/test2015/HICO_test2015_")
    assert "test_seen_obj_seen_act" in capsys.readouterr().out
    assert main(["episodes", "--annotations", str(annotations), "--out", str(tmp_path / "x"),
                 "--hub", str(tmp_path / "hub")]) == 2


def test_episodes_command_builds_a_hub_folder_when_images_exist(tmp_path):
    annotations = _hico_file(tmp_path / "test_hico.json")
    folder = tmp_path / "images" / "hico_20160224_det/images/test2015"
    folder.mkdir(parents=True)
    for number in range(1, 25):
        Image.new("RGB", (100, 130), (number * 10, 0, 0)).save(folder / f"HICO_test2015_{number:08d}.jpg")
    assert main(["episodes", "--annotations", str(annotations), "--num-episodes", "2", "--max-overlap", "14",
                 "--out", str(tmp_path / "episodes"), "--images", str(tmp_path / "images"),
                 "--hub", str(tmp_path / "hub")]) == 0
    rows = load_dataset(str(tmp_path / "hub"), "episodes", split="test_seen_obj_seen_act",
                        cache_dir=str(tmp_path / "cache"))
    assert len(rows) == 2 and rows[0]["positive_query"]["image"].size[0] <= 100


@pytest.mark.slow
def test_demo_steps_build_draw_and_score(tmp_path):
    steps = sorted((s for s in load_registry().demo_steps if s.name.startswith("bongard_hoi") and s.order < 50),
                   key=lambda s: s.order)  # the training step (order 52) is covered by test_baseline.py
    assert [s.order for s in steps] == [12, 32]
    said = []
    context = DemoContext(out_dir=tmp_path, say=said.append)
    for step in steps:
        step.run(context)
    assert Image.open(context.artifacts["bongard_hoi episode sheet"]).format == "PNG"
    metrics = {(r.split, r.metric): r.value for r in context.rows}
    assert {s for s, _ in metrics} == {"test_seen_obj_seen_act", "test_seen_obj_unseen_act",
                                          "test_unseen_obj_seen_act", "test_unseen_obj_unseen_act", "test mean"}
    assert all(0.0 <= v <= 1.0 for v in metrics.values())


@pytest.mark.slow
def test_episodes_command_reads_a_hoi_sg_folder(tmp_path):
    from hoi_sg_dataset.hub_folder import build_hoi_sg
    from hoi_sg_dataset.samples import write_sample as write_sg_sample

    layout = write_sg_sample(tmp_path / "sg")
    folder = build_hoi_sg(layout.root, tmp_path / "sg_hub", ["hico_split3"], with_images=False)
    assert main(["episodes", "--hoi-sg", str(folder), "--config", "hico_split3", "--role", "train", "--shots", "3",
                 "--num-episodes", "4", "--out", str(tmp_path / "episodes")]) == 0
    episodes = json.loads((tmp_path / "episodes" / "bongard_hoi_train.json").read_text())
    assert len(episodes) == 4 and all(len(positives) == len(negatives) == 4 for positives, negatives, _ in episodes)
    assert main(["episodes", "--hoi-sg", str(folder), "--out", str(tmp_path / "x")]) == 2
