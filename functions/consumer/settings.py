from __future__ import annotations

from shared.settings import BaseSettings


class ConsumerSettings(BaseSettings):
    journeys_table_name: str
