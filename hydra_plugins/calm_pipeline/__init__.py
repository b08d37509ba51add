"""Registers the pipeline's OmegaConf resolver (`calm_dag`: pipeline/params.py, the DAG of pipeline/stages.py, written
to dvc_stages.yaml beside the params.yaml DVC writes) when DVC's Hydra integration composes conf/ for
`dvc exp run -S ...`: DVC imports the `hydra_plugins` packages under `hydra.plugins_path` (the repository root by
default) before composing."""
from pipeline.params import register_resolver

register_resolver()
