"""Upload a folder hoi-bench wrote (a Hub dataset folder, a metric Space) to a Hugging Face Hub repository.

Every way the upload can fail before or during the transfer (offline mode, no token, a malformed repository id, a
refused request, no network) becomes a one-line ``PushError`` naming the folder and the repository.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hoi_bench.errors import MissingFilesError, PushError


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
    return upload_folder(path, repo_id, repo_type="dataset", private=private,
                         commit_message=commit_message or f"Upload {path.name} built with hoi-bench", api=api)


def upload_folder(
    folder: str | os.PathLike,
    repo_id: str,
    *,
    repo_type: str,
    private: bool = False,
    commit_message: str,
    api: Any = None,
    create_repo_options: dict[str, Any] | None = None,
    label: str | None = None,
) -> Any:
    """Create the ``repo_type`` repository ``repo_id`` if needed and upload ``folder`` as one commit.

    The repository id, offline mode and the token are checked before anything is sent; errors from
    ``huggingface_hub`` and its HTTP client become ``PushError``. ``create_repo_options`` go to ``create_repo``
    (a Space needs ``space_sdk="gradio"``). With an injected ``api`` (tests) only the repository id is checked.
    ``label`` names what is pushed in messages (default: the folder's path).
    """
    path = Path(folder)
    if not path.is_dir():
        raise MissingFilesError(str(path.parent), [path.name], what="folder")
    api = hub_api(repo_id, repo_type=repo_type, api=api, label=label or str(path))
    from huggingface_hub import errors as hub_errors

    where = f"push {label or path} to {repo_type} repo {repo_id!r}"
    failures = _hub_failures(hub_errors)
    try:
        api.create_repo(repo_id=repo_id, repo_type=repo_type, private=private, exist_ok=True,
                        **(create_repo_options or {}))
        return api.upload_folder(folder_path=str(path), repo_id=repo_id, repo_type=repo_type,
                                 commit_message=commit_message)
    except failures as error:
        raise PushError(f"{where}: {_one_line(error)}") from error


def hub_api(repo_id: str, *, repo_type: str, api: Any = None, label: str) -> Any:
    """The Hub client for an upload of ``label`` to ``repo_id``, once nothing local stands in its way.

    Checks the repository id, offline mode (``HF_HUB_OFFLINE``) and the token, in that order, without any
    request, so a command can call it before slow preparations (building a wheel). With an injected ``api``
    (tests) only the repository id is checked and ``api`` is returned.
    """
    from huggingface_hub import errors as hub_errors
    from huggingface_hub.utils import validate_repo_id

    where = f"push {label} to {repo_type} repo {repo_id!r}"
    try:
        validate_repo_id(repo_id)
    except hub_errors.HFValidationError as error:
        reason = str(error).replace(" Use `repo_type` argument if needed.", "")
        raise PushError(f"{where}: bad repository id (expected ORG/NAME; {reason})") from None
    if api is not None:
        return api
    import huggingface_hub
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        raise PushError(f"{where}: offline mode is on (HF_HUB_OFFLINE=1); unset it to upload")
    try:
        token = huggingface_hub.get_token()
    except _hub_failures(hub_errors) as error:
        raise PushError(f"{where}: could not get a Hugging Face token: {_one_line(error)}") from error
    if token is None:
        raise PushError(f"{where}: no Hugging Face token (run `hf auth login` or set HF_TOKEN)")
    return huggingface_hub.HfApi()


def _hub_failures(hub_errors: Any) -> tuple[type[BaseException], ...]:
    """What huggingface_hub raises when the Hub refuses or cannot be reached, whichever HTTP client it uses."""
    names = ("HfHubHTTPError", "OfflineModeIsEnabled", "HFValidationError", "LocalTokenNotFoundError", "OIDCError",
             "HTTPError")
    found = tuple(getattr(hub_errors, name) for name in names if isinstance(getattr(hub_errors, name, None), type))
    return found + (ConnectionError, TimeoutError)


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else 'no details'}"
