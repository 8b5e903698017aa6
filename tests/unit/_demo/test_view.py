"""The demo's views as a user sees them: the live progress on a standard 80-column terminal."""

from __future__ import annotations

import io
import re

import pytest

from agentactors._demo.fleet import LiveCounters
from agentactors._demo.view import RichView

rich_console = pytest.importorskip("rich.console")


@pytest.mark.parametrize("width", [80, 120])
def test_the_progress_line_keeps_its_count_on_an_80_column_terminal(width: int) -> None:
    """The status text used to take the whole line: on 80 columns "runs", the bar, "412/1,000" and the
    elapsed time were squeezed to "r…"; the status is what gets cut now, never the count."""
    out = io.StringIO()
    view = RichView(rich_console.Console(file=out, width=width, force_terminal=True, color_system=None))
    counters = LiveCounters(1000)
    counters.done = counters.ok = 412
    counters.responses = 1259
    view.start(counters.total)
    view.update(counters, "closed", 12.5)
    view.stop()
    frames = [f for f in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()).split("\r") if f.strip()]
    shown = frames[-1]
    assert "runs" in shown and "412/1000" in shown.replace(",", ""), shown
    assert "0:00:" in shown, shown  # the elapsed time
    assert "ok 412" in shown, shown
    assert all(len(line) <= width for line in shown.splitlines()), shown
