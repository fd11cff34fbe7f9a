"""`hoi-bench push` hands the right folder, repo type and message to huggingface_hub."""

from __future__ import annotations

import pytest

from hoi_bench.cli import main
from hoi_bench.errors import MissingFilesError
from hoi_bench.push import push_hub_folder


class FakeApi:
    def __init__(self):
        self.calls = []

    def create_repo(self, **kwargs):
        self.calls.append(("create_repo", kwargs))

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", kwargs))
        return "commit-1"


def test_push_uploads_folder_as_dataset_repo(tmp_path):
    (tmp_path / "README.md").write_text("---\nconfigs: []\n---\n")
    api = FakeApi()
    assert push_hub_folder(tmp_path, "org/hoi_sg", api=api, commit_message="v1") == "commit-1"
    assert api.calls == [
        ("create_repo", {"repo_id": "org/hoi_sg", "repo_type": "dataset", "private": False, "exist_ok": True}),
        ("upload_folder", {"folder_path": str(tmp_path), "repo_id": "org/hoi_sg", "repo_type": "dataset",
                           "commit_message": "v1"}),
    ]


def test_push_default_message_names_the_folder(tmp_path):
    (tmp_path / "README.md").write_text("x")
    api = FakeApi()
    push_hub_folder(tmp_path, "org/x", api=api)
    assert api.calls[1][1]["commit_message"] == f"Upload {tmp_path.name} built with hoi-bench"


def test_push_refuses_a_folder_without_card(tmp_path):
    with pytest.raises(MissingFilesError, match="README.md"):
        push_hub_folder(tmp_path, "org/x", api=FakeApi())


def test_cli_push_reports_missing_card(tmp_path, capsys):
    assert main(["push", str(tmp_path), "--repo-id", "org/x"]) == 2
    assert "README.md" in capsys.readouterr().err
