"""Lambda entry for loans-api: its composition root (bootstrap.py) behind the shell every entry wears."""

from __future__ import annotations

from aws_lambda_powertools.logging import correlation_paths

from functions.loans_api import bootstrap
from functions.loans_api.settings import LoansSettings
from shared.lambda_entry import LambdaEntry

lambda_handler = LambdaEntry(LoansSettings, bootstrap.build, correlation_paths.API_GATEWAY_REST)
