"""Each ``metrics/<name>/`` folder is a Hugging Face Space, the way every ``evaluate`` metric is published.

A metric Space holds the module (``<name>.py``), ``app.py`` (a few lines calling :mod:`hoi_bench.space_app`,
which serves the metric's ``hoi-bench evaluate`` command as a gradio form), ``examples/`` (files the page can
score with one button), a ``README.md`` whose YAML front matter configures the Space (``sdk: gradio`` at
:data:`GRADIO_SDK_VERSION`, ``app_file: app.py``, tags ``evaluate`` and ``metric``, licence) and a
``requirements.txt`` naming hoi-bench, which the module and the page import. Once pushed,
``evaluate.load("ORG/<name>")`` downloads the module from the Space.

hoi-bench is neither on PyPI nor in a public repository, so :func:`push_metric` builds a wheel from the working
tree (:mod:`hoi_bench.source_wheel`), uploads it into the Space (``wheels/``) and points the uploaded
``requirements.txt`` at its URL with its SHA-256: the Space builder installs ``requirements.txt`` before the
Space's files are copied in, so the wheel is fetched from the Space repository by URL. A Space stays
installable only as long as that URL is public; ``--requirement`` puts any other requirement line instead (a fork,
``hoi-bench==<version>`` once released).
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

GRADIO_SDK_VERSION = "6.31.0"
"""The gradio a Space runs (``sdk_version`` of every metric card); the ``space`` extra installs the same major
version for the tests that start each Space's app."""

WHEEL_FOLDER = "wheels"
"""Where in the Space the hoi-bench wheel is uploaded."""

PLACEHOLDER = re.compile(r"\b(ORG|YOUR|SOURCE_REPOSITORY|TODO|FIXME)\b|example\.(?:org|com)|@vVERSION")
"""What marks a value someone still has to fill in; ``push-metric`` uploads nothing while the Space has one."""

SPACE_KEYS = ("title", "emoji", "colorFrom", "colorTo", "sdk", "sdk_version", "python_version", "app_file", "pinned",
              "license", "tags")
SPACE_COLORS = ("red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray")
_FRONT_MATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n", re.DOTALL)
_HOI_BENCH_LINE = re.compile(r"^\s*hoi[-_.]bench\b", re.IGNORECASE)
_IGNORED = ["__pycache__", "*.pyc", ".*"]


class SpaceError(HoiBenchError):
    """A metric folder is not a complete Space, or what would be uploaded still holds a placeholder."""


def wheel_requirement(repo_id: str, wheel_name: str, sha256: str, endpoint: str | None = None) -> str:
    """The requirement line that installs the wheel ``wheel_name`` uploaded to the Space ``repo_id``.

    >>> wheel_requirement("org/p_auc", "hoi_bench-0.1.0-py3-none-any.whl", "ab" * 32, "https://hf.co")
    ... # doctest: +ELLIPSIS
    'hoi-bench @ https://hf.co/spaces/org/p_auc/resolve/main/wheels/hoi_bench-0.1.0-py3-none-any.whl#sha256=abab...'
    """
    from huggingface_hub import hf_hub_url

    url = hf_hub_url(repo_id, f"{WHEEL_FOLDER}/{wheel_name}", repo_type="space", revision="main", endpoint=endpoint)
    return f"hoi-bench @ {url}#sha256={sha256}"


def with_requirement(requirements: str, line: str) -> str:
    """``requirements`` (a requirements.txt) with its hoi-bench line replaced by ``line`` (appended when absent)."""
    lines = requirements.splitlines()
    kept = [entry for entry in lines if not _HOI_BENCH_LINE.match(entry)]
    at = next((k for k, entry in enumerate(lines) if _HOI_BENCH_LINE.match(entry)), len(lines))
    kept.insert(min(at, len(kept)), line.strip())
    return "\n".join(kept) + "\n"


def placeholders(folder: str | os.PathLike) -> list[str]:
    """``file:line: text`` of every :data:`PLACEHOLDER` in the text files of ``folder`` (empty: none)."""
    found = []
    for path in sorted(Path(folder).rglob("*")):
        if not path.is_file() or path.suffix not in (".md", ".txt", ".py", ".json", ".yaml", ".yml"):
            continue
        if "examples" in path.relative_to(folder).parts:
            continue  # example inputs are data, not settings
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            match = PLACEHOLDER.search(line)
            if match:
                found.append(f"{path.relative_to(folder)}:{number}: {match.group(0)!r}")
    return found


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
        if "sdk_version" in meta and str(meta["sdk_version"]) != GRADIO_SDK_VERSION:
            problems.append(f"README.md front matter sdk_version {meta['sdk_version']!r} is not "
                            f"{GRADIO_SDK_VERSION!r}, the gradio hoi_bench.space_app is tested with")
    if (path / "app.py").is_file():
        app = (path / "app.py").read_text(encoding="utf-8")
        if "hoi_bench.space_app" not in app:
            problems.append("app.py does not serve the page of hoi_bench.space_app")
    if (path / "requirements.txt").is_file():
        lines = (path / "requirements.txt").read_text(encoding="utf-8").splitlines()
        if not any(_HOI_BENCH_LINE.match(line) for line in lines):
            problems.append("requirements.txt has no hoi-bench line (push-metric replaces it with the wheel's URL)")
    if not (path / "examples").is_dir():
        problems.append("examples/ missing (files the page scores with one button)")
    return problems


def push_metric(
    name: str,
    repo_id: str,
    *,
    private: bool = False,
    requirement: str | None = None,
    wheel: str | os.PathLike | None = None,
    commit_message: str | None = None,
    api: Any = None,
) -> Any:
    """Upload ``metrics/<name>/`` as the gradio Space ``repo_id``, with a hoi-bench wheel; returns the commit info.

    Everything that can be checked without the Hub is checked before anything is built or sent: the folder is a
    complete Space (else ``SpaceError``); no placeholder is left in what would be uploaded (``SpaceError``
    naming file and line); the repository id, offline mode and the token (:func:`hoi_bench.push.hub_api`,
    ``PushError``). The wheel is ``wheel`` or one built from the working tree; it goes to
    ``wheels/`` and the uploaded requirements.txt installs it by URL and SHA-256. ``requirement`` replaces the
    hoi-bench line instead, and no wheel is uploaded. A private Space cannot download its own wheel while it
    builds, so ``private`` needs ``requirement``. ``api`` defaults to ``huggingface_hub.HfApi()`` (tests pass a
    fake).
    """
    from hoi_bench.push import hub_api, upload_folder
    from hoi_bench.source_wheel import build_wheel, sha256_of

    folder = Path(metric_path(name))
    label = f"the {name} metric"
    problems = space_problems(folder)
    if problems:
        raise SpaceError(f"{folder} is not a complete metric Space: {'; '.join(problems)}")
    if private and requirement is None:
        raise SpaceError(f"push {label} to space repo {repo_id!r}: a private Space cannot download its own wheel "
                         "while it builds (its files need a token); pass --requirement with a hoi-bench "
                         "requirement it can install, or push a public Space")
    with tempfile.TemporaryDirectory(prefix=f"hoi-bench-space-{name}-") as staging:
        upload = Path(staging) / name
        shutil.copytree(folder, upload, ignore=shutil.ignore_patterns(*_IGNORED))
        requirements = upload / "requirements.txt"
        if requirement is not None:
            requirements.write_text(with_requirement(requirements.read_text(encoding="utf-8"), requirement),
                                    encoding="utf-8")
        left = placeholders(upload)
        if left:
            raise SpaceError(f"push {label} to space repo {repo_id!r}: placeholders left, nothing uploaded: "
                             f"{'; '.join(left)}")
        api = hub_api(repo_id, repo_type="space", api=api, label=label)
        if requirement is None:
            built = Path(wheel) if wheel is not None else build_wheel(Path(staging) / "dist")
            if not built.is_file() or not built.name.startswith("hoi_bench-") or built.suffix != ".whl":
                raise SpaceError(f"{built}: not a hoi-bench wheel file (expected hoi_bench-<version>-....whl)")
            (upload / WHEEL_FOLDER).mkdir()
            shutil.copy2(built, upload / WHEEL_FOLDER / built.name)
            line = wheel_requirement(repo_id, built.name, sha256_of(built))
            requirements.write_text(with_requirement(requirements.read_text(encoding="utf-8"), line),
                                    encoding="utf-8")
        return upload_folder(upload, repo_id, repo_type="space", private=private, api=api,
                             commit_message=commit_message or f"Upload the {name} metric Space from hoi-bench",
                             create_repo_options={"space_sdk": "gradio"}, label=label)
