# Newcomer entry points: `make demo` and `make test`. Both create .venv and install everything first.
# `make test-fast` skips the tests marked slow (builds of whole samples, training runs): the edit-test loop.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Test processes (pytest-xdist; each test file stays in one, so module fixtures are built once): the 2 cores of
# the reference machine. More use more memory (each loads torch): `make test WORKERS=4`.
WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -n $(WORKERS) --dist loadfile
STAMP := $(VENV)/.installed
# The CPU build of torch is pinned and installed first, so nothing later pulls a multi-GB CUDA build.
TORCH := torch==2.13.0
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1 HF_UPDATE_DOWNLOAD_COUNTS=0

.PHONY: install demo test test-fast clean

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -e '.[baselines,tracking,matlab,test,space]'
	touch $(STAMP)

demo: $(STAMP)
	hf_home=$$(mktemp -d); trap 'rm -rf "$$hf_home"' EXIT; \
	HF_HOME="$$hf_home" $(OFFLINE) $(VENV)/bin/hoi-bench demo --out demo-output

test: $(STAMP)
	hf_home=$$(mktemp -d); trap 'rm -rf "$$hf_home"' EXIT; \
	HF_HOME="$$hf_home" $(OFFLINE) $(PYTEST)

test-fast: $(STAMP)
	hf_home=$$(mktemp -d); trap 'rm -rf "$$hf_home"' EXIT; \
	HF_HOME="$$hf_home" $(OFFLINE) $(PYTEST) -m "not slow"

clean:
	rm -rf $(VENV) demo-output
