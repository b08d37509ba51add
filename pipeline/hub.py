"""Is the Hugging Face hub reachable? Asked once before any hub download, so that an offline machine fails in
seconds with a clear message instead of after a minute of retries."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse


def hub_reachable(timeout_s: float = 3.0) -> tuple[bool, str]:
    """(reachable, why not). Honours HF_HUB_OFFLINE / HF_DATASETS_OFFLINE and HF_ENDPOINT at call time."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes"} or \
            os.environ.get("HF_DATASETS_OFFLINE", "").lower() in {"1", "true", "yes"}:
        return False, "HF_HUB_OFFLINE is set"
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as error:
        return False, f"{host} unreachable ({error.strerror or error})"
    return True, ""
