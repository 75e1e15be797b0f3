"""The two owners of session slots (SPEC §3): the management manager and a thread's runtime, what they share
(status rows, auth, reads), and what only a thread does (tool calls, elicitation, projection)."""
