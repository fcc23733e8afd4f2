# Custody's two commands. On a fresh machine, as root:
#   make run    set everything up, start the real services, print the status of each
#   make test   set everything up, run the whole test suite against the real services
# Both are idempotent: downloads are cached (~/.cache/custody, ~/.m2, pip's cache).

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.custody-installed

.PHONY: run test setup down

setup: $(STAMP)
	$(VENV)/bin/custody services install

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

run: setup
	$(VENV)/bin/custody services up

test: setup
	$(VENV)/bin/python -m pytest

down:
	$(VENV)/bin/custody services down
