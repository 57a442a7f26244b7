"""What moto (5.x) leaves out of the deployment-facing APIs `saga verify` reads, added so the local
endpoint answers as AWS does (tests/e2e/test_verify.py proves `saga verify` against it):
- Lambda's GetAccountSettings (moto has no route for it): the account's concurrency limit and what
  stays unreserved, from the functions' reservations (`ACCOUNT_CONCURRENCY`, Lambda's default quota);
- moto's CloudFormation ignores a function's `Architectures` and `Layers`, and a layer's
  `CompatibleArchitectures`, and a layer's Ref is not its ARN: applied here;
- an event source mapping is recorded (and listed) but never driven: moto would invoke the function
  in Docker; locally the runtime's pollers are the mappings (saga/local/pollers.py);
- CloudWatch's SetAlarmState changes the state in moto and notifies nobody: here, as in CloudWatch, a
  state change runs the alarm's actions for the new state (an SNS topic's, published to).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from typing import Any

from moto.awslambda.models import LambdaBackend, LambdaFunction, LayerVersion, lambda_backends
from moto.cloudwatch.models import CloudWatchBackend
from moto.dynamodb.models import dynamodb_backends
from moto.sns.models import sns_backends
from moto.sqs.models import sqs_backends

# Lambda's default concurrency quota per account and region.
ACCOUNT_CONCURRENCY = 1000
ACCOUNT_SETTINGS_PATH = "/2016-08-19/account-settings"
_ALARM_ACTIONS = {"ALARM": "alarm_actions", "OK": "ok_actions", "INSUFFICIENT_DATA": "insufficient_data_actions"}


class AccountSettings:
    """WSGI middleware: answers Lambda's GetAccountSettings in front of moto, from moto's functions."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self._app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "").rstrip("/") != ACCOUNT_SETTINGS_PATH or environ["REQUEST_METHOD"] != "GET":
            return self._app(environ, start_response)
        reserved = sum(
            int(fn.reserved_concurrency or 0)
            for backend in lambda_backends.values()
            for region in backend.values()
            for fn in region.list_functions()
        )
        body = json.dumps({
            "AccountLimit": {"ConcurrentExecutions": ACCOUNT_CONCURRENCY,
                             "UnreservedConcurrentExecutions": ACCOUNT_CONCURRENCY - reserved},
            "AccountUsage": {"FunctionCount": 0, "TotalCodeSize": 0},
        }).encode()  # fmt: skip
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]


_original_function = LambdaFunction.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]


@functools.wraps(_original_function)
def _function_from_template(cls: type[LambdaFunction], resource_name: str, cloudformation_json: Any, *args: Any,
                            **kwargs: Any) -> LambdaFunction:  # fmt: skip
    fn: LambdaFunction = _original_function(cls, resource_name, cloudformation_json, *args, **kwargs)
    properties = cloudformation_json["Properties"]
    if "Architectures" in properties:
        fn.architectures = properties["Architectures"]
    if "Layers" in properties:
        fn.layers = fn._get_layers_data(properties["Layers"])
    return fn


_original_layer = LayerVersion.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]


@functools.wraps(_original_layer)
def _layer_from_template(cls: type[LayerVersion], resource_name: str, cloudformation_json: Any, *args: Any,
                         **kwargs: Any) -> LayerVersion:  # fmt: skip
    layer: LayerVersion = _original_layer(cls, resource_name, cloudformation_json, *args, **kwargs)
    layer.compatible_architectures = cloudformation_json["Properties"].get("CompatibleArchitectures", [])
    return layer


_original_mapping = LambdaBackend.create_event_source_mapping


@functools.wraps(_original_mapping)
def _mapping_not_driven(self: LambdaBackend, spec: dict[str, Any]) -> Any:
    mapping = _original_mapping(self, spec)
    for queue in sqs_backends[self.account_id][self.region_name].queues.values():
        queue.lambda_event_source_mappings.pop(mapping.function_arn, None)
    for table in dynamodb_backends[self.account_id][self.region_name].tables.values():
        table.lambda_event_source_mappings.pop(mapping.function_arn, None)
    return mapping


_original_set_state = CloudWatchBackend.set_alarm_state


@functools.wraps(_original_set_state)
def _set_alarm_state(self: CloudWatchBackend, alarm_name: str, reason: str, reason_data: str, state_value: str) -> None:
    alarm = self.alarms.get(alarm_name)
    before = None if alarm is None else alarm.state_value
    _original_set_state(self, alarm_name, reason, reason_data, state_value)
    if alarm is None or before == state_value:
        return
    message = json.dumps({
        "AlarmName": alarm_name, "AlarmDescription": alarm.description, "NewStateValue": state_value,
        "NewStateReason": reason, "OldStateValue": before, "AlarmArn": alarm.alarm_arn,
        "Region": self.region_name, "AWSAccountId": self.account_id,
    })  # fmt: skip
    for arn in getattr(alarm, _ALARM_ACTIONS[state_value]) or []:
        if arn.startswith("arn:aws:sns:"):
            _, _, _, region, account, _ = arn.split(":", 5)
            sns_backends[account][region].publish(message, arn=arn, subject=f'ALARM: "{alarm_name}"'[:100])


def install() -> None:
    """Patch moto's CloudFormation layers and functions, its mappings and SetAlarmState (idempotent)."""
    LambdaFunction.create_from_cloudformation_json = classmethod(_function_from_template)  # type: ignore[assignment]
    LayerVersion.create_from_cloudformation_json = classmethod(_layer_from_template)  # type: ignore[assignment]
    # CloudFormation's Ref of a layer version is its ARN (moto's is the object).
    LayerVersion.physical_resource_id = property(lambda layer: layer.arn)  # type: ignore[attr-defined]
    LambdaBackend.create_event_source_mapping = _mapping_not_driven  # type: ignore[method-assign]
    CloudWatchBackend.set_alarm_state = _set_alarm_state  # type: ignore[method-assign]
