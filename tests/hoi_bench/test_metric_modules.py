"""Every metric in ``metrics/`` loads from any directory: by bare name after ``hoi-bench install-metrics``
(offline, or with a Hub that answers 404, and without evaluate's cache-fallback warning), and always through
``hoi_bench.metric_path`` (fresh process, temporary cwd, own caches). Each folder is a complete evaluate Space
and ``push-metric`` uploads it, failing with one clear line when it cannot."""

from __future__ import annotations

import ast
import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import hoi_bench
from hoi_bench import metric_names, metric_path
from hoi_bench.cli import main
from hoi_bench.errors import ConfigError, PushError
from hoi_bench.metric_modules import install_metrics
from hoi_bench.spaces import (
    GRADIO_SDK_VERSION,
    SpaceError,
    front_matter,
    push_metric,
    space_problems,
    wheel_requirement,
)

LOAD_ALL = """
import json, sys, evaluate, hoi_bench
report = {}
for name in hoi_bench.metric_names():
    by_name = evaluate.load(name)
    by_path = evaluate.load(hoi_bench.metric_path(name))
    report[name] = {"by_name": by_name.name, "by_path": by_path.name,
                    "module": type(by_name).__module__, "features": str(by_name.features)}
json.dump(report, sys.stdout)
"""


def offline_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HF_HOME=str(tmp_path / "hf-home"),
        HF_MODULES_CACHE=str(tmp_path / "modules"),
        HF_EVALUATE_OFFLINE="1",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_UPDATE_DOWNLOAD_COUNTS="0",
    )
    return env


def test_every_metric_folder_is_listed():
    root = Path(metric_path(metric_names()[0])).parent
    folders = sorted(p.name for p in root.iterdir() if (p / f"{p.name}.py").is_file())
    assert metric_names() == folders
    assert {"hoi_map", "vcoco_map"} <= set(folders)
    for name in folders:
        assert (root / name / "README.md").is_file(), f"{name} has no metric card"
        assert (root / name / "requirements.txt").is_file(), f"{name} has no requirements.txt"


@pytest.mark.slow
def test_install_metrics_then_bare_names_load_offline_from_any_directory_without_the_fallback_warning(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = offline_env(tmp_path)
    installed = subprocess.run(
        [sys.executable, "-m", "hoi_bench.cli", "install-metrics"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    for name in metric_names():
        assert name in installed.stdout
    loaded = subprocess.run(
        [sys.executable, "-c", LOAD_ALL], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300
    )
    assert loaded.returncode == 0, loaded.stderr
    report = json.loads(loaded.stdout)
    assert sorted(report) == metric_names()
    for name, info in report.items():
        assert info["by_name"] == info["by_path"] == name
        assert "evaluate-metric--" + name in info["module"]
    assert "Using the latest cached version" not in loaded.stderr, loaded.stderr


def test_reinstall_replaces_earlier_copies(tmp_path):
    stale = tmp_path / "modules" / "evaluate_modules" / "metrics" / "evaluate-metric--hoi_map" / ("0" * 64)
    stale.mkdir(parents=True)
    (stale / "hoi_map.py").write_text("# an older hoi-bench's module")
    first = install_metrics(["hoi_map"], downloads_cache=tmp_path / "downloads", modules_cache=tmp_path / "modules")
    second = install_metrics(["hoi_map"], downloads_cache=tmp_path / "downloads", modules_cache=tmp_path / "modules")
    assert first == second
    assert not stale.parent.exists(), "a stale module copy would be evaluate's fallback"
    assert Path(second["hoi_map"]).read_bytes() == (Path(metric_path("hoi_map")) / "hoi_map.py").read_bytes()
    # the evaluate tag and main revisions, one file each, nothing else
    assert len(list((tmp_path / "downloads").iterdir())) == 2


def test_unknown_metric_name_lists_the_available_ones():
    with pytest.raises(ConfigError, match="unknown metric 'hoi_mAP'; available: .*hoi_map"):
        metric_path("hoi_mAP")


# One small documented input per metric (the Examples of each module's docstring) and its value.
SAMPLES = {
    "bongard_accuracy": (None, {"predictions": [0, 1, 1, 1], "references": [0, 1, 0, 1], "splits": ["train"] * 4,
                                "episodes": [0, 0, 1, 1]}, ["accuracy", "train"], 0.75),
    "hhi_map": (None, {"predictions": [{"keyframe": "v_a_c001,0003", "subject_boxes": [[0.1, 0.1, 0.3, 0.8]],
                                        "object_boxes": [[0.5, 0.1, 0.7, 0.8]], "labels": [2], "scores": [0.9]}],
                       "references": [{"keyframe": "v_a_c001,0003", "subject_boxes": [[0.1, 0.1, 0.3, 0.8]],
                                       "object_boxes": [[0.5, 0.1, 0.7, 0.8]], "labels": [2]}]}, ["mAP"], 1.0),
    "hoi_map": (None, {"predictions": [{"boxes": [[0, 0, 9, 9], [5, 5, 20, 20]], "box_labels": [1, 47],
                                        "hois": [[0, 1, 37]], "scores": [0.9]}],
                       "references": [{"boxes": [[0, 0, 9, 9], [5, 5, 20, 20]], "box_labels": [1, 47],
                                       "hois": [[0, 1, 37]]}]}, ["mAP"], 1.0),
    "p_auc": (None, {"predictions": [[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.6, 0.4], [0.1, 0.9]],
                     "references": [{"predicate": 0, "label": 1}] * 4 + [{"predicate": 0, "label": 0}]},
              ["p_auc"], 1.0),
    "pdd": (None, {"predictions": [[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.6, 0.4], [0.1, 0.9]],
                   "references": [{"predicate": 0, "label": 1}] * 4 + [{"predicate": 0, "label": 0}]}, ["pdd"], 0.25),
    "pdo": (None, {"predictions": [[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.6, 0.4], [0.1, 0.9]],
                   "references": [{"predicate": 0, "label": 1}] * 4 + [{"predicate": 0, "label": 0}]}, ["pdo"], 0.0),
    "sg_recall": (None, {"predictions": [{"image_id": "1", "pairs": [[0, 1], [1, 0]],
                                          "predicate_scores": [[0.1, 0.0, 0.2, 0.7], [0.5, 0.3, 0.1, 0.1]],
                                          "boxes": [], "labels": [], "object_scores": []}],
                         "references": [{"image_id": "1", "boxes": [[0, 0, 10, 10], [20, 0, 30, 10]],
                                         "labels": [0, 5], "relations": [[0, 1, 2]]}],
                         "num_predicates": 3, "ks": [1]}, ["mR@1"], 1 / 3),
    "vcoco_map": (None, {"predictions": [{"boxes": [[0, 0, 9, 9], [5, 5, 20, 20]], "box_labels": [1, 37],
                                          "hois": [[0, 1, 0], [0, -1, 1]], "scores": [0.9, 0.8]}],
                         "references": [{"boxes": [[0, 0, 9, 9], [5, 5, 20, 20]], "box_labels": [1, 37],
                                         "hois": [[0, 1, 0], [0, -1, 1]]}]}, ["mAP_all"], 1.0),
    "vcoco_role_map": (None, {"predictions": [{"person_boxes": [[0, 0, 9, 4]], "agent_scores": [[0.9] + [None] * 25],
                                               "role_boxes": [[[20, 20, 29, 29]] + [[None] * 4] * 24],
                                               "role_scores": [[0.9] + [None] * 24]}],
                              "references": [{"image_id": 1, "person_boxes": [[0, 0, 9, 9]],
                                              "actions": [[1] + [0] * 25],
                                              "role_boxes": [[[20, 20, 29, 29]] + [[-1] * 4] * 24]}]},
                       ["role_ap_scenario_1", "hold_obj"], 1.0),
}

LOAD_FOLDERS = """
import json, sys, evaluate
out = {}
for name, (config, kwargs, key, _) in json.loads(sys.argv[1]).items():
    metric = evaluate.load(sys.argv[2] + "/" + name, config)
    value = metric.compute(**kwargs)
    for part in key:
        value = value[part]
    out[name] = {"name": metric.name, "value": value}
json.dump(out, sys.stdout)
"""


def test_every_metric_has_a_sample():
    assert sorted(SAMPLES) == metric_names(), "add a sample for the new metric to SAMPLES"


@pytest.mark.slow
def test_each_metric_folder_loads_by_path_from_a_temporary_directory_and_computes(tmp_path):
    root = str(Path(metric_path(metric_names()[0])).parent)
    loaded = subprocess.run(
        [sys.executable, "-c", LOAD_FOLDERS, json.dumps(SAMPLES), root],
        cwd=tmp_path, env=offline_env(tmp_path), capture_output=True, text=True, timeout=300,
    )
    assert loaded.returncode == 0, loaded.stderr
    report = json.loads(loaded.stdout)
    for name, (_, _, _, expected) in SAMPLES.items():
        assert report[name]["name"] == name
        assert report[name]["value"] == pytest.approx(expected, abs=1e-6), name


@pytest.mark.parametrize("name", metric_names())
def test_each_metric_folder_is_a_complete_evaluate_space(name):
    folder = Path(metric_path(name))
    assert space_problems(folder) == []
    meta = front_matter(folder / "README.md")
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
    assert meta["sdk_version"] == GRADIO_SDK_VERSION
    assert meta["python_version"] == "3.11"  # the Python the project's CI (and the widget check) uses
    assert {"evaluate", "metric"} <= set(meta["tags"])
    assert meta["license"] == "apache-2.0" and meta["pinned"] is False
    assert isinstance(meta["description"], str) and meta["description"].strip()
    # app.py: the page of hoi_bench.space_app, only when the Space runs it as a script
    tree = ast.parse((folder / "app.py").read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom | ast.Import)
                for alias in node.names}
    assert imported == {"launch"} and "gradio" not in imported
    guard = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
    assert len(guard) == 1 and ast.unparse(guard[0].body[0]).startswith("launch(__file__, ['evaluate', ")
    # the Space installs hoi-bench (push-metric points the line at the wheel it uploads)
    requirements = (folder / "requirements.txt").read_text().splitlines()
    assert [line for line in requirements if not line.startswith("#")] == ["hoi-bench"]
    assert any((folder / "examples").iterdir())


def test_the_space_extra_installs_the_gradio_of_the_cards():
    import importlib.metadata

    setup = (Path(__file__).resolve().parents[2] / "setup.cfg").read_text()
    extra = setup.split("space =", 1)[1].split("\ntest =", 1)[0]
    major = GRADIO_SDK_VERSION.split(".")[0]
    assert f"gradio>={major},<{int(major) + 1}" in extra.split()
    installed = importlib.metadata.version("gradio")
    assert installed.split(".")[0] == major, f"gradio {installed} installed, the cards run {GRADIO_SDK_VERSION}"


def test_gradio_stays_out_of_the_install_requirements():
    setup = (Path(__file__).resolve().parents[2] / "setup.cfg").read_text()
    install_requires = setup.split("install_requires =", 1)[1].split("\n[", 1)[0]
    assert "gradio" not in install_requires


def test_space_problems_names_what_a_folder_lacks(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "toy.py").write_text("")
    (folder / "README.md").write_text("---\ntitle: toy\nsdk: streamlit\ntags:\n- metric\ncolorFrom: teal\n---\n")
    (folder / "requirements.txt").write_text("evaluate\n")
    problems = space_problems(folder)
    assert "app.py missing" in problems
    assert "README.md front matter lacks 'app_file'" in problems
    assert "README.md front matter must say sdk: gradio and app_file: app.py" in problems
    assert "README.md front matter tags must include evaluate and metric" in problems
    assert "README.md front matter colorFrom 'teal' is not a Space colour" in problems
    assert any(p.startswith("requirements.txt has no hoi-bench line") for p in problems)
    assert "examples/ missing (files the page scores with one button)" in problems


class FakeSpaceApi:
    def __init__(self):
        self.calls = []

    def create_repo(self, **kwargs):
        self.calls.append(("create_repo", kwargs))

    def upload_folder(self, **kwargs):
        folder = Path(kwargs["folder_path"])
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        self.calls.append(("upload_folder", {**kwargs, "files": files}))
        return "commit-1"


@pytest.fixture
def fake_wheel(tmp_path) -> Path:
    wheel = tmp_path / "hoi_bench-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"not really a zip, but bytes to upload and hash")
    return wheel


def test_push_metric_uploads_the_folder_and_a_wheel_it_installs(fake_wheel):
    import hashlib

    api = FakeSpaceApi()
    assert push_metric("p_auc", "org/p_auc", api=api, wheel=fake_wheel) == "commit-1"
    (_, create), (_, upload) = api.calls
    assert create == {"repo_id": "org/p_auc", "repo_type": "space", "space_sdk": "gradio", "private": False,
                      "exist_ok": True}
    assert upload["repo_type"] == "space" and upload["repo_id"] == "org/p_auc"
    folder = Path(metric_path("p_auc"))
    shipped = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()
               and "__pycache__" not in p.parts}
    assert set(upload["files"]) == shipped | {"wheels/hoi_bench-0.1.0-py3-none-any.whl"}
    assert upload["files"]["wheels/hoi_bench-0.1.0-py3-none-any.whl"] == fake_wheel.read_bytes()
    assert upload["files"]["p_auc.py"] == (folder / "p_auc.py").read_bytes()
    sha256 = hashlib.sha256(fake_wheel.read_bytes()).hexdigest()
    line = wheel_requirement("org/p_auc", fake_wheel.name, sha256)
    assert line == (f"hoi-bench @ https://huggingface.co/spaces/org/p_auc/resolve/main/wheels/{fake_wheel.name}"
                    f"#sha256={sha256}")
    lines = upload["files"]["requirements.txt"].decode().splitlines()
    assert [entry for entry in lines if not entry.startswith("#")] == [line]
    assert "hoi-bench\n" in (folder / "requirements.txt").read_text()  # the checkout's file is left alone


def test_push_metric_requirement_replaces_the_hoi_bench_line_and_uploads_no_wheel():
    api = FakeSpaceApi()
    push_metric("pdd", "org/pdd", api=api, requirement="hoi-bench @ git+https://git.acme.net/hoi-bench@v9")
    files = api.calls[1][1]["files"]
    lines = files["requirements.txt"].decode().splitlines()
    assert [entry for entry in lines if not entry.startswith("#")] == ["hoi-bench @ git+https://git.acme.net/hoi-bench@v9"]
    assert not any(path.startswith("wheels/") for path in files)


@pytest.mark.parametrize("requirement", ["hoi-bench @ git+https://YOUR/FORK@vVERSION",
                                         "hoi-bench @ git+https://github.com/ORG/hoi-bench@v0.1.0",
                                         "hoi-bench @ https://example.org/hoi_bench-0.1.0-py3-none-any.whl"])
def test_push_metric_refuses_a_placeholder_before_building_or_uploading(requirement, monkeypatch):
    from hoi_bench import source_wheel

    monkeypatch.setattr(source_wheel, "build_wheel", lambda *a, **k: pytest.fail("built a wheel"))
    api = FakeSpaceApi()
    with pytest.raises(SpaceError, match=r"placeholders left, nothing uploaded: requirements.txt:\d+: "):
        push_metric("pdo", "org/pdo", api=api, requirement=requirement)
    assert api.calls == []


def test_cli_push_metric_refuses_a_placeholder_in_one_line(capsys):
    assert main(["push-metric", "pdo", "--repo-id", "org/pdo", "--requirement", "hoi-bench @ git+https://TODO"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "placeholders left, nothing uploaded: requirements.txt:" in err


def test_push_metric_refuses_a_private_space_that_could_not_install_its_wheel(fake_wheel):
    api = FakeSpaceApi()
    with pytest.raises(SpaceError, match="a private Space cannot download its own wheel"):
        push_metric("pdd", "org/pdd", api=api, private=True, wheel=fake_wheel)
    assert api.calls == []


def test_push_metric_reports_hub_failures_as_one_line(fake_wheel):
    class Unreachable(FakeSpaceApi):
        def create_repo(self, **kwargs):
            raise ConnectionError("Failed to resolve 'huggingface.co'\nretrying...")

    with pytest.raises(PushError, match=r"^push the pdo metric to space repo 'org/pdo': ConnectionError: Failed to "
                                        r"resolve 'huggingface.co'$"):
        push_metric("pdo", "org/pdo", api=Unreachable(), wheel=fake_wheel)


@pytest.mark.parametrize("repo_id", ["org/", "org/p auc", "a/b/c", "org/p--auc"])
def test_push_metric_refuses_a_bad_repo_id_before_anything_else(repo_id):
    api = FakeSpaceApi()
    with pytest.raises(PushError, match="bad repository id"):
        push_metric("p_auc", repo_id, api=api)
    assert api.calls == []


def test_cli_push_metric_fails_clearly_offline(capsys, monkeypatch):
    from hoi_bench import source_wheel

    monkeypatch.setattr(source_wheel, "build_wheel", lambda *a, **k: pytest.fail("built a wheel while offline"))
    assert main(["push-metric", "p_auc", "--repo-id", "org/p_auc"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("hoi-bench: error: push the p_auc metric to space repo 'org/p_auc': offline mode is on "
                   "(HF_HUB_OFFLINE=1); unset it to upload")


def test_cli_push_metric_fails_clearly_without_a_token(monkeypatch, capsys, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-tokens"))
    for variable in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    assert main(["push-metric", "p_auc", "--repo-id", "org/p_auc"]) == 2
    assert "no Hugging Face token" in capsys.readouterr().err


def test_cli_push_metric_unknown_name_lists_the_metrics(capsys):
    assert main(["push-metric", "p_AUC", "--repo-id", "org/p_auc"]) == 2
    assert "unknown metric 'p_AUC'; available: " in capsys.readouterr().err


class _NotFound(http.server.BaseHTTPRequestHandler):
    """A Hub that has none of these Spaces: 404 for everything, counting the requests."""

    requests: list[str] = []

    def do_HEAD(self):  # noqa: N802 (http.server's naming)
        _NotFound.requests.append(self.path)
        self.send_response(404)
        self.end_headers()

    do_GET = do_HEAD

    def log_message(self, *args):
        pass


@pytest.mark.slow
def test_bare_load_after_install_asks_the_hub_then_uses_the_installed_module_silently(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = offline_env(tmp_path)
        env.update(HF_EVALUATE_OFFLINE="0", HF_ENDPOINT=f"http://127.0.0.1:{server.server_port}")
        script = ("import evaluate; from hoi_bench.metric_modules import install_metrics; install_metrics(['p_auc']); "
                  "print(evaluate.load('p_auc').name)")
        loaded = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=300)
    finally:
        server.shutdown()
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "p_auc"
    assert any(path.startswith("/spaces/evaluate-metric/p_auc/") for path in _NotFound.requests)
    assert "Using the latest cached version" not in loaded.stderr, loaded.stderr


@pytest.mark.slow  # pip builds the wheel (about 10 s)
def test_the_wheel_push_metric_uploads_holds_the_working_tree_and_leaves_it_clean(tmp_path):
    import zipfile

    from hoi_bench.source_wheel import build_wheel, source_root

    root = source_root()
    before = sorted(p.name for p in root.iterdir())
    wheel = build_wheel(tmp_path)
    assert wheel.name == f"hoi_bench-{hoi_bench.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert archive.read("hoi_bench/space_app.py") == (root / "hoi_bench" / "space_app.py").read_bytes()
    for name in metric_names():
        shipped = {f"hoi_bench_metrics/{p.relative_to(root / 'metrics').as_posix()}"
                   for p in (root / "metrics" / name).rglob("*") if p.is_file() and "__pycache__" not in p.parts}
        assert shipped <= names, f"{name}: {sorted(shipped - names)[:3]} not in the wheel"
    assert sorted(p.name for p in root.iterdir()) == before  # no build/ or *.egg-info left in the checkout


def test_placeholders_name_file_and_line_and_skip_example_data(tmp_path):
    from hoi_bench.spaces import placeholders

    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "references.json").write_text('{"note": "TODO"}')
    (tmp_path / "README.md").write_text("---\ntitle: x\n---\nevaluate.load('ORG/p_auc')\n")
    (tmp_path / "requirements.txt").write_text("hoi-bench\n")
    assert placeholders(tmp_path) == ["README.md:4: 'ORG'"]
    (tmp_path / "README.md").write_text("evaluate.load('acme/p_auc'), <label id>\n")
    assert placeholders(tmp_path) == []
