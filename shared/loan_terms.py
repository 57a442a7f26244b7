"""What a loan request may ask for: bounds and input types shared by loans-api and the orchestrator."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated

from pydantic import Field

MIN_AMOUNT = Decimal("500")
MAX_AMOUNT = Decimal("100000")
MIN_TERM_MONTHS = 3
MAX_TERM_MONTHS = 120
ID_PATTERN = r"^[A-Za-z0-9-]{1,64}$"

Amount = Annotated[
    Decimal,
    Field(
        ge=MIN_AMOUNT,
        le=MAX_AMOUNT,
        decimal_places=2,
        description="Principal in the loan's currency, 500 to 100000, at most 2 decimal places "
        '(a JSON number or a decimal string such as "10000.00").',
    ),
]
TermMonths = Annotated[
    int,
    Field(strict=True, ge=MIN_TERM_MONTHS, le=MAX_TERM_MONTHS, description="Term in whole months, 3 to 120."),
]
EntityId = Annotated[str, Field(pattern=ID_PATTERN, description="An id: letters, digits and dashes, 1..64.")]
