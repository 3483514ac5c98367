# havln_robot -- the two commands a newcomer needs:  make demo   |   make test
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# DDS stays on loopback for everything started from here (see config/fastdds_loopback.xml).
export RMW_IMPLEMENTATION := rmw_fastrtps_cpp
export FASTRTPS_DEFAULT_PROFILES_FILE := $(CURDIR)/config/fastdds_loopback.xml
# SYSTEM_DEFAULT: rmw applies the profile as written (LOCALHOST adds a non-loopback socket; see havln_robot/dds.py)
export ROS_AUTOMATIC_DISCOVERY_RANGE := SYSTEM_DEFAULT
export MUJOCO_GL ?= egl
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: setup demo test lint unit clean

setup:
	@bash scripts/setup.sh

demo: setup
	$(VENV)/bin/havln-robot demo $(ARGS)

lint: setup
	$(VENV)/bin/ruff check havln_robot test launch
	$(VENV)/bin/ruff format --check havln_robot test launch
	$(VENV)/bin/lint-imports --config .importlinter

# The suite runs on every core (up to 4 pytest-xdist workers, each on its own ROS domains: test/conftest.py).
test: setup lint
	$(PY) -m pytest -q -n auto --maxprocesses 4 --dist worksteal $(or $(ARGS),test)

clean:
	rm -rf $(VENV) build install log .pytest_cache .ruff_cache
