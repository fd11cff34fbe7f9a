"""Every metric Space starts as the Hub starts it (its ``app.py`` run as ``__main__``, the address from
GRADIO_SERVER_NAME/PORT) and, called through ``gradio_client`` with its shipped example files, returns the numbers
``hoi-bench evaluate`` writes for the same files.

Importing gradio costs several CPU seconds, so one server process runs all nine ``app.py`` files, each on its own
port (``launch()`` returns instead of blocking the main thread), and one client process calls them all over
loopback with every other network connection refused."""

from __future__ import annotations

import ast
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hoi_bench import metric_names, metric_path
from hoi_bench.cli import main
from hoi_bench.space_app import command_line, metric_form, table_rows

pytest.importorskip("gradio", reason="the Space tests need the space extra: pip install -e '.[space]'")

STARTUP_SECONDS = 240

SERVERS = r"""
import json, os, runpy, sys

import gradio

urls, launch = {}, gradio.Blocks.launch


def launch_and_return(self, *args, **kwargs):
    # launch() as app.py calls it, minus blocking the main thread, so this process can serve the next app too;
    # the port comes from GRADIO_SERVER_PORT, the next free one for the apps after the first (gradio's own rule)
    result = launch(self, *args, prevent_thread_lock=True, **kwargs)
    urls[app] = self.local_url
    return result


gradio.Blocks.launch = launch_and_return
for app in sys.argv[1:]:
    runpy.run_path(app, run_name="__main__")
with open("urls.json.partial", "w") as out:
    json.dump(urls, out)
os.replace("urls.json.partial", "urls.json")
sys.stdin.read()  # serve until the test ends this process
"""

CLIENT = r"""
import json, socket, sys

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
_getaddrinfo, _connect = socket.getaddrinfo, socket.socket.connect

def getaddrinfo(host, *args, **kwargs):
    if host not in LOOPBACK:
        raise OSError(f"network refused in this test: {host}")
    return _getaddrinfo(host, *args, **kwargs)

def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in LOOPBACK:
        raise OSError(f"network refused in this test: {address}")
    return _connect(self, address)

socket.getaddrinfo, socket.socket.connect = getaddrinfo, connect

from gradio_client import Client, handle_file

def value(item):
    if isinstance(item, dict) and "file" in item:
        return handle_file(item["file"])
    if isinstance(item, list):
        return [value(i) for i in item]
    return item

out = {}
for key, (url, args) in json.load(sys.stdin).items():
    client = Client(url, verbose=False, download_files=False)
    try:
        table, data, command = client.predict(*[value(a) for a in args], api_name="/evaluate")
        out[key] = {"table": table, "json": data, "command": command}
    except Exception as error:
        out[key] = {"error": f"{type(error).__name__}: {error}"}
json.dump(out, sys.stdout)
"""


def _uploaded(message: str) -> str:
    """The path of gradio's copy of an uploaded references.json named in ``message``."""
    import re

    return re.search(r"/\S*references\.json", message).group(0)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch_arguments(name: str) -> tuple[list[str], list[str]]:
    """The command and folder options ``metrics/<name>/app.py`` passes to ``hoi_bench.space_app.launch``."""
    tree = ast.parse((Path(metric_path(name)) / "app.py").read_text(encoding="utf-8"))
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "launch"]
    assert len(calls) == 1, f"{name}/app.py must call launch once"
    keywords = {k.arg: ast.literal_eval(k.value) for k in calls[0].keywords}
    return ast.literal_eval(calls[0].args[1]), keywords.get("folders", [])


def example_form(name: str):
    command, folders = launch_arguments(name)
    return metric_form(name, command, folders, Path(metric_path(name)) / "examples")


def form_arguments(form, **options) -> list:
    """The values of the form's fields in order: example files (``{"file": path}``), else the defaults."""
    args = []
    for spec in form.fields:
        value = options.get(spec.dest, form.examples.get(spec.dest, spec.default))
        if spec.kind == "files":
            value = [{"file": p} for p in value or []]
        elif spec.kind == "file":
            value = None if value is None else {"file": value}
        args.append(value)
    return args


def cli_result(name: str, tmp_path: Path, *extra: str) -> dict:
    """What ``hoi-bench <command> ... --output`` writes for the example files (folders passed as folders)."""
    command, folders = launch_arguments(name)
    argv = list(command)
    for path in sorted((Path(metric_path(name)) / "examples").iterdir()):
        dest = path.name.split(".", 1)[0]
        argv += [f"--{dest.replace('_', '-')}"] + (
            sorted(str(p) for p in path.iterdir()) if path.is_dir() and dest not in folders else [str(path)])
    output = tmp_path / f"{name}-cli.json"
    assert main([*argv, *extra, "--output", str(output)]) == 0
    return json.loads(output.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def space_answers(tmp_path_factory) -> dict[str, dict]:
    """Start every metric's app.py, call each through gradio_client, stop them; the answers by call."""
    root = tmp_path_factory.mktemp("spaces")
    env = dict(os.environ, GRADIO_SERVER_NAME="127.0.0.1", GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1",
               GRADIO_TEMP_DIR=str(root / "gradio"), PYTHONUNBUFFERED="1")
    apps = {str(Path(metric_path(name)) / "app.py"): name for name in metric_names()}
    with open(root / "servers.log", "w") as log:
        servers = subprocess.Popen([sys.executable, "-c", SERVERS, *apps], stdin=subprocess.PIPE, stdout=log,
                                   stderr=subprocess.STDOUT, cwd=root,
                                   env=dict(env, GRADIO_SERVER_PORT=str(_free_port())))
        try:
            deadline = time.monotonic() + STARTUP_SECONDS
            while not (root / "urls.json").is_file():
                assert servers.poll() is None, f"the apps exited: {(root / 'servers.log').read_text()[-3000:]}"
                assert time.monotonic() < deadline, f"the apps did not start within {STARTUP_SECONDS} s"
                time.sleep(0.2)
            urls = {apps[app]: url for app, url in json.loads((root / "urls.json").read_text()).items()}
            assert sorted(urls) == metric_names() and all(url.startswith("http://127.0.0.1:") for url in urls.values())
            calls = {name: (url, form_arguments(example_form(name))) for name, url in urls.items()}
            hoi_map = example_form("hoi_map")
            calls["hoi_map ho-rcnn"] = (urls["hoi_map"], form_arguments(hoi_map, protocol="ho-rcnn"))
            calls["hoi_map without predictions"] = (urls["hoi_map"], form_arguments(hoi_map, predictions=None))
            swapped = hoi_map.examples["references"]
            calls["hoi_map with GT as predictions"] = (urls["hoi_map"], form_arguments(hoi_map, predictions=swapped))
            client = subprocess.run([sys.executable, "-c", CLIENT], input=json.dumps(calls), capture_output=True,
                                    text=True, env=env, timeout=300)
            assert client.returncode == 0, client.stderr[-3000:]
            return json.loads(client.stdout)
        finally:
            servers.kill()
            servers.wait(timeout=30)


@pytest.mark.slow  # gradio's import and nine servers' start: about 15 CPU seconds for the module
@pytest.mark.parametrize("name", metric_names())
def test_each_space_scores_its_examples_as_the_cli_does(name, space_answers, tmp_path):
    answer = space_answers[name]
    assert "error" not in answer, answer.get("error")
    expected = cli_result(name, tmp_path)
    assert answer["json"] == expected
    assert answer["table"]["data"] == table_rows(expected)
    assert answer["command"].startswith(f"hoi-bench {' '.join(launch_arguments(name)[0])} ")


@pytest.mark.slow
def test_a_space_selector_reaches_the_command(space_answers, tmp_path):
    answer = space_answers["hoi_map ho-rcnn"]
    assert "error" not in answer, answer.get("error")
    assert answer["json"]["protocol"] == "ho-rcnn"
    assert answer["json"] == cli_result("hoi_map", tmp_path, "--protocol", "ho-rcnn")
    assert answer["json"]["mAP"] != space_answers["hoi_map"]["json"]["mAP"]


@pytest.mark.slow
def test_a_space_names_a_missing_file(space_answers):
    assert "predictions: required" in space_answers["hoi_map without predictions"]["error"]


@pytest.mark.slow
def test_a_space_shows_the_cli_one_line_error_for_a_file_it_refuses(space_answers, tmp_path, capsys):
    error = space_answers["hoi_map with GT as predictions"]["error"]
    examples = Path(metric_path("hoi_map")) / "examples"
    assert main(["evaluate", "hoi_map", "--references", str(examples / "references.json"),
                 "--predictions", str(examples / "references.json")]) == 2
    cli_error = capsys.readouterr().err.strip()
    assert cli_error.startswith("hoi-bench: error: ") and "\n" not in cli_error
    # the same message, naming the uploaded copy instead of the shipped file
    assert error.split(": ", 1)[1] == cli_error.replace(str(examples / "references.json"), _uploaded(error))


def test_a_folder_option_is_uploaded_as_its_files(tmp_path):
    form = example_form("bongard_accuracy")
    files = form.examples["references"]
    assert len(files) == 4 and all(Path(p).name.startswith("bongard_hoi_test_") for p in files)
    argv = command_line(form, form.examples, tmp_path)
    folder = Path(argv[argv.index("--references") + 1])
    assert folder.parent == tmp_path
    assert sorted(p.name for p in folder.iterdir()) == sorted(Path(p).name for p in files)


def test_every_form_field_is_an_option_of_its_command():
    for name in metric_names():
        form = example_form(name)
        assert form.fields, name
        assert all(spec.flag.startswith("--") for spec in form.fields)
        assert not {"output", "num_proc", "per_class"} & {spec.dest for spec in form.fields}
        required = {spec.dest for spec in form.fields if spec.required}
        assert required <= set(form.examples), f"{name}: examples/ lacks {required - set(form.examples)}"


@pytest.mark.slow  # writes every benchmark's sample (about 10 s)
def test_the_shipped_examples_are_what_space_examples_writes(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("space_examples", Path(__file__).parents[1] / "space_examples.py")
    space_examples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(space_examples)
    assert sorted(space_examples.WRITERS) == metric_names()
    for name in metric_names():
        shipped = Path(metric_path(name)) / "examples"
        written = space_examples.write_examples(name, tmp_path / name)
        files = sorted(p.relative_to(written) for p in written.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(shipped) for p in shipped.rglob("*") if p.is_file()), name
        for file in files:
            assert (written / file).read_bytes() == (shipped / file).read_bytes(), f"{name}/examples/{file} is stale"
