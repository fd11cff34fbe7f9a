"""Dataset cards: each links its baseline with a launch command for a module that exists, and every card built
from the embedded samples is Hub-ready (parsed by huggingface_hub, under 32 KB, a licence section and licence
fields, marked synthetic)."""

from __future__ import annotations

import importlib
import re
import runpy
import sys
from importlib import resources
from pathlib import Path

import pytest

PACKAGES = ["hoi_sg_dataset", "haystack_dataset", "bongard_hoi", "sportshhi"]


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.filterwarnings("ignore:.*found in sys.modules:RuntimeWarning")  # imported above, run again below
def test_card_links_a_runnable_baseline(package, monkeypatch, capsys):
    card = resources.files(package).joinpath("card.md").read_text(encoding="utf-8")
    assert f"accelerate launch -m {package}.baseline" in card
    assert "{{citation}}" in card and "{{configs}}" in card
    assert hasattr(importlib.import_module(f"{package}.baseline"), "main")
    # what `accelerate launch -m` does in each process: run the module as __main__ (here with --help)
    monkeypatch.setattr(sys, "argv", [f"{package}.baseline", "--help"])
    with pytest.raises(SystemExit) as exited:
        runpy.run_module(f"{package}.baseline", run_name="__main__")
    assert exited.value.code == 0 and "--output-dir" in capsys.readouterr().out


def _build_haystack(work):
    from haystack_dataset.builder import build
    from haystack_dataset.samples import write_sample

    return build(write_sample(work / "native").root, work / "haystack", synthetic=True)


def _build_bongard_hoi(work):
    from bongard_hoi.builder import build_hub
    from bongard_hoi.samples import write_sample

    return build_hub(write_sample(work / "native"), work / "bongard_hoi", splits=("train", "test_seen_obj_seen_act"),
                     synthetic=True)


def _build_sportshhi(work):
    from sportshhi.builder import build_sportshhi_folder
    from sportshhi.samples import write_sample

    return build_sportshhi_folder(write_sample(work / "release").root, work / "sportshhi", synthetic=True)


SAMPLE_BUILDS = {"haystack_dataset": _build_haystack, "bongard_hoi": _build_bongard_hoi,
                 "sportshhi": _build_sportshhi}
LICENSE_HEADING = re.compile(r"^## (License|Sources and licenses|License and access)\b", re.MULTILINE)


@pytest.fixture(scope="module", params=[
    pytest.param(package, marks=pytest.mark.slow) if package == "hoi_sg_dataset" else package for package in PACKAGES])
def sample_card(request, tmp_path_factory) -> tuple[str, Path]:
    """Each package's Hub folder built from its synthetic sample (every config hoi_sg has: the YAML worst case;
    hoi_sg's is the session's demo build, shared with the demo and baseline tests)."""
    if request.param == "hoi_sg_dataset":
        _, _, demo = request.getfixturevalue("hoi_sg_demo")
        folder = demo / "hoi_sg"
    else:
        folder = SAMPLE_BUILDS[request.param](tmp_path_factory.mktemp(request.param))
    return request.param, Path(folder) / "README.md"


def test_every_sample_card_passes_the_hub_card_parser_and_stays_small(sample_card):
    from huggingface_hub import DatasetCard, RepoCard

    package, readme = sample_card
    size = readme.stat().st_size
    assert size < 32 * 1024, f"{package}: card is {size} bytes; the Hub refuses big YAML (413)"
    card = DatasetCard.load(readme)
    data = card.data.to_dict()
    assert RepoCard.load(readme).data.to_dict() == data
    assert data["license"] and data["pretty_name"] and data["configs"]
    if data["license"] == "other":
        assert data["license_name"] == data["license_name"].lower() and " " not in data["license_name"]
        assert data["license_link"].startswith("https://")
    assert LICENSE_HEADING.search(card.text), f"{package}: no license section"
    prose = " ".join(card.text.split())
    assert "**Synthetic data.**" in prose and "It contains no" in prose and "no number computed on it" in prose
    assert not re.search(r"\{\{[a-z_]+\}\}", card.text) and "<!-- source:" not in card.text  # all filled in


@pytest.mark.parametrize("package", PACKAGES)
def test_upstream_cards_never_say_synthetic_and_keep_their_provenance(package):
    spec = importlib.import_module(SPEC_MODULES[package]).card_spec()
    assert "Synthetic data" not in spec.template and "<!-- source:" not in spec.template
    assert re.search(r"from (a local copy|the official)", spec.template)
    synthetic = importlib.import_module(SPEC_MODULES[package]).card_spec(synthetic=True)
    assert "**Synthetic data.**" in synthetic.template
    assert not re.search(r"from (a local copy|the official)", synthetic.template)
    assert LICENSE_HEADING.search(spec.template)
    if spec.license == "other":
        assert {"license_name", "license_link"} <= set(spec.extra_metadata)


SPEC_MODULES = {"hoi_sg_dataset": "hoi_sg_dataset.hub_folder", "haystack_dataset": "haystack_dataset.builder",
                "bongard_hoi": "bongard_hoi.builder", "sportshhi": "sportshhi.builder"}
