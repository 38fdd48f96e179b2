# Two commands a newcomer needs: `make demo` and `make test`. Both create .venv and install into it
# (CPU-only torch, pinned by constraints.txt), then run.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install demo test bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[offline,serve,dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/graphrag-suite demo $(ARGS)

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest $(ARGS)

bench: $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[offline,serve,dev,bench]"
	bash benchmarks/run_all.sh

clean:
	rm -rf $(VENV) .pytest_cache .cache
