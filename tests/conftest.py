# Imported before any test module imports torch: pipeline/__init__.py sets the OpenMP wait policy, which libgomp
# reads when torch loads it (see there for why).
import pipeline  # noqa: F401


# `make test` runs the suite on two workers (pytest-xdist, `--dist loadgroup`: each test its own work unit, handed
# out in collection order). The two smoke `dvc repro` tests take minutes each: started first, one per worker, the
# rest of the suite fills in beside them instead of waiting behind them. Then the paper presets' stand-in chains
# (a real pretrained model through every stage: minutes) and the SIGKILL/resume tests (the next longest). Within
# each rank the usual order is kept.
_LONG_FIRST = ("tests/test_pipeline_smoke.py", "stand_in", "tests/test_train_resume.py", "tests/test_distributed.py")


def pytest_collection_modifyitems(session, config, items):
    def rank(item):
        path, _, name = item.nodeid.partition("::")
        for i, key in enumerate(_LONG_FIRST):
            if path == key or key in name:
                return i
        return len(_LONG_FIRST)
    items.sort(key=rank)  # stable
