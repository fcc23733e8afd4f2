# Custody's two commands. On a fresh machine, as root:
#   make run    set up, then run a standalone custody node on the sample flow
#               (embedded default: local repositories, no ZooKeeper or HDFS needed)
#   make test   set up, lint, then run the whole test suite against real ZooKeeper, HDFS,
#               Spark and Docker, which it installs and starts itself
# Both are idempotent: downloads are cached (~/.cache/custody, ~/.m2, pip's cache).
# Also: make services (start the real services and print their status), make down,
# make compose (the whole cluster in containers: docker-compose.yml; see docs/operate/compose.md),
# make docs (the documentation site into site/: open site/index.html as a file),
# make lint (ruff and mypy, as configured in pyproject.toml; see docs/develop/lint.md).

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.custody-installed
DATA_DIR ?= .work/hello
FLOW ?= examples/hello.yaml

.PHONY: run test lint setup services down compose docs

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

run: setup
	@echo "custody: running $(FLOW); output files appear in $(DATA_DIR)/out. Ctrl-C stops; a rerun resumes."
	$(VENV)/bin/custody run --flow $(FLOW) --data-dir $(DATA_DIR)

# The suite in two parts: every test but the compose cluster's on two workers, a test
# file to a worker and each worker with its own ZooKeeper, HDFS, Kafka and Spark; then
# the compose cluster's test alone, with the machine to itself. Both parts run; the
# first failure's status is make's. Each part keeps its files under .work/test-tmp/ (pytest
# empties the directory when the part starts): pytest's default, a numbered directory per
# session under /tmp that the session after the next three deletes, made each run delete
# an earlier run's near a million files, minutes of a run spent on another's files.
test: lint
	$(VENV)/bin/custody services install
	mkdir -p .work/test-tmp
	$(VENV)/bin/python -m pytest -n 2 --dist loadfile -m "not whole_machine" --basetemp=.work/test-tmp/suite; first=$$?; \
	  $(VENV)/bin/python -m pytest -m whole_machine --basetemp=.work/test-tmp/whole-machine; second=$$?; \
	  if [ $$first -ne 0 ]; then exit $$first; fi; exit $$second

# The linter, the formatter's check and the type checker, as docs/develop/lint.md says.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

services: setup
	$(VENV)/bin/custody services install
	$(VENV)/bin/custody services up

down:
	$(VENV)/bin/custody services down

# Set-up fetches Hadoop's jars (the HDFS services mount them from the cache) and starts
# the Docker engine with the base image and Compose v2; then the cluster comes up.
compose: setup
	$(VENV)/bin/custody services up --only docker
	docker compose up --detach --build --wait

# The documentation site (mkdocs.yml, docs/), as tests/unit/test_docs_site.py builds it.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site
