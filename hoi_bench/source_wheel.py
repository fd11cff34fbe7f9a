"""A wheel of hoi-bench built from the working tree it runs from, for a metric Space to install.

hoi-bench has no public repository or PyPI release a Space could install from, so ``push-metric`` uploads a wheel
into the Space itself. The wheel is built from a copy of the checkout (``setup.cfg``, ``pyproject.toml``, the
files they name and the packages' folders), so uncommitted changes are in it and the checkout gains no
``build/`` or ``*.egg-info`` folder.
"""

from __future__ import annotations

import configparser
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hoi_bench.errors import HoiBenchError

_ROOT_FILES = ("setup.cfg", "pyproject.toml", "setup.py", "README.md", "LICENSE", "MANIFEST.in")
_SKIPPED = ("__pycache__", "*.pyc", "*.egg-info", ".*")


class WheelError(HoiBenchError):
    """No checkout to build from, or the build failed."""


def source_root() -> Path:
    """The checkout this hoi-bench was imported from (``setup.cfg`` next to ``hoi_bench/``).

    An installed wheel has no checkout: ``WheelError`` then says to install from one (``pip install -e .``).
    """
    root = Path(__file__).resolve().parents[1]
    if not ((root / "setup.cfg").is_file() and (root / "pyproject.toml").is_file()):
        raise WheelError(f"{Path(__file__).resolve().parent}: not in a hoi-bench checkout (no setup.cfg and "
                         f"pyproject.toml in {root}); run from a checkout (pip install -e .) or pass --wheel")
    return root


def package_folders(root: str | os.PathLike) -> list[Path]:
    """The folders of the packages ``setup.cfg`` lists, with its ``package_dir`` mapping applied."""
    config = configparser.ConfigParser()
    config.read(Path(root) / "setup.cfg", encoding="utf-8")
    packages = config.get("options", "packages", fallback="").split()
    mapping = dict(line.split("=", 1) for line in config.get("options", "package_dir", fallback="").splitlines()
                   if "=" in line)
    mapping = {key.strip(): value.strip() for key, value in mapping.items()}
    return [Path(root) / mapping.get(name, name.replace(".", "/")) for name in packages]


def build_wheel(out_dir: str | os.PathLike, root: str | os.PathLike | None = None) -> Path:
    """Build the hoi-bench wheel of ``root`` (default: :func:`source_root`) into ``out_dir``; returns its path.

    Uses pip (``pip wheel --no-deps``) without build isolation when setuptools and wheel are installed, so no
    download is needed; otherwise pip fetches them, as for any source install.
    """
    root = source_root() if root is None else Path(root)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hoi-bench-wheel-") as scratch:
        stage = Path(scratch) / "source"
        stage.mkdir()
        for name in _ROOT_FILES:
            if (root / name).is_file():
                shutil.copy2(root / name, stage / name)
        for folder in package_folders(root):
            shutil.copytree(folder, stage / folder.relative_to(root), ignore=shutil.ignore_patterns(*_SKIPPED))
        command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", scratch, str(stage)]
        if all(importlib.util.find_spec(name) for name in ("setuptools", "wheel")):
            command.insert(5, "--no-build-isolation")
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        wheels = sorted(Path(scratch).glob("hoi_bench-*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            raise WheelError(f"{root}: building the hoi-bench wheel failed: {lines[-1] if lines else done.returncode}")
        return Path(shutil.copy2(wheels[0], out / wheels[0].name))


def sha256_of(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file, for the ``#sha256=`` fragment pip checks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
