"""`hoi-bench push` hands the right folder, repo type and message to huggingface_hub, and fails in one line."""

from __future__ import annotations

import pytest

from hoi_bench.cli import main
from hoi_bench.errors import MissingFilesError, PushError
from hoi_bench.push import push_hub_folder, upload_folder


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


@pytest.fixture()
def card_folder(tmp_path):
    (tmp_path / "README.md").write_text("---\nconfigs: []\n---\n")
    return tmp_path


@pytest.fixture()
def online_without_token(monkeypatch, tmp_path_factory):
    """What a fresh machine looks like: network allowed, no HF_TOKEN, no saved token."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HF_OIDC_RESOURCE", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path_factory.mktemp("hf") / "token"))


def test_bad_repo_id_is_refused_before_any_request(card_folder):
    api = FakeApi()
    with pytest.raises(PushError, match=r"bad repository id \(expected ORG/NAME; .*'org/x/y'"):
        push_hub_folder(card_folder, "org/x/y", api=api)
    assert api.calls == []


def test_offline_mode_is_a_clear_error(card_folder, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(PushError, match=r"offline mode is on \(HF_HUB_OFFLINE=1\)"):
        push_hub_folder(card_folder, "org/x")


def test_missing_token_is_a_clear_error(card_folder, online_without_token):
    with pytest.raises(PushError, match=r"no Hugging Face token \(run `hf auth login` or set HF_TOKEN\)"):
        push_hub_folder(card_folder, "org/x")


class FailingApi(FakeApi):
    def __init__(self, error):
        super().__init__()
        self.error = error

    def create_repo(self, **kwargs):
        raise self.error


@pytest.mark.parametrize("make_error", [
    lambda errors: errors.OfflineModeIsEnabled("Cannot reach https://huggingface.co/api/repos/create"),
    lambda errors: errors.HTTPError("[Errno 111] Connection refused\nsecond line"),
    lambda errors: ConnectionError("network is unreachable"),
])
def test_hub_and_network_errors_become_one_line_push_errors(card_folder, make_error):
    from huggingface_hub import errors

    error = make_error(errors)
    with pytest.raises(PushError) as raised:
        push_hub_folder(card_folder, "org/x", api=FailingApi(error))
    message = str(raised.value)
    assert message.startswith(f"push {card_folder} to dataset repo 'org/x': {type(error).__name__}: ")
    assert "\n" not in message


def test_cli_push_failure_is_one_line_exit_2(card_folder, monkeypatch, capsys):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert main(["push", str(card_folder), "--repo-id", "org/x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "offline mode is on" in err and str(card_folder) in err


def test_upload_folder_passes_space_options(card_folder):
    api = FakeApi()
    upload_folder(card_folder, "org/p_auc", repo_type="space", commit_message="m", api=api,
                  create_repo_options={"space_sdk": "gradio"})
    assert api.calls[0] == ("create_repo", {"repo_id": "org/p_auc", "repo_type": "space", "private": False,
                                            "exist_ok": True, "space_sdk": "gradio"})
    assert api.calls[1][1]["repo_type"] == "space"
