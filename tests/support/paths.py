"""Where the repository's own test material lives (everything the suite reads is inside the checkout)."""

from __future__ import annotations

from pathlib import Path

#: The checkout's root.
ROOT = Path(__file__).resolve().parents[2]
#: The recorded vendor interactions (tests/corpus/README.md says where they come from).
CORPUS = ROOT / "tests" / "corpus"
#: The runnable examples, each exercised by a test.
EXAMPLES = ROOT / "examples"
