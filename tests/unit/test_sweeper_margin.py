"""The sweeper's late-commit margin (functions/relay/settings.py) is what its reasoning says it is: an
eventId is minted by loans-api before its transaction commits, so the margin covers loans-api's
longest attempt, the clocks' skew between loans-api and the sweeper, and the index's propagation."""

from functions.relay.settings import LATE_COMMIT_MARGIN_SECONDS, SWEEPER_TIMEOUT_SECONDS, RelaySettings
from shared import topology
from shared.lease import CLOCK_SKEW_MARGIN

# Kept for the journey-changes index's propagation: DynamoDB propagates to a global secondary index "within
# a fraction of a second under normal conditions" (Developer Guide, "Using Global Secondary Indexes",
# https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.Reads), not at once.
INDEX_PROPAGATION_ALLOWANCE_SECONDS = 15


def test_the_margin_covers_loans_apis_longest_attempt_the_clock_skew_and_the_index_propagation():
    needed = (
        topology.LOANS_API.timeout_seconds + CLOCK_SKEW_MARGIN.total_seconds() + INDEX_PROPAGATION_ALLOWANCE_SECONDS
    )
    assert needed <= LATE_COMMIT_MARGIN_SECONDS
    assert RelaySettings.model_fields["sweep_margin_seconds"].default == LATE_COMMIT_MARGIN_SECONDS


def test_a_sweep_is_bounded_well_inside_its_function_timeout():
    # Given the wall-time budget a sweep stops starting new batches at, Then what one batch can still add
    # (two reads of 100 with their rounds of UnprocessedKeys, ten PublishBatch calls) fits in what is left
    budget = RelaySettings.model_fields["sweep_budget_seconds"].default
    assert budget <= SWEEPER_TIMEOUT_SECONDS - 15
