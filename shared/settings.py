"""Settings common to every function. Each function's Settings extends this; the Lambda entry builds
it from the environment, the local runtime and the tests pass it explicitly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field


class BaseSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    region: str = "us-east-1"
    # None in AWS; the moto server's URL locally.
    aws_endpoint_url: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self:
        """Fields read from UPPER_SNAKE environment variables of the same name."""
        values = {name: environ[name.upper()] for name in cls.model_fields if name.upper() in environ}
        if "region" not in values and "AWS_REGION" in environ:
            values["region"] = environ["AWS_REGION"]
        return cls.model_validate(values)

    def group(self, prefix: str) -> dict[str, Any]:
        """The fields named `prefix` + a name, by that name: the keyword arguments of what they configure
        (`RetryPolicy(**settings.group("retry_"))`: `retry_attempts` is its `attempts`)."""
        return {name.removeprefix(prefix): value for name, value in self if name.startswith(prefix)}

    def to_env(self) -> dict[str, str]:
        """The environment variables `from_env` reads back into these settings: the fields given when
        they were made (the others are their defaults on both sides). What the local runtime gives a
        function's container, as infra gives the deployed function (infra/functions.py `configure`)."""
        return {
            name.upper(): str(value).lower() if isinstance(value, bool) else str(value)
            for name, value in self.model_dump(exclude_unset=True).items()
            if value is not None
        }


def _default_changes_index_shards() -> int:
    """The shards at the default target rate, for a function the stack did not tell (the stack tells every one
    that reads the loans table): shared/capacity.py is imported then, not at every function's init."""
    from shared.capacity import DEFAULT_CAPACITY

    return DEFAULT_CAPACITY.changes_index_shards


class LoansTableSettings(BaseSettings):
    """Settings of a function that reads or writes the loans table (loans-api, the relay and the sweeper, the
    audit)."""

    loans_table_name: str
    # The journey-changes index's shards per event type (shared/keys.py), from the target rate: loans-api
    # writes to this many; the sweeper and the audit walk this many, or more if a larger count was recorded.
    changes_index_shards: int = Field(default_factory=_default_changes_index_shards, ge=1)
