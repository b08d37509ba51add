"""The code-execution sandbox: runs untrusted generated code (HumanEval, MBPP, the code world's rows) and decides,
out of its reach, whether its tests passed.

harness.py is the harness side (`run_programs`, `run_program`, `SandboxLimits`, `isolation_level`); it starts
`_sandbox_boot.py` as a script (`python -I -S`), which imports its siblings `_sandbox_protocol` (with its parts
`_sandbox_channel`, `_sandbox_values`, `_sandbox_endpoint`, `_sandbox_remote`), `_sandbox_runner` and `_sandbox_tester`
by plain name from this folder: those scripts never import the package. The threat model:
pipeline/benchmarks/README.md ("Sandbox").

This file imports nothing: every stage's DVC deps hold it (pipeline/code_deps.py counts a file whose name a module
it runs holds in a string, and code_deps.py itself names `__init__.py`), so importing the harness here would make
every stage depend on the sandbox.
"""
