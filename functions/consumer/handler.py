"""Lambda entry of the consumer (SQS event source with ReportBatchItemFailures): its composition root behind
the shell every entry wears."""

from __future__ import annotations

# Before anything imports pydantic: Powertools' batch utility imports its parser's event models (a tenth
# of a second or more of a cold start, never used here) when it finds pydantic already loaded.
import aws_lambda_powertools.utilities.batch  # noqa: F401

from functions.consumer import bootstrap
from functions.consumer.settings import ConsumerSettings
from shared.lambda_entry import LambdaEntry

lambda_handler = LambdaEntry(ConsumerSettings, bootstrap.build)
