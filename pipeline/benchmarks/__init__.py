"""The paper's six benchmarks (FLORES-200, GSM8K, MGSM, HumanEval, MBPP, CodeXGLUE code-to-text): their tasks
(tasks.py), data files checked against SHA256SUMS (data.py), metrics (metrics/) and a runner for any model (run.py,
`python -m pipeline.benchmarks`)."""
