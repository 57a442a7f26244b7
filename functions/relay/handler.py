"""Lambda entries of the relay (DynamoDB Streams) and of the sweeper (schedule): their composition roots
behind the shell every entry wears."""

from __future__ import annotations

from functions.relay import bootstrap
from functions.relay.settings import RelaySettings
from shared.lambda_entry import LambdaEntry

lambda_handler = LambdaEntry(RelaySettings, bootstrap.build_stream_handler)
sweeper_handler = LambdaEntry(RelaySettings, bootstrap.build_sweep_handler, name="sweeper_handler")
