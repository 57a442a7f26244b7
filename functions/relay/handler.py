"""Lambda entries of the relay (DynamoDB Streams) and of the sweeper (schedule): their composition roots
behind the shell every entry wears."""

from __future__ import annotations

# Before anything imports pydantic: Powertools' batch utility imports its parser's event models (a tenth
# of a second or more of a cold start, never used here) when it finds pydantic already loaded.
import aws_lambda_powertools.utilities.batch  # noqa: F401

from functions.relay import bootstrap
from functions.relay.settings import RelaySettings
from shared.lambda_entry import LambdaEntry

lambda_handler = LambdaEntry(RelaySettings, bootstrap.build_stream_handler)
sweeper_handler = LambdaEntry(RelaySettings, bootstrap.build_sweep_handler, name="sweeper_handler")
