"""Exceptions of the benchmark package: each carries a one-line message meant for the user."""

from pipeline.errors import UserError


class BenchmarkError(UserError):
    """Bad input or configuration for a benchmark run (shown to the user as one line)."""


class DataUnavailableError(BenchmarkError):
    """A benchmark's data could be read neither from the local copy nor from the hub."""


class SandboxError(BenchmarkError):
    """The execution sandbox itself could not be set up (never raised for a failing program)."""
