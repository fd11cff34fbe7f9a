"""The README runs as written: its blocks marked ``<!-- readme-test: run -->`` are executed top to bottom, text
unchanged, from a demo output folder (the hoi_sg demo steps the commands need, run by their own functions)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
RUNNABLE = re.compile(r"<!-- readme-test: run -->\n```(bash|python)\n(.*?)\n```", re.DOTALL)


def runnable_blocks() -> list[tuple[str, str]]:
    return RUNNABLE.findall(README.read_text(encoding="utf-8"))


def test_readme_starts_with_make_demo_and_make_test():
    text = README.read_text(encoding="utf-8")
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split("#")[0].strip() for line in first_block] == ["make demo", "make test"]


def test_readme_marks_its_demo_walkthrough_as_runnable():
    blocks = runnable_blocks()
    text = "\n".join(code for _, code in blocks)
    assert 'load_dataset("hoi_sg", "hico_split3")' in text
    assert "hoi-bench install-metrics" in text and 'evaluate.load("p_auc")' in text
    assert "hoi-bench report" in text and "hoi-bench episodes" in text
    assert text.count("```") == 0, "a marked block swallowed the next one"


@pytest.fixture
def demo_output(hoi_sg_demo, tmp_path) -> Path:
    """What `make demo` writes for the README's commands: the hoi_sg Hub folder and the hoi_sg metric inputs (the
    session's demo output, copied because the README's commands write into it)."""
    _, _, out = hoi_sg_demo
    return Path(shutil.copytree(out, tmp_path / "demo-output", symlinks=True))


@pytest.mark.slow
def test_readme_commands_run_top_to_bottom_on_the_demo_output(demo_output, tmp_path):
    env = dict(os.environ)
    env.update(HF_HOME=str(tmp_path / "hf-home"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               HF_EVALUATE_OFFLINE="1", HF_UPDATE_DOWNLOAD_COUNTS="0",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    outputs, warnings = [], []
    for language, code in runnable_blocks():
        argv = ["bash", "-e", "-o", "pipefail", "-c", code] if language == "bash" else [sys.executable, "-c", code]
        done = subprocess.run(argv, cwd=demo_output, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"README block failed:\n{code}\n--- stderr ---\n{done.stderr[-3000:]}"
        outputs.append(done.stdout)
        warnings.append(done.stderr)
    printed = "\n".join(outputs)
    assert re.search(r"^\{'train': \d+, 'test': \d+\}$", printed, re.MULTILINE), printed[:300]
    assert "117 verbs, 600 HOI classes" in printed
    assert len(printed.splitlines()[0]) < 100 and "names=[" not in printed  # a summary, not the label lists
    assert re.search(r"^1\.0$", printed, re.MULTILINE), "p_auc example should print 1.0"
    assert "Using the latest cached version" not in "".join(warnings)
    qpic = json.loads((demo_output / "sg1_qpic.json").read_text())
    assert qpic["protocol"] == "qpic" and 0 < qpic["mAP"] <= 1
    assert "| mAP |" in (demo_output / "report.md").read_text()
    assert (demo_output / "report.png").read_bytes()[:4] == b"\x89PNG"
    episodes = json.loads((demo_output / "sg3_episodes" / "bongard_hoi_train.json").read_text())
    assert len(episodes) == 4
