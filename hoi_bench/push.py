"""Upload a Hub dataset folder written by ``hoi-bench build`` to a Hub dataset repository."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hoi_bench.errors import MissingFilesError


def push_hub_folder(
    folder: str | os.PathLike,
    repo_id: str,
    *,
    private: bool = False,
    commit_message: str | None = None,
    api: Any = None,
) -> Any:
    """Create ``repo_id`` (a dataset repo) if needed and upload ``folder`` as one commit; returns the commit info.

    ``api`` defaults to ``huggingface_hub.HfApi()``; any object with ``create_repo`` and ``upload_folder`` works.
    """
    path = Path(folder)
    if not (path / "README.md").is_file():
        raise MissingFilesError(str(path), ["README.md"], what="files",
                                hint="push a folder written by `hoi-bench build`")
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    message = commit_message or f"Upload {path.name} built with hoi-bench"
    api.create_repo(repo_id=repo_id, repo_type="dataset", private=private, exist_ok=True)
    return api.upload_folder(folder_path=str(path), repo_id=repo_id, repo_type="dataset", commit_message=message)
