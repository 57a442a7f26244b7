"""What the tests, the bench and the docs build run, and a user never does: the `make docs` renderer
(tools/docs/), the in-process transport that serves a function's requests without a socket
(tools/inprocess.py), free ports for servers another process starts (tools/ports.py). Not installed
with the `saga` package; mypy and ruff check it as they do the rest."""
