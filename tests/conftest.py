# Imported before any test module imports torch: pipeline/__init__.py sets the OpenMP wait policy, which libgomp
# reads when torch loads it (see there for why).
import pipeline  # noqa: F401


# `make test` runs the suite on two workers (pytest-xdist, `--dist loadgroup`: each test its own work unit, handed
# out in collection order). The two smoke `dvc repro` tests take minutes each: started first, one per worker, the
# rest of the suite fills in beside them instead of waiting behind them. Then the SIGKILL/resume tests (the next
# longest) and the code paper preset's stand-in `dvc repro` (SmolLM2 for every hub model). Within each rank the
# usual order is kept.
_LONG_FIRST = ("tests/test_pipeline_smoke.py", "tests/test_code_presets.py", "tests/test_train_resume.py")


def pytest_collection_modifyitems(session, config, items):
    def rank(item):
        path = item.nodeid.split("::", 1)[0]
        return _LONG_FIRST.index(path) if path in _LONG_FIRST else len(_LONG_FIRST)
    items.sort(key=rank)  # stable
