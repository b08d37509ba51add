"""experiments/table4_xtok/replicate_mbpp.py replicates code_xtok's MBPP comparison on problems nothing has used:
its rows must be the ones the world itself would build for a longer test subset (same prompts, tests and program
prefixes), and none of them a test or dev item."""

import pytest
from tests.support.experiment_scripts import load_experiment
from tests.support.fresh_repo import BENCHMARKS, HAS_BENCHMARKS

from pipeline.params import compose_params

if not HAS_BENCHMARKS:
    pytest.skip("needs ../shared/benchmarks (MBPP)", allow_module_level=True)

replicate = load_experiment("table4_xtok/replicate_mbpp.py")


def test_replication_rows_are_the_worlds_own_rows_for_the_items_after_test_and_dev():
    from pipeline.worlds.code.real_benchmarks import benchmark_sets

    params = compose_params(["world=[code_xtok]"])
    data = params["worlds"]["code_xtok"]["data"]
    data["benchmarks_dir"] = str(BENCHMARKS)
    built = benchmark_sets(data)
    n_test, n_dev = len(built["t2c_test"]), len(built["t2c_dev"])
    rows = replicate.replication_rows(params, 7)

    # the same rows the world builds when its test subset runs on past the dev slice
    longer = benchmark_sets({**data, "benchmark_limits": {**data["benchmark_limits"], "t2c_test": n_test + n_dev + 7},
                             "benchmark_dev": {}})["t2c_test"]
    assert rows == longer[n_test + n_dev:]
    assert longer[:n_test] == built["t2c_test"] and longer[n_test:n_test + n_dev] == built["t2c_dev"]
    assert not {r["id"] for r in rows} & {r["id"] for r in built["t2c_test"] + built["t2c_dev"]}


def test_dev_eval_scores_the_dev_items_reference_programs_as_the_world_scores_the_test_items():
    """dev_eval's bpb_code_dev (the dev slices' reference programs, for choices) is derived by the rule the world
    builds bpb_code_test by: applied to the test sets, it gives the world's own rows."""
    from pipeline.worlds.code.real_benchmarks import benchmark_sets, bits_per_byte_sets

    dev_eval = load_experiment("table4_xtok/dev_eval.py")
    data = compose_params(["world=[code_xtok]"])["worlds"]["code_xtok"]["data"]
    data["benchmarks_dir"] = str(BENCHMARKS)
    built = benchmark_sets(data)
    world_rows = bits_per_byte_sets({**data, "bits_per_byte": {"code": True}}, built, {}, [])["bpb_code_test"]
    assert dev_eval.reference_texts(built["cc_test"] + built["t2c_test"]) == world_rows
    assert dev_eval.DERIVED["bpb_code_dev"] == ("cc_dev", "t2c_dev") and built["cc_dev"] and built["t2c_dev"]
