"""Idempotency receipts (D1, D2): what a key must look like, how a request is fingerprinted, and
how a stored receipt answers a replay. Storage lives in each service's own adapter."""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from shared.errors import IdempotencyKeyReused, InvalidIdempotencyKey, InvalidOriginRequestId, MissingIdempotencyKey
from shared.keys import RECEIPT_PREFIX, receipt_key
from shared.loan_terms import ID_PATTERN

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
# The ledger position a command was decided on (loans-api refuses it with 412 if the ledger moved).
EXPECTED_SEQ_HEADER = "Expected-Ledger-Seq"
# The caller's id of the request an attempt belongs to (the same on every retry of one request). A receipt
# records it and a replay answers it back, so the caller can tell "my own earlier attempt committed, its
# reply was lost" from "an earlier request committed this" (only the latter is a replay to its own caller).
ORIGIN_HEADER = "Origin-Request-Id"
MAX_KEY_LENGTH = 255
DEFAULT_RECEIPT_TTL_SECONDS = 30 * 24 * 3600  # longer than the longest redelivery path (14-day DLQ)
# A receipt keeps its body zlib-compressed (`bodyZ`, binary) when that is smaller: receipts are written
# inside every command's transaction at 2 write units per KB, and the body is most of their size (a
# loans-api answer carries its event). Lossless, so a replay is still byte for byte; self-contained, so it
# needs no other item. `body` (plain) is still read, for short bodies and for receipts stored before
# compression. The key is not stored twice: the partition key holds it (`idempotencyKey`, written before,
# is still read), so a receipt of loans-api's longest key (255 characters) and answer stays under 1 KB.
_COMPRESSION_LEVEL = 9


# Spaces and tabs around a header's value are not part of it (RFC 9110 section 5.5).
_OPTIONAL_WHITESPACE = " \t"
# Anything but printable ASCII and the space: the characters of an RFC 8941 String, which the IETF
# Idempotency-Key draft makes the header's value.
_NOT_KEY = re.compile(r"[^\x20-\x7e]")
_KEY_RULE = f"a key is 1..{MAX_KEY_LENGTH} printable ASCII characters (spaces and tabs around it are ignored)"


def read_key(key: str | None) -> str | None:
    """The Idempotency-Key header's value as HTTP defines it, or None when the header is absent: the
    one rule both APIs read keys by. The spaces and tabs around it are not part of it (RFC 9110 section
    5.5: a field value excludes them, and a compliant server strips them; http.server keeps trailing
    ones), so `k`, ` k` and `k<TAB>` are one key on every runtime. InvalidIdempotencyKey when what is
    left is empty, longer than 255 characters, or holds anything but printable ASCII and inner spaces:
    control characters and other whitespace are no part of a key, and characters beyond ASCII have no
    one reading across HTTP stacks (http.server decodes them as Latin-1), so one key could be two."""
    if key is None:
        return None
    value = key.strip(_OPTIONAL_WHITESPACE)
    if not value:
        raise InvalidIdempotencyKey(f"the {HEADER} header is empty; {_KEY_RULE}")
    if len(value) > MAX_KEY_LENGTH:
        raise InvalidIdempotencyKey(f"the {HEADER} header is longer than {MAX_KEY_LENGTH} characters")
    if unreadable := _NOT_KEY.search(value):
        character = f"U+{ord(unreadable.group()):04X}"
        raise InvalidIdempotencyKey(
            f"the {HEADER} header holds {character} at character {unreadable.start() + 1}; {_KEY_RULE}"
        )
    return value


_ORIGIN = re.compile(ID_PATTERN)


def read_origin(origin: str | None) -> str | None:
    """The Origin-Request-Id header's value, or None when absent. InvalidOriginRequestId unless it is an
    id (`shared.loan_terms.ID_PATTERN`: 1..64 letters, digits and dashes, as the orchestrator's UUIDs are):
    the receipt records it inside the 1 KB every item of a command keeps to, and DynamoDB sizes a string
    by its UTF-8 bytes, so 64 characters beyond ASCII would be 256 bytes."""
    if origin is None:
        return None
    if not _ORIGIN.fullmatch(origin):
        raise InvalidOriginRequestId(f"the {ORIGIN_HEADER} header must be 1..64 letters, digits and dashes")
    return origin


def require_key(key: str | None) -> str:
    """The header's value (`read_key`); MissingIdempotencyKey when it is absent or blank."""
    found = None if key is None or not key.strip(_OPTIONAL_WHITESPACE) else read_key(key)
    if found is None:
        raise MissingIdempotencyKey(f"every write needs an {HEADER} header ({_KEY_RULE})")
    return found


def fingerprint(method: str, path: str, body: Any) -> str:
    """A hash of what the request asks for. Give it the validated request (`model.model_dump()`), not
    the raw text: canonical JSON, so key order and spacing do not count, and decimals are normalized,
    so `10000`, `10000.0` and `1e4` are the same amount."""
    canonical = json.dumps([method.upper(), path, body], sort_keys=True, separators=(",", ":"), default=_canonical)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _canonical(value: Any) -> str:
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    return str(value)


def key_reused() -> IdempotencyKeyReused:
    """What a key used before for a different request answers (422), on both APIs. Never the key itself: a
    key's scope is internal (caller, operation, key)."""
    return IdempotencyKeyReused(
        f"this {HEADER} was already used for a different request; send a new key for a new request"
    )


@dataclass(frozen=True)
class Answer:
    """What a command answers: its status and body; `replayed` when they are the recorded answer of an
    earlier request (or a command whose effect already stands), sent with `Idempotent-Replayed: true`."""

    status: int
    body: str
    replayed: bool = False
    origin: str | None = None  # on a replay: the request that made the receipt (ORIGIN_HEADER)


@dataclass(frozen=True)
class Receipt:
    """The recorded outcome of a keyed request: replayed byte for byte. `origin`: the caller's id of
    the request whose attempt committed it (ORIGIN_HEADER), when the caller sent one."""

    key: str
    request_hash: str
    status: int
    body: str
    origin: str | None = None

    def to_values(self, expires_at: int, **extra: Any) -> dict[str, Any]:
        """The receipt as item values (TTL attribute `expiresAt`), with `extra` attributes."""
        plain = self.body.encode()
        packed = zlib.compress(plain, _COMPRESSION_LEVEL)
        body: dict[str, Any] = {"bodyZ": packed} if len(packed) < len(plain) else {"body": self.body}
        if self.origin is not None:
            body["origin"] = self.origin
        return {
            **receipt_key(self.key),
            "requestHash": self.request_hash,
            "status": self.status,
            **body,
            "expiresAt": expires_at,
            **extra,
        }

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> Receipt:
        packed = values.get("bodyZ")
        # boto3 reads a binary attribute as `Binary`; bytes() takes it and plain bytes alike.
        body = values["body"] if packed is None else zlib.decompress(bytes(packed)).decode()
        origin = values.get("origin")
        key = values.get("idempotencyKey") or str(values["pk"]).removeprefix(RECEIPT_PREFIX)
        return cls(key, values["requestHash"], int(values["status"]), body, origin and str(origin))

    def replay_for(self, request_hash: str) -> Answer:
        """What a replay answers on loans-api's side (D2): the recorded status and body, byte for byte,
        marked replayed, with the request that made the receipt (ORIGIN_HEADER), whatever the journey did
        since (the orchestrator answers its own replays with the journey as it stands now:
        functions/orchestrator/service.py `_command_as_it_stands`). IdempotencyKeyReused when the receipt records
        a different request."""
        if request_hash != self.request_hash:
            raise key_reused()
        return Answer(self.status, self.body, replayed=True, origin=self.origin)
