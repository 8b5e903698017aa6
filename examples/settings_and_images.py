"""Model settings and an image with a PDF, sent to all three wires — and what each wire did with them.

Runs offline: the built-in FakeVendor plays OpenAI, Anthropic and Gemini on 127.0.0.1 and records what it
received, so the example can show the parts and settings as they reached each wire.  Point the providers at
the real vendors (drop ``base_url``, set the API keys) and nothing else changes.

* the agent's settings, a run's settings over them, and a provider's defaults under both;
* a setting a wire cannot carry dropped, and said so (``llm.setting_dropped``: Anthropic has no seed);
* a part a model cannot take refused before anything is sent (Claude hears no audio).

    python examples/settings_and_images.py
"""

from __future__ import annotations

import struct
import zlib

import anyio

from agentactors import (
    Agent,
    AnthropicProvider,
    Audio,
    Document,
    GeminiProvider,
    Image,
    InMemoryRecorder,
    Message,
    ModelSettings,
    OpenAIProvider,
    RunResult,
    Runtime,
    Text,
)
from agentactors.testing import FakeVendor

KEY = "sk-example-not-a-real-key-000"


def tiny_png() -> bytes:
    """A 1x1 red PNG, made here so the example needs no file."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(
        b"IEND", b"")


REPORT = b"%PDF-1.4\n1 0 obj << /Type /Pages /Count 1 >> endobj\ntrailer << >>\n%%EOF\n"
QUESTION = Message.user([
    Text("Is the colour in the picture the one the report names?"),
    Image(data=tiny_png()),
    Document(data=REPORT, title="report.pdf"),
])


async def main() -> dict[str, RunResult]:
    recorder = InMemoryRecorder()
    results: dict[str, RunResult] = {}
    async with FakeVendor() as vendor, Runtime(recorders=[recorder]):
        vendor.script("Yes: both say red.", "Yes: both say red.", "Yes: both say red.")
        providers = {
            "openai": OpenAIProvider("gpt-4.1", api_key=KEY, base_url=vendor.openai_base_url,
                                     settings=ModelSettings(seed=7)),
            "anthropic": AnthropicProvider("claude-sonnet-4-5", api_key=KEY, base_url=vendor.base_url,
                                           settings=ModelSettings(seed=7)),
            "gemini": GeminiProvider("gemini-2.5-flash", api_key=KEY, base_url=vendor.base_url,
                                     settings=ModelSettings(seed=7)),
        }
        for wire, provider in providers.items():
            agent = Agent(provider, system="Answer in one sentence.",
                          settings=ModelSettings(temperature=0.2, max_tokens=400, stop="END"))
            result = await agent.run(QUESTION, settings=ModelSettings(temperature=0.7))  # this run: 0.7
            results[wire] = result
            seen = vendor.requests[-1].conversation
            assert seen is not None
            parts = ", ".join(f"{p.kind} {p.media_type} ({p.size} bytes)" for p in seen.parts)
            print(f"{wire:9} answered {result.content!r}")
            print(f"{'':9} the wire saw: {parts}; settings {dict(seen.settings)}")
        for event in recorder.of_type("llm.setting_dropped"):
            print(f"dropped on {event.wire}: {event.setting}={event.value!r} ({event.reason})")

        sent = len(vendor.requests)
        refused = await Agent(providers["anthropic"]).run(Message.user([Text("What is this sound?"),
                                                                        Audio(b"ID3" + b"\x00" * 64)]))
        results["refused"] = refused
        print(f"refused before sending: {type(refused.error).__name__}: {refused.error}")
        assert len(vendor.requests) == sent, "nothing was sent for the refused run"
    return results


if __name__ == "__main__":
    anyio.run(main)
