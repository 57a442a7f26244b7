"""Deterministic annuity pricing in Decimal. One module, one secret: the rate table and rounding."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext

from shared.loan_terms import MAX_TERM_MONTHS

CENT = Decimal("0.01")
RATE_QUANTUM = Decimal("0.0001")

# (longest term in months, annual rate): the first band that holds the term applies.
_RATE_BANDS: tuple[tuple[int, Decimal], ...] = (
    (12, Decimal("0.0690")),
    (36, Decimal("0.0790")),
    (60, Decimal("0.0890")),
    (MAX_TERM_MONTHS, Decimal("0.0990")),
)
# Larger loans get a lower rate.
_LARGE_LOAN = Decimal("20000")
_LARGE_LOAN_DISCOUNT = Decimal("0.0050")


@dataclass(frozen=True)
class Quote:
    annual_rate: Decimal
    monthly_payment: Decimal
    total_repayable: Decimal


def annual_rate(amount: Decimal, term_months: int) -> Decimal:
    rate = next(rate for longest, rate in _RATE_BANDS if term_months <= longest)
    if amount >= _LARGE_LOAN:
        rate -= _LARGE_LOAN_DISCOUNT
    return rate.quantize(RATE_QUANTUM)


def monthly_payment(amount: Decimal, rate: Decimal, term_months: int) -> Decimal:
    """The annuity payment P*r / (1 - (1+r)^-n) with r = annual rate / 12, rounded half-up to cents."""
    with localcontext() as context:
        context.prec = 34
        monthly_rate = rate / 12
        if monthly_rate == 0:
            payment = amount / term_months
        else:
            payment = amount * monthly_rate / (1 - (1 + monthly_rate) ** -term_months)
        return payment.quantize(CENT, rounding=ROUND_HALF_UP)


def quote(amount: Decimal, term_months: int) -> Quote:
    rate = annual_rate(amount, term_months)
    payment = monthly_payment(amount, rate, term_months)
    return Quote(annual_rate=rate, monthly_payment=payment, total_repayable=(payment * term_months).quantize(CENT))
