"""Hugging Face conventions at the training and CLI edges: transformers-style flags (dashed and underscore forms,
a JSON/YAML flags file, a baseline's own dataclass of flags), a held-out split for model selection instead of the
test split, and metric commands named as their ``evaluate`` modules (old names kept as aliases)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hoi_bench.errors import HoiBenchError
from hoi_bench.flags import FlagParser, add_dataclass_flags, flags_from_args
from hoi_bench.training import HELD_OUT, carve_validation, run_training
from tests.hoi_bench.test_training import ToyBaseline, config

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")


def parse_hoi_sg(argv: list[str]):
    from hoi_sg_dataset.baseline import parse_args

    return parse_args(argv)


def test_training_and_baseline_flags_take_dashed_and_underscore_forms():
    dashed = parse_hoi_sg(["--data", "hub", "--output-dir", "runs/a", "--max-steps", "5", "--cache-dir", "c",
                           "--eval-splits", "test", "--learning-rate", "0.01", "--cpu"])
    underscored = parse_hoi_sg(["--data", "hub", "--output_dir", "runs/a", "--max_steps", "5", "--cache_dir", "c",
                                "--eval_splits", "test", "--learning_rate=0.01", "--cpu"])
    keep = ("output_dir", "max_steps", "cache_dir", "eval_splits", "learning_rate", "cpu")
    assert {k: getattr(dashed, k) for k in keep} == {k: getattr(underscored, k) for k in keep} == {
        "output_dir": Path("runs/a"), "max_steps": 5, "cache_dir": Path("c"), "eval_splits": ["test"],
        "learning_rate": 0.01, "cpu": True}


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_lone_flags_file_holds_every_flag(tmp_path, suffix):
    values = {"data": "hub", "output_dir": "runs/b", "max-steps": 7, "cpu": True, "resume": None,
              "eval_splits": ["test", "train"], "model": "object-prior"}
    path = tmp_path / f"run{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(values))
    else:
        import yaml

        path.write_text(yaml.safe_dump(values))
    args = parse_hoi_sg([str(path)])
    assert (args.data, args.output_dir, args.max_steps, args.cpu, args.resume, args.eval_splits, args.model) == (
        "hub", Path("runs/b"), 7, True, None, ["test", "train"], "object-prior")
    assert args.launch_command.endswith(f"hoi_sg_dataset.baseline {path}")


def test_a_flags_file_that_is_not_a_mapping_is_one_line(tmp_path):
    path = tmp_path / "run.json"
    path.write_text("[1, 2]")
    with pytest.raises(HoiBenchError, match="expected a mapping of flag names to values, found list"):
        parse_hoi_sg([str(path)])


@dataclass
class DetectorArguments:
    _argument_group_name = "detector"
    num_queries: int = field(default=100, metadata={"help": "object queries per image"})
    backbone_lr: float | None = field(default=None, metadata={"help": "learning rate of the backbone"})


def test_a_baseline_adds_its_own_dataclass_of_flags():
    parser = FlagParser(prog="baseline")
    add_dataclass_flags(parser, DetectorArguments, num_queries=64)
    assert flags_from_args(DetectorArguments, parser.parse_args([])) == DetectorArguments(64, None)
    args = parser.parse_args(["--num_queries", "8", "--backbone-lr", "1e-5"])
    assert flags_from_args(DetectorArguments, args) == DetectorArguments(8, 1e-5)
    assert "detector" in parser.format_help()


class HeldOutToy(ToyBaseline):
    """The toy task scoring rows carved from its training split like any other split."""

    def held_out(self, split, rows):
        return rows


def test_validation_size_carves_a_seeded_disjoint_split_by_row():
    baseline = ToyBaseline(train_rows=20)
    train, held = carve_validation(baseline.train, 0.25, seed=3)
    again_train, again_held = carve_validation(baseline.train, 0.25, seed=3)
    assert len(held) == 5 and len(train) == 15
    assert held["id"] == again_held["id"] and train["id"] == again_train["id"]
    assert not set(held["id"]) & set(train["id"])
    assert carve_validation(baseline.train, 0.25, seed=4)[1]["id"] != held["id"]
    assert len(carve_validation(baseline.train, 6, seed=3)[1]) == 6
    with pytest.raises(HoiBenchError, match="--validation-size 20: 20 of the 20 training rows"):
        carve_validation(baseline.train, 20, seed=3)


@pytest.mark.slow
def test_metric_for_best_selects_on_the_held_out_split(tmp_path):
    cfg = config(tmp_path, max_steps=4, eval_steps=2, metric_for_best="accuracy", validation_size=0.25)
    results = run_training(HeldOutToy(), cfg)
    assert results["splits"][HELD_OUT]["examples"] == 6  # a quarter of the 24 training rows
    assert results["splits"]["test"]["examples"] == 10
    assert results["best"]["metric"] == f"{HELD_OUT}/accuracy"


@pytest.mark.slow
def test_selecting_on_the_test_split_needs_an_explicit_flag(tmp_path):
    cfg = config(tmp_path, max_steps=2, metric_for_best="accuracy")
    with pytest.raises(HoiBenchError, match="selects on test, which the run reports.*--allow-test-selection"):
        run_training(ToyBaseline(), cfg)
    assert not (tmp_path / "run").exists()
    cfg = config(tmp_path, max_steps=2, metric_for_best="test/accuracy", allow_test_selection=True)
    assert run_training(ToyBaseline(), cfg)["best"]["metric"] == "test/accuracy"


def test_a_baseline_that_cannot_score_carved_rows_says_so(tmp_path):
    with pytest.raises(HoiBenchError, match="--validation-size: the toy baseline cannot score rows carved"):
        run_training(ToyBaseline(), config(tmp_path, max_steps=2, validation_size=0.25))


@pytest.mark.parametrize("value", [0.0, 1.5, float("nan"), -3])
def test_a_validation_size_that_is_neither_fraction_nor_count_is_refused(tmp_path, value):
    with pytest.raises(HoiBenchError, match="--validation-size must be a fraction in \\(0, 1\\) or a whole count"):
        config(tmp_path, validation_size=value)


@pytest.mark.parametrize("name, alias", [("bongard_accuracy", "bongard"), ("hhi_map", "hhi"), ("p_auc", "haystack"),
                                         ("p_auc", "pdd"), ("p_auc", "pdo")])
def test_metric_commands_are_named_as_their_evaluate_modules(name, alias, capsys):
    from hoi_bench import cli, metric_names

    assert name in metric_names()
    helps = []
    for word in (name, alias):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["evaluate", word, "--help"])
        assert exit_info.value.code == 0
        helps.append(capsys.readouterr().out.split("\n\n", 1)[1])  # past the usage lines naming the word
    assert helps[0] == helps[1]


def test_hoi_bench_train_takes_underscore_flags_and_a_flags_file(tmp_path):
    from hoi_bench import cli
    from hoi_bench.plugins import load_registry

    def parse(argv):
        return cli.build_parser(load_registry(), argv).parse_args(argv)

    args = parse(["train", "hoi_sg", "--data", "hub", "--output_dir", "runs/c", "--max_steps", "3", "--cache_dir", "c"])
    assert (args.output_dir, args.max_steps, args.cache_dir) == (Path("runs/c"), 3, Path("c"))
    flags = tmp_path / "run.yaml"
    flags.write_text("data: hub\noutput_dir: runs/d\nmax_steps: 4\nmodel: object-prior\n")
    args = parse(["train", "hoi_sg", str(flags)])
    assert (args.data, args.output_dir, args.max_steps, args.model) == ("hub", Path("runs/d"), 4, "object-prior")


def test_a_malformed_yaml_flags_file_is_one_line(tmp_path, capsys):
    from hoi_bench import cli

    flags = tmp_path / "run.yaml"
    flags.write_text("data: [unclosed\n")
    before = flags.read_bytes()
    assert cli.main(["train", "hoi_sg", str(flags)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"hoi-bench: error: {flags}: cannot read the flags file")
    assert flags.read_bytes() == before
