"""How the demo shows itself: a live progress bar and summary tables (rich), or plain lines.

Rich is the ``cli`` extra.  Without it, when stdout is not a terminal, or with
``--no-progress``, the same content is printed as plain text lines: a progress
line now and then, then the same sections as the tables.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any, Protocol, TextIO

from .fleet import LiveCounters
from .report import FleetReport

__all__ = ["Section", "View", "make_view", "summary_sections"]

Section = tuple[str, list[tuple[str, str]]]


def _n(value: int) -> str:
    return f"{value:,}"


def _s(seconds: float) -> str:
    return "n/a" if math.isnan(seconds) else f"{seconds:.2f}s"


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "n/a"


def _counts(mapping: Any, none: str = "none") -> str:
    items = [f"{k} {_n(v)}" for k, v in mapping.items()]
    return ", ".join(items) if items else none


def summary_sections(report: FleetReport) -> list[Section]:
    """The summary, as titled (label, value) rows — computed from ``report``, nothing else."""
    r = report
    runs: list[tuple[str, str]] = [
        ("agents (runs)", _n(r.agents)),
        ("ok", f"{_n(r.ok)}  ({_pct(r.ok, r.agents)}; " + (
            f"{_n(r.verified)} quote both tool results verbatim — not required of real models)" if r.live
            else f"{_n(r.verified)} answers quote both tool results" + (f", {_n(r.wrong)} do NOT)" if r.wrong else ")")
        )),
        ("failed", _n(r.failed) + (f"  ({_counts(r.failures)})" if r.failures else "")),
        ("bounded", _n(r.bounded)),
        ("run latency p50 / p99", f"{_s(r.p50)} / {_s(r.p99)}"),
        ("wall time", f"{_s(r.wall)}  ({r.agents / r.wall:,.0f} runs/s)" if r.wall > 0 else _s(r.wall)),
        ("streamed runs", f"{_n(r.streamed_runs)}  ({_n(r.streamed_chars)} characters delivered token by token)"),
        ("streams cut mid-answer", f"{_n(r.interrupted_streams)} run{'' if r.interrupted_streams == 1 else 's'} "
                                   "(never replayed by the library); the demo "
                                   f"re-ran {_n(r.reruns)} of those tasks once: {_n(r.reruns_ok)} ok"),
    ]
    opened = ", ".join(f"{a:.2f}–{b:.2f}s" for a, b in r.open_intervals) or "never"
    verdict = "✓" if r.primary_calls_while_open == 0 and r.unstamped_primary_calls == 0 else "✗"
    resilience: list[tuple[str, str]] = [
        ("retries", _n(r.retries)),
        ("failovers by reason", _counts(r.failovers)),
        ("failovers by path", _counts(r.failover_paths)),
        ("breaker transitions", _counts(r.breaker_transitions)),
        ("primary breaker open", opened),
        ("primary calls while its breaker was open",
         f"{_n(r.primary_calls_while_open)} {verdict}  (of {_n(r.primary_calls)} primary requests, each checked "
         "by its send time" + (f"; {_n(r.unstamped_primary_calls)} unstamped" if r.unstamped_primary_calls else "")
         + ")"),
        ("retries stopped by an open breaker", f"{_n(r.retries_stopped_by_breaker)}  (no further attempt sent)"),
    ]
    if r.outages:
        windows = ", ".join(f"{a:.2f}–{b:.2f}s" for a, b in r.outages)
        resilience.insert(0, ("outages (injected)", f"{windows}  (the k-th: the first k members down)"))
    tokens = r.tokens
    traffic: list[tuple[str, str]] = [
        ("requests per vendor", _counts(r.requests_by_vendor)),
        *((f"  {wire}", _counts(outcomes)) for wire, outcomes in r.outcomes_by_vendor.items()),
        ("faults injected (primary)", _counts(r.faults_injected)),
        ("tokens", f"{_n(tokens.input_tokens)} in + {_n(tokens.output_tokens)} out = {_n(tokens.total_tokens)}"),
        ("fleet cost", _cost(r)),
        ("events recorded", _n(r.events)),
    ]
    return [("Runs", runs), ("Resilience", resilience), ("Traffic", traffic)]


def _cost(r: FleetReport) -> str:
    """What the fleet cost (its runs' RunResult.cost added up), and the runs whose model had no price."""
    unpriced = f"; {_n(r.unpriced_runs)} runs had a model without a price" if r.unpriced_runs else ""
    if r.cost is None:
        return "no price known for the models that answered" + unpriced
    per_run = r.cost / (r.agents - r.unpriced_runs) if r.agents > r.unpriced_runs else 0.0
    return f"{r.cost:.4f} {r.currency}  ({per_run:.6f} a run{unpriced})"


def _explained_title(report: FleetReport) -> str:
    failed_over = report.explanation is not None and report.explanation.failovers
    return "One run, explained (from its recorded events)" + ("" if failed_over else " — no run failed over")


def _status(c: LiveCounters, breaker: str) -> str:
    return (f"ok {_n(c.ok)} · failed {_n(c.failed)} · bounded {_n(c.bounded)} · model answers {_n(c.responses)} · "
            f"retries {_n(c.retries)} · failovers {_n(c.failovers)} · primary breaker {breaker}")


class View(Protocol):
    """What the demo calls to show itself."""

    def header(self, lines: Sequence[str]) -> None: ...
    def start(self, total: int) -> None: ...
    def update(self, counters: LiveCounters, breaker: str, elapsed: float) -> None: ...
    def stop(self) -> None: ...
    def summary(self, report: FleetReport, footer: Sequence[str]) -> None: ...
    def line(self, text: str) -> None: ...

    @property
    def interval(self) -> float: ...


class PlainView:
    """Plain text: a progress line every second (or so), then the sections."""

    interval = 1.0

    def __init__(self, file: TextIO | None = None, *, progress: bool = True) -> None:
        self._out = file or sys.stdout
        self._progress = progress

    def line(self, text: str) -> None:
        print(text, file=self._out, flush=True)

    def header(self, lines: Sequence[str]) -> None:
        for text in lines:
            self.line(text)

    def start(self, total: int) -> None:
        pass

    def update(self, counters: LiveCounters, breaker: str, elapsed: float) -> None:
        if self._progress:
            self.line(f"[{elapsed:6.1f}s] {counters.done:>6,}/{counters.total:,} runs · {_status(counters, breaker)}")

    def stop(self) -> None:
        pass

    def summary(self, report: FleetReport, footer: Sequence[str]) -> None:
        for title, rows in summary_sections(report):
            self.line("")
            self.line(title)
            width = max(len(label) for label, _ in rows)
            for label, value in rows:
                self.line(f"  {label:<{width}}  {value}")
        self.line("")
        if report.explanation is not None:
            self.line(_explained_title(report))
            for text in report.explanation.lines():
                self.line("  " + text)
        else:
            for text in no_answer_lines(report):
                self.line(text)
        self.line("")
        for text in footer:
            self.line(text)


class RichView:
    """A live progress bar with a status line, then tables (needs ``rich``, the ``cli`` extra)."""

    interval = 0.1

    def __init__(self, console: Any) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        from rich.table import Column

        self._console = console
        # The status is long: it alone is cut (with "…") on a narrow terminal, after the bar, the count and
        # the elapsed time — which rich would otherwise squeeze to nothing to fit the status in.
        self._progress = Progress(
            TextColumn("[bold]runs", table_column=Column(no_wrap=True, min_width=4)),
            BarColumn(bar_width=20, table_column=Column(no_wrap=True, min_width=20)),
            MofNCompleteColumn(table_column=Column(no_wrap=True, min_width=11)),
            TimeElapsedColumn(table_column=Column(no_wrap=True, min_width=7)),
            TextColumn("{task.fields[status]}", table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)),
            console=console, auto_refresh=False, transient=False, expand=True,
        )
        self._task: Any = None

    def line(self, text: str) -> None:
        self._console.print(text, highlight=False, markup=False)

    def header(self, lines: Sequence[str]) -> None:
        from rich.panel import Panel

        self._console.print(Panel("\n".join(lines), title="agentactors demo", expand=False), highlight=False,
                            markup=False)

    def start(self, total: int) -> None:
        self._task = self._progress.add_task("runs", total=total, status="")
        self._progress.start()

    def update(self, counters: LiveCounters, breaker: str, elapsed: float) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=counters.done, status=_status(counters, breaker))
            self._progress.refresh()

    def stop(self) -> None:
        self._progress.refresh()
        self._progress.stop()

    def summary(self, report: FleetReport, footer: Sequence[str]) -> None:
        from rich.table import Table
        from rich.text import Text

        for title, rows in summary_sections(report):
            table = Table(title=title, show_header=False, title_justify="left", expand=False)
            table.add_column(style="bold")
            table.add_column()
            for label, value in rows:
                table.add_row(Text(label), Text(value))
            self._console.print(table)
        if report.explanation is not None:
            from rich.panel import Panel

            body = Text("\n".join(report.explanation.lines()))
            self._console.print(Panel(body, title=_explained_title(report), expand=False))
        else:
            for text in no_answer_lines(report):
                self.line(text)
        for text in footer:
            self.line(text)


def no_answer_lines(report: FleetReport) -> list[str]:
    """What the summary says in place of an explained run when no run ended on an answer: and why, in the first
    failure's own words (a refused key, an unreachable endpoint), which the counts by kind above do not say."""
    lines = ["No run ended on an answer, so there is no run to explain."]
    if report.first_failure is not None:
        lines.append(f"  the first failure: {report.first_failure}")
    return lines


def make_view(*, no_progress: bool = False, file: TextIO | None = None) -> View:
    """Rich on a terminal (with the ``cli`` extra installed); plain lines otherwise or with ``no_progress``."""
    out = file or sys.stdout
    if not no_progress and out.isatty():
        try:
            from rich.console import Console
        except ImportError:
            return PlainView(out)
        return RichView(Console(file=out))
    return PlainView(out, progress=not no_progress)
