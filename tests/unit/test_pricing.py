"""Pricing against a hand-checked annuity table (payments computed independently, to the cent)."""

from decimal import Decimal

import pytest

from functions.loans_api import pricing

# amount, months, annual rate, monthly payment, total repayable.
# Payments checked by hand with P*r/(1-(1+r)^-n), r = rate/12, rounded half-up to the cent.
ANNUITY_TABLE = [
    ("10000", 36, "0.0790", "312.90", "11264.40"),
    ("5000", 12, "0.0690", "432.40", "5188.80"),
    ("500", 3, "0.0690", "168.59", "505.77"),
    ("25000", 60, "0.0840", "511.71", "30702.60"),
    ("100000", 120, "0.0940", "1288.51", "154621.20"),
    ("19999.99", 13, "0.0790", "1610.29", "20933.77"),
]


@pytest.mark.parametrize(("amount", "months", "rate", "payment", "total"), ANNUITY_TABLE)
def test_quote_matches_the_hand_checked_table(amount, months, rate, payment, total):
    quote = pricing.quote(Decimal(amount), months)
    assert quote.annual_rate == Decimal(rate)
    assert quote.monthly_payment == Decimal(payment)
    assert quote.total_repayable == Decimal(total)


def test_a_payment_has_two_decimal_places_and_the_total_is_it_times_the_months():
    quote = pricing.quote(Decimal("1234.56"), 24)
    assert quote.monthly_payment.as_tuple().exponent == -2
    assert quote.total_repayable == quote.monthly_payment * 24


def test_the_rate_rises_with_the_term_and_is_lower_for_a_large_long_loan():
    assert pricing.annual_rate(Decimal(1000), 12) == Decimal("0.0690")
    assert pricing.annual_rate(Decimal(1000), 13) == Decimal("0.0790")
    assert pricing.annual_rate(Decimal(1000), 61) == Decimal("0.0990")
    assert pricing.annual_rate(Decimal(20000), 61) == Decimal("0.0940")


def test_at_a_zero_rate_the_payment_is_the_amount_over_the_months():
    assert pricing.monthly_payment(Decimal(1200), Decimal(0), 12) == Decimal("100.00")
