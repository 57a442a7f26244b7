"""The agents of the soak (tests/chaos/test_soak.py): random scripts of commands sent in bursts by several
agents at once on one journey, what they saw (Tally), and a sampler that checks versions never go back."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tests.system import Progress, System


@dataclass(frozen=True)
class Command:
    name: str  # create, simulate, accept, disburse, cancel
    body: dict[str, Any] | None = None
    key: str | None = None


@dataclass
class Tally:
    """What the agents saw, shared by every agent thread."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    statuses: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)  # 409s and 422s by problem type
    retryable: Counter[str] = field(default_factory=Counter)  # the 5xx agents retried, by problem type
    violations: list[str] = field(default_factory=list)
    # per journey: what was asked (for the duplicate bound) and what was acknowledged (for "lost")
    asked: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    acknowledged: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    keys_seen: set[tuple[str, str]] = field(default_factory=set)
    retried_5xx: int = 0
    unconverged: int = 0
    most_tries: int = 0  # the most sends one command needed before an answer other than a 5xx
    # Moves whenever an agent gets an answer other than a 5xx: the system is making progress
    progress: Progress = field(default_factory=Progress)
    # per journey: the newest Control Record any agent has read (what accept and disburse name)
    last_read: dict[str, dict[str, Any]] = field(default_factory=dict)

    def read(self, journey_id: str, record: dict[str, Any]) -> None:
        with self.lock:
            if record.get("version", -1) >= self.last_read.get(journey_id, {}).get("version", -1):
                self.last_read[journey_id] = record

    def named(self, journey_id: str, command: str) -> dict[str, Any]:
        """What an agent names for accept or disburse: the quote or the acceptance of the record it last
        read ({} if it holds none): often stale while other agents race it, which loans-api refuses."""
        with self.lock:
            record = self.last_read.get(journey_id, {})
        part = "simulation" if command == "accept" else "acceptance"
        held = record.get(part)
        return {} if not held else {f"{part}Id": held[f"{part}Id"]}

    def note(self, status: int) -> None:
        with self.lock:
            self.statuses[f"http {status}"] += 1
        if status < 500:
            self.progress.moved()


class Agents:
    """The agents of the soak: each command is sent by one of them, from `pool`, into `tally`."""

    def __init__(self, system: System, tally: Tally, pool: ThreadPoolExecutor) -> None:
        self.system, self.tally, self.pool = system, tally, pool

    def send(self, journey_id: str, command: Command) -> Any:
        """One agent's command: retried while it answers a retryable 5xx, as an LLM told so would. It has
        not converged once no agent got anything but a 5xx for a while (`tally.progress`): not a count of
        tries, since how many a command needs depends on the machine's load (a busy machine runs into the
        request's deadline more often)."""
        path = "/journeys" if command.name == "create" else f"/journeys/{journey_id}/{command.name}"
        headers = {} if command.key is None else {"Idempotency_Key": command.key}
        body = command.body
        if command.name in ("accept", "disburse"):
            body = self.tally.named(journey_id, command.name)
        attempt = 0
        while True:
            attempt += 1
            status, payload = self.system.api("POST", path, body, **headers)
            self.tally.note(status)
            if status < 500:
                with self.tally.lock:
                    self.tally.most_tries = max(self.tally.most_tries, attempt)
                break
            if not (isinstance(payload, dict) and payload.get("retryable") is True):
                self.violation(f"{command} on {journey_id}: {status} not retryable: {payload}")
                return None
            with self.tally.lock:
                self.tally.retried_5xx += 1
                self.tally.retryable[f"{status} {str(payload.get('type', '')).rsplit(':', 1)[-1]}"] += 1
                if command.key is None and journey_id:
                    # Without a key, a repeat is a new command (a simulate makes another quote): the API
                    # says so, and an agent that wants a repeat to be safe sends a key.
                    self.tally.asked[journey_id][command.name] += 1
            if self.tally.progress.stalled():
                with self.tally.lock:
                    self.tally.unconverged += 1
                self.violation(
                    f"{command} on {journey_id}: still {status} after {attempt} tries, and no agent got anything"
                    f" but a 5xx for {self.tally.progress.stall_seconds:.0f} s: {payload}"
                )
                return None
            time.sleep(min(0.1 * attempt, 2.0))
        jid = journey_id or (payload or {}).get("journeyId", "")
        if status in (200, 201):
            with self.tally.lock:
                if payload.get("lastAppliedEventId"):
                    self.tally.acknowledged[jid].add(payload["lastAppliedEventId"])
            self.tally.read(jid, payload)
            return payload
        problem = str((payload or {}).get("type", ""))
        reused = status == 422 and problem.endswith("idempotency-key-reused")
        # An agent whose last read held nothing to name (its simulate still unanswered) is told to name it.
        unnamed = status == 422 and problem.endswith("validation") and body == {}
        if status == 409 or reused or unnamed:
            with self.tally.lock:
                self.tally.refusals[problem.rsplit(":", 1)[-1] or f"http {status}"] += 1
            return payload
        self.violation(f"{command} on {journey_id}: {status} {payload}")
        return None

    def burst(self, journey_id: str, commands: list[Command]) -> list[Any]:
        """Several agents send their commands for one journey at the same moment."""
        with self.tally.lock:
            for command in commands:
                # A keyed command counts once however often it is sent; each unkeyed send is a command.
                if command.key is None or (journey_id, command.key) not in self.tally.keys_seen:
                    self.tally.asked[journey_id][command.name] += 1
                if command.key is not None:
                    self.tally.keys_seen.add((journey_id, command.key))
        futures = [self.pool.submit(self.send, journey_id, command) for command in commands]
        return [future.result() for future in futures]

    def violation(self, what: str) -> None:
        with self.tally.lock:
            self.tally.violations.append(what)


# What the scripts make agents race on: `script` names each race it puts in a journey's script, and the
# soak checks that its journeys' scripts hold every one (a smaller SOAK_JOURNEYS must still cover them).
RACES = frozenset({
    "keyed simulate sent twice at once", "unkeyed simulate sent twice at once", "one key, two bodies at once",
    "re-simulate against accept", "accepts at once", "disbursements at once", "cancels at once",
    "disburse against cancel", "cancel against simulate", "disburse against simulate",
    "keyed simulate repeated later, with a disburse", "keyed simulate repeated later, with a cancel",
})  # fmt: skip


@dataclass(frozen=True)
class Script:
    """One journey's bursts (after its creation), and the races they hold (RACES)."""

    bursts: list[list[Command]]
    races: frozenset[str]


def script(index: int, rng: random.Random) -> Script:
    """A random script of bursts for one journey (after its creation)."""
    races: set[str] = set()

    def simulate(keyed: bool, tag: str) -> Command:
        body = {"amount": rng.choice([1000, 5000, 12000, 20000]), "termMonths": rng.choice([12, 24, 36])}
        return Command("simulate", body, f"sim-{index}-{tag}" if keyed else None)

    def burst(commands: list[Command], race: str) -> list[Command]:
        if len(commands) > 1:
            races.add(race)
        return commands

    first = simulate(rng.random() < 0.6, "a")
    # the same keyed (or unkeyed) simulate, at once
    bursts = [burst([first] * rng.randint(1, 2), f"{'keyed' if first.key else 'unkeyed'} simulate sent twice at once")]
    if first.key and rng.random() < 0.3:  # same key, another body, at the same moment
        bursts[0].append(Command("simulate", {**(first.body or {}), "amount": 777}, first.key))
        races.add("one key, two bodies at once")
    if rng.random() < 0.5:  # a re-simulate racing an accept
        bursts.append(burst([simulate(rng.random() < 0.5, "b"), Command("accept")], "re-simulate against accept"))
    bursts.append(burst([Command("accept")] * rng.randint(1, 3), "accepts at once"))
    ending = rng.choice(["disburse", "cancel", "disburse+cancel", "cancel+simulate", "disburse+simulate"])
    endings = {
        "disburse": ([Command("disburse")] * rng.randint(1, 3), "disbursements at once"),
        "cancel": ([Command("cancel")] * rng.randint(1, 3), "cancels at once"),
        "disburse+cancel": ([Command("disburse"), Command("cancel")], "disburse against cancel"),
        "cancel+simulate": ([Command("cancel"), simulate(False, "c")], "cancel against simulate"),
        "disburse+simulate": ([Command("disburse"), simulate(True, "d")], "disburse against simulate"),
    }
    bursts.append(burst(*endings[ending]))
    if rng.random() < 0.3:  # an agent that repeats itself later: a keyed repeat, a disburse, a cancel
        later = rng.choice(["disburse", "cancel"])
        bursts.append([first, Command(later)])
        if first.key:
            races.add(f"keyed simulate repeated later, with a {later}")
    return Script(bursts, frozenset(races))


class VersionSampler:
    """Reads random Control Records while the agents work: a record's version never goes back."""

    def __init__(self, system: System, journeys: list[str], seed: int) -> None:
        self.system, self.journeys, self.seed = system, journeys, seed
        self.seen: dict[str, int] = {}
        self.samples = 0
        self.went_back: list[tuple[str, int, int]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        rng = random.Random(self.seed)
        while not self.stop.wait(0.02):
            if not self.journeys:
                continue
            jid = rng.choice(self.journeys)
            status, record = self.system.api("GET", f"/journeys/{jid}")
            if status != 200:
                continue
            self.samples += 1
            if record["version"] < self.seen.get(jid, 0):
                self.went_back.append((jid, self.seen[jid], record["version"]))
            self.seen[jid] = max(self.seen.get(jid, 0), record["version"])
