"""This package's version: the installed distribution's, one source for `saga --version` and the MCP
server's `serverInfo` (pyproject.toml's `version`, as installed)."""

from __future__ import annotations

import importlib.metadata

PACKAGE = "loan-saga"


def version() -> str:
    """The installed package's version ("0+unknown" when it is not installed, as from a bare checkout)."""
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"
