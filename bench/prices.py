"""The one price table: AWS us-east-1, on-demand, list prices without free tiers or volume discounts.

Read on 2026-11-30 from the pages below (stored copies; AWS renders most figures client-side, so each
figure was checked against at least one page that states it in text). Change a price here and every
figure in BENCHMARKS.md and docs/SCALE.md follows on the next `make bench`.

* DynamoDB on-demand (after the November 2024 cut): $0.625 per million write request units, $0.125 per
  million read request units; stream read request units $0.02 per 100,000, and GetRecords calls made by
  a Lambda event source are not charged.
  https://aws.amazon.com/dynamodb/pricing/on-demand/
* Lambda, arm64: $0.0000133334 per GB-second (x86_64: $0.0000166667), $0.20 per million requests;
  duration billed per 1 ms. https://aws.amazon.com/lambda/pricing/
* SNS standard topic: $0.50 per million API requests, each 64 KB chunk of a request's payload billed
  as one request; deliveries to SQS queues are not charged. https://aws.amazon.com/sns/pricing/
* SQS standard queue: $0.40 per million requests, each 64 KB chunk billed as one request (Lambda's
  poller's ReceiveMessage and DeleteMessageBatch calls are billed like any other).
  https://aws.amazon.com/sqs/pricing/
* API Gateway REST API: $3.50 per million requests (first 333 million a month).
  https://aws.amazon.com/api-gateway/pricing/
"""

from __future__ import annotations

from dataclasses import dataclass

PRICES_READ_ON = "2026-11-30"
REGION = "us-east-1"
MILLION = 1_000_000


@dataclass(frozen=True)
class Prices:
    dynamodb_write_request_unit: float = 0.625 / MILLION
    dynamodb_read_request_unit: float = 0.125 / MILLION
    # Stream reads by a Lambda event source (the relay) are free; a custom poller would pay this.
    stream_read_request_unit: float = 0.02 / 100_000
    stream_reads_by_lambda_are_free: bool = True
    lambda_gb_second_arm64: float = 0.0000133334
    lambda_request: float = 0.20 / MILLION
    sns_request: float = 0.50 / MILLION
    sqs_request: float = 0.40 / MILLION
    api_gateway_rest_request: float = 3.50 / MILLION


US_EAST_1 = Prices()
