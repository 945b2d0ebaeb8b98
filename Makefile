# Developer shortcuts; every target runs the tools installed in .venv (`make install` creates it).

.PHONY: install test test-postgresql lint fmt bench

install:
	python3 -m venv .venv && .venv/bin/pip install -q -e '.[test,lint]'

test:
	.venv/bin/pytest -q

test-postgresql:
	TB_TEST_STORE=postgresql .venv/bin/pytest -q

lint:
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy

fmt:
	.venv/bin/ruff format .
	.venv/bin/ruff check --fix .

bench:
	.venv/bin/python bench/orchestrator_overhead.py 30 2
