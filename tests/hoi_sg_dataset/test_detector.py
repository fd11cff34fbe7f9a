"""``--model detr`` of hoi_sg_dataset.baseline on the synthetic sample: runs, files, reloads, bad inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from hoi_bench.errors import HoiBenchError
from hoi_sg_dataset.baseline import main, make_baseline, parse_args
from hoi_sg_dataset.detector import correct_mat, detector_prediction_entries
from hoi_sg_dataset.predictions import read_predictions
from hoi_sg_dataset.vocabulary import coco_objects, hico_verbs, vcoco_verbs

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")

TINY = ["--model", "detr", "--backbone", "tiny-random", "--num-queries", "8", "--eval-batch-size", "32", "--cpu"]


def argv(hub: Path, out: Path, config: str, *extra: str) -> list[str]:
    return ["--data", str(hub), "--config", config, "--output-dir", str(out),
            "--cache-dir", str(hub.parent / "cache"), *TINY, *extra]


@pytest.mark.slow
@pytest.mark.parametrize("config", ["hico_split1", "vcoco_split1"])
def test_a_short_run_writes_a_readable_prediction_file_scores_it_and_saves_a_loadable_model(hub, tmp_path, config):
    from hoi_bench.detection import HoiDetector

    results = main(argv(hub, tmp_path / "run", config, "--max-steps", "2", "--log-every", "1"))
    dataset = "hico" if config.startswith("hico") else "vcoco"
    path = Path(results["splits"]["test"]["predictions"])
    entries = read_predictions(path, dataset)
    assert entries and all(len(e.hois) <= 100 for e in entries)
    metrics = results["splits"]["test"]["metrics"]
    assert ("mAP" if dataset == "hico" else "mAP_all") in metrics
    log = json.loads((tmp_path / "run" / "log.json").read_text())
    assert {"loss_obj_ce", "loss_verb_ce", "loss_sub_giou_0", "obj_class_error"} <= set(log["history"][-1])
    assert log["config"]["max_grad_norm"] == 0.1 and log["config"]["lr_scheduler_type"] == "step"
    loaded = HoiDetector.from_pretrained(tmp_path / "run" / "model")
    assert loaded.num_obj_classes == (80 if dataset == "hico" else 81)
    assert loaded.num_verb_classes == (117 if dataset == "hico" else 29)


@pytest.mark.slow
def test_vcoco_predictions_go_on_to_the_official_detection_list_and_role_ap(hub, tmp_path):
    import datasets

    from hoi_sg_dataset.builder import row_to_record
    from tests.space_examples import write_official_vcoco_files

    rows = datasets.load_dataset(str(hub), "vcoco_split1", split="test", cache_dir=str(hub.parent / "cache"))
    records = [row_to_record(row, "vcoco") for row in rows.remove_columns(["image"])]
    # the sample numbers train2014 and val2014 images from 1 each: keep the ids no two images share
    ids = [int(r.file_name.rsplit("_", 1)[1].split(".")[0]) for r in records]
    official = write_official_vcoco_files([r for r, i in zip(records, ids) if ids.count(i) == 1], tmp_path)
    results = main(argv(hub, tmp_path / "run", "vcoco_split1", "--max-steps", "1",
                        "--vcoco-official", *map(str, official)))
    role_ap = results["splits"]["test"]["metrics"]["role_ap"]
    assert {"mean_role_ap_scenario_1", "mean_role_ap_scenario_2", "mean_agent_ap"} <= set(role_ap)
    detections = json.loads((tmp_path / "run" / "predictions" / "test.vcoco_detections.json").read_text())
    assert detections and {"image_id", "person_box"} <= set(detections[0])


@pytest.mark.slow
def test_backbone_gets_its_own_learning_rate_and_the_step_schedule_drops_it(hub, tmp_path):
    args = parse_args(argv(hub, tmp_path / "run", "hico_split1", "--learning-rate", "1e-3",
                           "--lr-backbone", "1e-5"))
    baseline = make_baseline(args)
    model = baseline.build_model()
    groups = baseline.parameter_groups(model, 1e-3)
    names = {id(p): n for n, p in model.named_parameters()}
    assert [g["lr"] for g in groups] == [1e-3, 1e-5]
    assert all("backbone" in names[id(p)] for p in groups[1]["params"]) and groups[1]["params"]
    assert all("backbone" not in names[id(p)] for p in groups[0]["params"])

    from hoi_bench.training import TrainingConfig, _scheduler

    optimizer = torch.optim.AdamW(groups)
    config = TrainingConfig(output_dir=tmp_path, max_steps=9, lr_scheduler_type="step", lr_drop_steps=3)
    scheduler = _scheduler(config, optimizer, 1, None)
    seen = []
    for _ in range(7):
        seen.append([round(g["lr"], 12) for g in optimizer.param_groups])
        optimizer.step()
        scheduler.step()
    assert seen == [[1e-3, 1e-5]] * 3 + [[1e-4, 1e-6]] * 3 + [[1e-5, 1e-7]]


@pytest.mark.slow
def test_augmentation_depends_on_seed_epoch_and_row_only(hub, tmp_path):
    baseline = make_baseline(parse_args(argv(hub, tmp_path / "run", "hico_split1")))
    rows = baseline.split("train").select(range(3))[:]
    baseline.set_epoch(4)
    first = baseline.train_transform(rows)
    again = baseline.train_transform(rows)
    baseline.set_epoch(5)
    later = baseline.train_transform(rows)
    assert all(np.array_equal(a, b) for a, b in zip(first["pixels"], again["pixels"]))
    assert any(a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(first["pixels"], later["pixels"]))
    for targets in first["targets"]:
        assert targets["sub_boxes"].shape[1] == 4 and (targets["sub_boxes"] >= 0).all()


def test_vcoco_triplets_with_the_no_object_class_get_object_id_minus_one():
    objects, verbs = coco_objects(), vcoco_verbs()
    # two queries: query 0's object is class 80 ("no object"), query 1's is COCO index 2 (id 3, car)
    record = {"file_name": "COCO_val2014_000000000001.jpg",
              "boxes": np.array([[0, 0, 10, 20], [5, 5, 15, 25], [1, 1, 2, 2], [3, 3, 9, 9]], dtype=np.float32),
              "labels": np.array([0, 0, 80, 2]),
              "subject_ids": np.array([0, 1]), "object_ids": np.array([2, 3]),
              "verbs": np.array([1, 0]), "scores": np.array([0.9, 0.4])}
    (entry,) = detector_prediction_entries([record], [record["file_name"]], objects, verbs, no_object=80)
    assert [b["category_id"] for b in entry["predictions"]] == [1, 1, 3]  # the class-80 box is left out
    assert [(h["subject_id"], h["object_id"], h["category_id"]) for h in entry["hoi_prediction"]] == [
        (0, -1, 1), (1, 2, 0)]
    assert entry["predictions"][2]["bbox"] == [3.0, 3.0, 9.0, 9.0]


def test_hico_mask_allows_exactly_the_600_hoi_classes_and_vcoco_adds_a_no_object_column(tmp_path):
    hico = correct_mat("hico", None)
    assert hico.shape == (117, 80) and hico.sum() == 600
    assert hico[hico_verbs().index(88), coco_objects().index(65)] == 1  # sit_on bed
    vcoco = correct_mat("vcoco", None)
    assert vcoco.shape == (29, 81) and vcoco.all()
    np.save(tmp_path / "corre_vcoco.npy", np.eye(29, 80))
    given = correct_mat("vcoco", tmp_path / "corre_vcoco.npy")
    assert given[:, :80].sum() == 29 and given[:, 80].all()
    np.save(tmp_path / "wrong.npy", np.ones((3, 3)))
    with pytest.raises(HoiBenchError, match="29 x 80"):
        correct_mat("vcoco", tmp_path / "wrong.npy")


@pytest.mark.slow
def test_a_folder_without_images_is_one_clear_error(sample_root, tmp_path):
    from hoi_sg_dataset.hub_folder import build_hoi_sg

    bare = build_hoi_sg(sample_root, tmp_path / "bare", ["hico_split1"], with_images=False)
    with pytest.raises(HoiBenchError, match="missing image.*--no-images"):
        main(argv(bare, tmp_path / "run", "hico_split1", "--max-steps", "1"))


def test_a_hub_folder_of_another_benchmark_is_one_clear_error(tmp_path):
    import datasets

    other = tmp_path / "other"
    for split in ("train", "test"):
        datasets.Dataset.from_dict({"image_id": [1], "caption": ["x"]}).to_parquet(
            str(other / "hico_split1" / f"{split}-00000-of-00001.parquet"))
    (other / "README.md").write_text("---\nconfigs:\n- config_name: hico_split1\n  data_files:\n"
                                     "  - split: train\n    path: hico_split1/train-*\n"
                                     "  - split: test\n    path: hico_split1/test-*\n---\n")
    with pytest.raises(HoiBenchError, match="missing image, file_name, boxes, box_labels, hois; is it a hoi_sg folder"):
        main(argv(other, tmp_path / "run", "hico_split1", "--max-steps", "1"))
    with pytest.raises(HoiBenchError, match="no split 'train' of config 'vcoco_split1'"):
        main(argv(other, tmp_path / "run", "vcoco_split1", "--max-steps", "1"))


@pytest.mark.slow
def test_init_from_a_checkpoint_that_is_not_a_detr_detector_is_one_clear_error(hub, tmp_path):
    (tmp_path / "notdetr").mkdir()
    (tmp_path / "notdetr" / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(HoiBenchError, match="--init-from .*(DETR|not a DETR)"):
        main(argv(hub, tmp_path / "run", "hico_split1", "--max-steps", "1", "--init-from",
                  str(tmp_path / "notdetr")))


@pytest.mark.slow
def test_init_from_a_detector_of_the_other_vocabulary_is_one_clear_error(hub, tmp_path):
    from hoi_bench.detection import HoiDetector, detr_config

    HoiDetector(detr_config("tiny-random", num_queries=8), num_obj_classes=80, num_verb_classes=117
                ).save_pretrained(tmp_path / "hico-model")
    with pytest.raises(HoiBenchError, match="80 object classes, vcoco_split1 needs 81"):
        main(argv(hub, tmp_path / "vcoco", "vcoco_split1", "--max-steps", "1", "--init-from",
                  str(tmp_path / "hico-model")))


@pytest.mark.slow
def test_two_cpu_processes_give_the_same_kind_of_output(hub, tmp_path):
    """Two real processes (gloo): ``accelerate launch --cpu`` starts one process whatever ``--num_processes``
    says (its CPU path is the single-process launcher), so the two are started by torchrun, as on a CPU cluster."""
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
               "-m", "hoi_sg_dataset.baseline", *argv(hub, tmp_path / "run", "hico_split1", "--max-steps", "2")]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["steps"] == 2 and "mAP" in results["splits"]["test"]["metrics"]
    assert read_predictions(Path(results["splits"]["test"]["predictions"]), "hico")
    assert "| processes | `2` |" in (tmp_path / "run" / "model" / "README.md").read_text()
