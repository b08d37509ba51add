"""The errors that are the user's to fix (bad config, missing input): entry points print their message as one
line and exit 2 instead of showing a traceback."""


class UserError(Exception):
    """An error whose message alone tells the user what to change."""


class PipelineError(UserError):
    """Bad pipeline input or a missing upstream output."""
