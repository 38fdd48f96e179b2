# Two commands a newcomer needs: `make demo` and `make test`. Both create .venv and install into it
# (CPU-only torch, pinned by constraints.txt), then run.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install demo test bench bench-scale clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[offline,serve,dev,stores]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/graphrag-suite demo $(ARGS)

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest $(ARGS)

bench: $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[offline,serve,dev,stores,bench]"
	bash benchmarks/run_all.sh

# Index time per stage, peak memory, disk and retrieval latency as the synthetic corpus grows
# (benchmarks/results/scale.md). scale.py refuses sizes above 30,000 unless ARGS has --max-size.
SIZES ?= 1000,3000,10000
bench-scale: $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[offline,serve,dev,stores,bench]"
	HF_HUB_OFFLINE=1 $(PY) benchmarks/scale.py --sizes $(SIZES) $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .cache
