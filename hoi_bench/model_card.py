"""The model card (``README.md``) of a model folder a training run writes (``OUTPUT/model``, ``OUTPUT/best``).

Hub model-card format: a YAML metadata block built with ``huggingface_hub.ModelCardData`` (``library_name``,
``tags``, ``license``, the ``datasets`` trained on, the ``base_model`` backbone when it is a Hub id, the
``metrics`` and a ``model-index`` of the run's results as ``EvalResult`` entries), then what the model is, how
to load it, the data, the training setup, the command that was run and the one that repeats every setting, and
the metrics.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path
from typing import Any

from hoi_bench.run_results import flat_metrics

#: the weights inherit the terms of the images they were trained on (HICO-DET, COCO, ...), not the code's Apache-2.0
LICENSE = "other"
HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
VERSIONED = ("hoi-bench", "torch", "transformers", "accelerate", "datasets", "huggingface_hub")
SETUP = ("max_steps", "batch_size", "gradient_accumulation_steps", "learning_rate", "lr_scheduler_type",
         "warmup_steps", "weight_decay", "max_grad_norm", "mixed_precision", "seed")


def hub_id(value: Any) -> str | None:
    """``value`` when it names a Hub repo (``ORG/NAME``) rather than a local path, else None.

    >>> hub_id("org/hico-det-sg"), hub_id("tiny-random")
    ('org/hico-det-sg', None)
    """
    text = str(value) if value is not None else ""
    return text if HUB_ID.match(text) and not Path(text).exists() else None


def model_card(model, baseline_name: str, config, command: str, results: dict[str, Any], step: int, *,
               processes: int, reproduce: str | None = None):
    """The ``huggingface_hub.ModelCard`` of ``model`` after ``step`` steps of the run ``config`` describes.

    ``results`` holds the evaluation the card reports (``splits`` → ``metrics``, ``overall``); ``command`` is
    the command line that started the run, ``reproduce`` the run's settings as one command line
    (:func:`hoi_bench.training.command_line`). The dataset is named by its Hub id, or by its folder's name when
    it was a local folder.
    """
    from huggingface_hub import EvalResult, ModelCard, ModelCardData

    extra = config.extra
    module = type(model).__module__
    model_class = type(model).__name__
    dataset, dataset_config = extra.get("data"), extra.get("config")
    dataset_id = hub_id(dataset) or (Path(str(dataset)).name if dataset else None)
    metrics = flat_metrics(results)
    data = ModelCardData(
        library_name="hoi-bench",
        license=LICENSE,
        tags=["hoi-bench", baseline_name, "model_hub_mixin", "pytorch_model_hub_mixin"],
        datasets=[dataset_id] if dataset_id else None,
        base_model=hub_id(extra.get("backbone")),
        metrics=list(dict.fromkeys(key.rsplit("/", 1)[1] for key in metrics)) or None,
        model_name=baseline_name if dataset_id and metrics else None,
        eval_results=[EvalResult(task_type="other", dataset_type=dataset_id, dataset_name=dataset_id,
                                 dataset_config=dataset_config, dataset_split=key.rsplit("/", 1)[0],
                                 metric_type=key.rsplit("/", 1)[1], metric_value=value)
                      for key, value in metrics.items()] if dataset_id and metrics else None,
    )
    setup = [("steps done", step), ("processes", processes)]
    setup += [(name, getattr(config, name)) for name in SETUP]
    setup += [(name, extra[name]) for name in ("backbone", "backbone_kind", "image_size", "freeze_backbone",
                                               "model") if name in extra]
    splits = ", ".join(f"`{split}`" for split in results.get("splits", {}))
    body = "\n".join([
        f"# {baseline_name}",
        "",
        (f"A `{model_class}` (`{module}`) trained with hoi-bench's `{baseline_name}` baseline on `{dataset}` "
         f"(config `{dataset_config}`) for {step} steps."),
        "",
        "## How to use",
        "",
        "```python",
        f"from {module} import {model_class}",
        "",
        f'model = {model_class}.from_pretrained("PATH_OR_REPO_ID")  # this folder, or its Hub repo',
        "```",
        "",
        ("To score it on a benchmark split, rerun the command line below with `--eval-only --init-from "
         "PATH_OR_REPO_ID` and a new `--output-dir`."),
        "",
        "## Training data",
        "",
        "| dataset | config | evaluated on |",
        "|---|---|---|",
        f"| `{dataset}` | `{dataset_config}` | {splits or '-'} |",
        "",
        "## Training procedure",
        "",
        "| setting | value |",
        "|---|---|",
        *[f"| {name} | `{value}` |" for name, value in setup],
        "",
        "The command that was run:",
        "",
        "```bash",
        command,
        "```",
        "",
        "The same run with every setting spelled out (`accelerate launch -m` takes the same flags):",
        "",
        "```bash",
        reproduce or command,
        "```",
        "",
        f"## Evaluation (step {step})",
        "",
        *(["| split / metric | value |", "|---|---|",
           *[f"| {key} | {value:.6g} |" for key, value in metrics.items()]]
          if metrics else ["No evaluation split was scored."]),
        "",
        "## License",
        "",
        ("`other`: the weights were trained on the dataset's images and annotations and carry their terms (see "
         "the dataset card); hoi-bench's code is Apache-2.0."),
        "",
        "## Framework versions",
        "",
        *[f"- {name} {_version(name)}" for name in VERSIONED],
        "",
    ])
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}")


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"
