"""Lambda entry of the scheduled audit (an EventBridge schedule): its composition root behind the shell every
entry wears."""

from __future__ import annotations

from functions.auditor import bootstrap
from functions.auditor.settings import AuditorSettings
from shared.lambda_entry import LambdaEntry

lambda_handler = LambdaEntry(AuditorSettings, bootstrap.build)
