"""The agents ``python -m agentactors serve`` serves in tests/integration/test_serve_cli.py, over the FakeVendor
whose OpenAI base URL the test puts in ``$SERVE_CLI_VENDOR`` (run with this directory as the working one: the
command finds the module there)."""

from __future__ import annotations

import os

from agentactors import Agent, OpenAIProvider


def _provider() -> OpenAIProvider:
    return OpenAIProvider("fake-model", api_key="sk-fake", base_url=os.environ["SERVE_CLI_VENDOR"])


#: ``serve serve_cli_agent:agent``: an Agent.
agent: Agent[str] = Agent(_provider(), name="assistant", system="Be brief.")


async def make_agent() -> Agent[str]:
    """``serve serve_cli_agent:make_agent``: a function of no arguments, async, that makes one (unnamed: served
    by the function's name)."""
    return Agent(_provider())


#: ``serve serve_cli_agent:not_an_agent``: a usage mistake.
not_an_agent = 42
