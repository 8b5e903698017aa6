"""W12's vendor: a FakeVendor in its own process streaming every answer at a scripted token rate.

    python benchmarks/_w12_vendor.py '{"chunks": 20, "interval": 0.25, "words": 2, "first": 0.2}'

Prints its base URL as the first stdout line, serves until stdin closes (or SIGTERM).  Every
chat-completions request, streamed, gets the same answer: ``chunks`` text deltas of ``words`` words,
``interval`` seconds apart, after ``first`` seconds before the headers (the model "thinking").
Lenient (``strict=False``): the peers' SDKs send fields a strict vendor double would refuse.
"""

from __future__ import annotations

import json
import sys
import threading

from agentactors.testing import FakeReply, FakeVendor


def answer_text(chunks: int, words: int) -> str:
    """The answer: ``chunks * words`` words, so the vendor sends exactly ``chunks`` text deltas."""
    return " ".join(f"word{i}" for i in range(chunks * words))


def main(raw: str) -> None:
    cfg = json.loads(raw)
    reply = FakeReply(text=answer_text(cfg["chunks"], cfg["words"]), chunk_latency=cfg["interval"],
                      words_per_chunk=cfg["words"], latency=cfg["first"])
    fv = FakeVendor(strict=False, record_bodies=False, max_records=16)
    fv.on(reply)
    done = threading.Event()

    def wait_stdin() -> None:
        sys.stdin.read()
        done.set()

    threading.Thread(target=wait_stdin, daemon=True).start()
    with fv:
        print(fv.base_url, flush=True)
        done.wait()


if __name__ == "__main__":
    main(sys.argv[1])
