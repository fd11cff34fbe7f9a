"""The HICO-DET-SG / V-COCO-SG baselines (hoi_sg_dataset.baseline) on the synthetic sample.

The sample's verbs are a function of box geometry only, so a pair classifier trained on the SG train split
should transfer to the held-out (object, verb) combinations of the SG test split, while the object prior,
which has never seen those combinations, cannot: a miniature of the SG paper's finding.

Trainings run in this process; the generic loop (``accelerate launch``, two processes, resume and checkpoints in
general) is tested once, on a toy task, in ``tests/hoi_bench/test_training.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hoi_sg_dataset.baseline import candidate_pairs, main
from hoi_sg_dataset.builder import row_to_record
from hoi_sg_dataset.predictions import prediction_set, read_predictions, reference_set
from tests.tracked_run import assert_tracked_run_reloads, tracked_run

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")

PAIR_STEPS = 40


def common(hub: Path, output_dir: Path, *extra: str) -> list[str]:
    return ["--data", str(hub), "--output-dir", str(output_dir), "--cache-dir", str(hub.parent / "cache"),
            "--cpu",
            *extra]


@pytest.fixture(scope="module")
def pair_run(hub) -> Path:
    """The pair classifier trained on hico_split1, checkpoints at half-way and at the end."""
    out = hub.parent / "pair"
    main(common(hub, out, "--config", "hico_split1", "--max-steps", str(PAIR_STEPS), "--learning-rate", "3e-3",
                "--checkpointing-steps", str(PAIR_STEPS // 2), "--log-every", "5"))
    return out


def references(hub: Path, config: str, dataset: str):
    import datasets

    rows = datasets.load_dataset(str(hub), config, split="test", cache_dir=str(hub.parent / "cache"))
    return [row_to_record(row, dataset) for row in rows.remove_columns(["image"])]


@pytest.mark.slow
def test_pair_classifier_writes_a_valid_qpic_file(pair_run, hub):
    results = json.loads((pair_run / "results.json").read_text())
    path = Path(results["splits"]["test"]["predictions"])
    gt = references(hub, "hico_split1", "hico")
    predictions = prediction_set(gt, read_predictions(path, "hico"), source=str(path))  # validates entries
    assert predictions.num_images == len(gt) == results["splits"]["test"]["examples"]
    assert sorted(p.name for p in (pair_run / "checkpoints").iterdir()) == ["step_0000020", "step_0000040"]


@pytest.mark.slow
def test_pair_classifier_beats_object_prior_on_the_sg_test_split(pair_run, hub, tmp_path, record_property):
    prior = main(common(hub, tmp_path / "prior", "--config", "hico_split1", "--model", "object-prior"))
    pair = json.loads((pair_run / "results.json").read_text())
    prior_map = prior["splits"]["test"]["metrics"]["mAP"]
    pair_map = pair["splits"]["test"]["metrics"]["mAP"]
    record_property("object_prior_mAP", prior_map)
    record_property("pair_classifier_mAP", pair_map)
    print(f"hico_split1 SG test mAP: object prior {prior_map:.4f}, pair classifier ({PAIR_STEPS} steps) "
          f"{pair_map:.4f}")
    assert prior["steps"] == 0
    # held-out combinations never occur in training, so the prior scores their verbs 0
    assert prior_map < 0.05, prior_map
    assert pair_map > prior_map + 0.3, (prior_map, pair_map)


@pytest.mark.slow
def test_resume_continues_from_the_saved_step(pair_run, hub, tmp_path):
    out = tmp_path / "resumed"
    shutil.copytree(pair_run, out)
    results = main(common(hub, out, "--config", "hico_split1", "--max-steps", str(PAIR_STEPS // 2 + 1),
                          "--learning-rate", "3e-3", "--log-every", "5",
                          "--resume", str(out / "checkpoints" / "step_0000020")))
    history = json.loads((out / "log.json").read_text())["history"]
    original = json.loads((pair_run / "log.json").read_text())["history"]
    assert results["steps"] == PAIR_STEPS // 2 + 1
    assert history[:-1] == [entry for entry in original if entry["step"] <= PAIR_STEPS // 2]
    assert history[-1]["step"] == PAIR_STEPS // 2 + 1


@pytest.mark.slow
def test_loss_decreases_on_a_fixed_batch(hub, tmp_path):
    main(common(hub, tmp_path / "overfit", "--config", "hico_split1", "--overfit-batches", "1",
                "--max-steps", "8",
                "--batch-size", "4", "--learning-rate", "3e-3", "--log-every", "1", "--eval-splits"))
    losses = [e["loss"] for e in json.loads((tmp_path / "overfit" / "log.json").read_text())["history"]]
    assert len(losses) == 8 and losses[-1] < 0.5 * losses[0], losses


@pytest.mark.slow
def test_vcoco_object_prior_writes_no_object_pairs_the_reader_accepts(hub, tmp_path):
    results = main(common(hub, tmp_path / "vcoco-prior", "--config", "vcoco_split1",
                          "--model", "object-prior"))
    path = Path(results["splits"]["test"]["predictions"])
    entries = read_predictions(path, "vcoco")
    assert any((entry.hois[:, 1] == -1).any() for entry in entries if len(entry.hois))
    gt = references(hub, "vcoco_split1", "vcoco")
    assert prediction_set(gt, entries).num_images == len(gt)
    assert reference_set(gt).num_images == len(gt)
    assert results["splits"]["test"]["metrics"]["mAP_all"] < 0.05


def test_candidate_pairs_pair_every_human_with_every_other_box():
    pairs = candidate_pairs([0, 3, 0], person=0, with_no_object=True)
    assert pairs == [(0, 1), (0, 2), (0, -1), (2, 0), (2, 1), (2, -1)]


@pytest.mark.slow
def test_object_prior_runs_on_an_annotation_only_folder_and_the_pair_model_says_why_not(hub, tmp_path):
    from hoi_bench.errors import HoiBenchError
    from hoi_sg_dataset.hub_folder import build_hoi_sg

    bare = build_hoi_sg(hub.parent / "sample", tmp_path / "bare", ["hico_split1"], with_images=False)
    results = main(common(bare, tmp_path / "prior", "--config", "hico_split1", "--model", "object-prior"))
    assert results["splits"]["test"]["metrics"]["mAP"] < 0.05
    with pytest.raises(HoiBenchError, match="--model pair needs images"):
        main(common(bare, tmp_path / "pair", "--config", "hico_split1", "--max-steps", "1"))


@pytest.mark.slow
def test_tracked_run_evaluates_and_its_model_reloads_to_identical_predictions(hub, tmp_path):
    argv = ["--data", str(hub), "--cache-dir", str(hub.parent / "cache"), "--cpu", "--config", "hico_split1",
            "--metric-for-best", "mAP", "--allow-test-selection"]
    tracked_run("hoi_sg", argv, tmp_path / "run")
    assert_tracked_run_reloads("hoi_sg", argv, tmp_path / "run")


@pytest.mark.slow
def test_push_to_hub_while_offline_is_a_one_line_error_with_exit_status_2(hub, tmp_path, capsys, monkeypatch):
    from huggingface_hub import constants

    from hoi_bench.cli import main as cli

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert cli(["train", "hoi_sg", "--data", str(hub), "--output-dir", str(tmp_path / "run"),
                "--push-to-hub", "org/name"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        "hoi-bench: error: --push-to-hub org/name: the Hub is switched off here (HF_HUB_OFFLINE=1)")
