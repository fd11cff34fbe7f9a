"""Each ``metrics/<name>/`` folder is a Hugging Face Space, the way every ``evaluate`` metric is published.

A metric Space holds the module (``<name>.py``), ``app.py`` (the gradio widget from ``evaluate.utils``, run
only on the Space), a ``README.md`` whose YAML front matter configures the Space (``sdk: gradio``,
``app_file: app.py``, tags ``evaluate`` and ``metric``, licence) and a ``requirements.txt`` that installs
hoi-bench, which the module imports. Once pushed, ``evaluate.load("ORG/<name>")`` downloads the module from
the Space.

The Space installs hoi-bench from its source repository at the release tag (``v<version>``), because
hoi-bench is not on PyPI. ``SOURCE_REPOSITORY`` is the one place that names that repository; no public URL
is known yet, so it is a placeholder to set before the first release (``push-metric --requirement`` uploads
any other requirement line instead, e.g. a fork or ``hoi-bench==<version>`` once published on PyPI).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hoi_bench.errors import HoiBenchError
from hoi_bench.metric_modules import metric_path

# Placeholder: hoi-bench has no public repository yet. Set the real URL here before tagging a release.
SOURCE_REPOSITORY = "https://github.com/hoi-bench/hoi-bench"

# evaluate.utils.launch_gradio_widget builds its form with gr.inputs / gr.outputs, which gradio 4 removed;
# 3.19.1 is the gradio version evaluate's own metric Spaces run. With Python 3.11 (the front matter's
# python_version) pip resolves it together with hoi-bench's requirements, and app.py builds the widget.
GRADIO_SDK_VERSION = "3.19.1"

SPACE_KEYS = ("title", "emoji", "colorFrom", "colorTo", "sdk", "sdk_version", "python_version", "app_file", "pinned",
              "license", "tags")
SPACE_COLORS = ("red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray")
_FRONT_MATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n", re.DOTALL)
_IGNORED = ["__pycache__", "*.pyc", ".*"]


class SpaceError(HoiBenchError):
    """A metric folder is not a complete Space, or the Hub refused or could not be reached."""


def space_requirement(version: str | None = None) -> str:
    """The requirement line that installs hoi-bench ``version`` (default: this one) on a Space.

    >>> space_requirement("1.2.0")
    'hoi-bench @ git+https://github.com/hoi-bench/hoi-bench@v1.2.0'
    """
    if version is None:
        from hoi_bench import __version__ as version
    return f"hoi-bench @ git+{SOURCE_REPOSITORY}@v{version}"


def front_matter(readme: str | os.PathLike) -> dict[str, Any]:
    """The YAML front matter of a metric card (``{}`` when it has none)."""
    text = Path(readme).read_text(encoding="utf-8")
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}
    import yaml

    data = yaml.safe_load(match.group(1))
    return data if isinstance(data, dict) else {}


def space_problems(folder: str | os.PathLike) -> list[str]:
    """What keeps ``folder`` from being a complete evaluate metric Space (empty when nothing does)."""
    path = Path(folder)
    name = path.name
    problems = [f"{item} missing" for item in (f"{name}.py", "app.py", "README.md", "requirements.txt")
                if not (path / item).is_file()]
    if (path / "README.md").is_file():
        meta = front_matter(path / "README.md")
        problems += [f"README.md front matter lacks {key!r}" for key in SPACE_KEYS if key not in meta]
        if meta.get("sdk", "gradio") != "gradio" or meta.get("app_file", "app.py") != "app.py":
            problems.append("README.md front matter must say sdk: gradio and app_file: app.py")
        if not {"evaluate", "metric"} <= set(meta.get("tags") or []):
            problems.append("README.md front matter tags must include evaluate and metric")
        problems += [f"README.md front matter {key} {meta[key]!r} is not a Space colour"
                     for key in ("colorFrom", "colorTo") if key in meta and meta[key] not in SPACE_COLORS]
    if (path / "app.py").is_file():
        app = (path / "app.py").read_text(encoding="utf-8")
        if "launch_gradio_widget" not in app:
            problems.append("app.py does not launch evaluate.utils.launch_gradio_widget")
    if (path / "requirements.txt").is_file():
        lines = [line.strip() for line in (path / "requirements.txt").read_text(encoding="utf-8").splitlines()]
        if space_requirement() not in lines:
            problems.append(f"requirements.txt does not pin this release: expected the line {space_requirement()!r}")
    return problems


def push_metric(
    name: str,
    repo_id: str,
    *,
    private: bool = False,
    requirement: str | None = None,
    commit_message: str | None = None,
    api: Any = None,
) -> Any:
    """Upload ``metrics/<name>/`` as the gradio Space ``repo_id``; returns the commit info.

    The folder must be a complete Space (else ``SpaceError``); the repository id, offline mode, the token and
    every Hub failure are checked and worded by :func:`hoi_bench.push.upload_folder` (``PushError``).
    ``requirement`` replaces the folder's requirements.txt in the upload. ``api`` defaults to
    ``huggingface_hub.HfApi()`` (tests pass a fake).
    """
    from hoi_bench.push import upload_folder

    folder = Path(metric_path(name))
    problems = [p for p in space_problems(folder) if requirement is None or not p.startswith("requirements.txt")]
    if problems:
        raise SpaceError(f"{folder} is not a complete metric Space: {'; '.join(problems)}")
    with tempfile.TemporaryDirectory(prefix=f"hoi-bench-space-{name}-") as staging:
        upload = Path(staging) / name
        shutil.copytree(folder, upload, ignore=shutil.ignore_patterns(*_IGNORED))
        if requirement is not None:
            (upload / "requirements.txt").write_text(requirement.strip() + "\n", encoding="utf-8")
        return upload_folder(upload, repo_id, repo_type="space", private=private, api=api,
                             commit_message=commit_message or f"Upload the {name} metric Space from hoi-bench",
                             create_repo_options={"space_sdk": "gradio"}, label=f"the {name} metric")
