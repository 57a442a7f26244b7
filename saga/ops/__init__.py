"""What the ops CLI does, against the local runtime, another endpoint, or a deployed stack: where the
system is (`target`), road 2's queues and DLQ (`road2`), a journey's record against loans-api's truth
and the audit of many (`journeys`), and the scripted agent (`demo`)."""
