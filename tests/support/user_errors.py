"""The assertion every bad-input test makes: the call fails with a UserError whose message is one line."""
import pytest

from pipeline.errors import UserError


def one_line_error(error_type, call, *args, **kwargs) -> str:
    """The call fails with `error_type` (a UserError: the pipeline prints it as one line) and a one-line message."""
    with pytest.raises(error_type) as caught:
        call(*args, **kwargs)
    assert isinstance(caught.value, UserError)
    message = str(caught.value)
    assert message and "\n" not in message, message
    return message
