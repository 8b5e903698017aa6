"""The demo behind ``make demo`` / ``python -m agentactors demo``: not part of the library's API.

1,000 agents with two tools each run through one ProviderActor and a resilient
chain over six endpoints (five without botocore) against a FakeVendor in a child
process.  The pieces:

``main``
    the command: options, the run, the summary, the JSONL record (:func:`main.run_demo`);
    :func:`main.run_fleet_sync` for the benchmarks.
``chain``
    the provider chain (OpenAI Chat Completions primary → OpenAI Responses → Azure OpenAI →
    Anthropic → Gemini on Vertex AI → Bedrock) and its settings.
``fleet``
    the agents and their runtime; what a fleet run collects.
``tasks``
    the task catalogue, its tools and the fake model that answers them.
``vendor``
    the FakeVendor child process and its request log (each request's endpoint).
``report``
    the numbers and the explained run, computed from the record.
``view``
    live progress and the printed summary.
"""

#: The most agents ``--agents`` takes (the batch demo's too).  Beyond it the command line refuses, exit status 2:
#: a mistyped ``--agents 1000000000`` would otherwise build that many agents and tasks before the first run,
#: and each agent's events (about 20 KB of JSONL) are held in memory until the record is written.  Here, not
#: in ``main``: the command line's parser needs it without importing the demo.
MAX_AGENTS = 10_000
