"""``demo --batch``: the same job live and through a BatchProvider, and the fleet's cost in the normal summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentactors.__main__ import main
from agentactors._demo.batch import _KEY
from agentactors.pricing import price_for

KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
priced = pytest.mark.skipif(price_for("openai", "gpt-4o-mini") is None, reason="needs the [prices] extra")


@priced
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_demo_batch_runs_the_job_through_batches_at_about_half_the_cost(
    backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["demo", "--batch", "--agents", "12", "--backend", backend])
    out = capsys.readouterr().out
    assert code == 0, out
    rows = {line[:24].strip(): line[24:] for line in out.splitlines() if line[:24].strip()}
    live, batch = rows["single requests"].split()[:1], rows["single requests"].split()[1:]
    assert live == ["36"] and batch == ["0"]  # 12 runs × 3 model calls, live; none through the batch job
    assert rows["batches (lines)"].split()[-2:] == ["3", "(36)"]  # one batch per step of the runs
    assert rows["runs ok"].split() == ["12/12", "12/12"]
    costs = [float(word) for word in rows["cost (RunResult.cost)"].split() if word[:1].isdigit()]
    assert len(costs) == 2 and costs[1] == pytest.approx(costs[0] / 2, rel=2e-3)  # gpt-4o-mini's batch price: half
    assert "(50% of live)" in out
    assert _KEY not in out


@priced
def test_the_fleet_summary_says_what_the_fleet_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    record = tmp_path / "events.jsonl"
    code = main(["demo", "--agents", "20", "--fault-rate", "0", "--seed", "3", "--record", str(record),
                 "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    (line,) = [text for text in out.splitlines() if "fleet cost" in text]
    summary = json.loads(record.read_text(encoding="utf-8").splitlines()[-1])["report"]
    assert summary["cost"] is not None and summary["cost"] > 0
    assert f"{summary['cost']:.4f} USD" in line
    priced_runs = summary["agents"] - summary["unpriced_runs"]
    assert priced_runs > 0


# (``--agents 0``: the parser's usage error, test_demo.py::test_an_agent_count_out_of_bounds_is_an_argparse_usage_error)
@pytest.mark.parametrize("extra", [["--live"], ["--fault-rate", "0.5"], ["--record", "x.jsonl"]])
def test_demo_batch_refuses_options_it_would_ignore_on_stderr(
    extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # `--batch --live` used to run offline anyway, and `--fault-rate` was dropped without a word.
    code = main(["demo", "--batch", *extra])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.startswith("demo --batch:") or captured.err.startswith("demo:"), captured.err



def test_the_side_by_side_table_keeps_its_columns_without_a_price() -> None:
    """Without the [prices] extra the cost cell said what to install, wider than its column: the live and batch
    columns ran together.  The table says "no price"; the line under it names the extra."""
    from agentactors._demo.batch import JobReport, comparison

    live = JobReport("live", 10, 10, 10, 20, 20, 0, 0, 1.5, None)
    batch = JobReport("batch", 10, 10, 10, 20, 0, 2, 20, 3.0, None)
    header, *rows, summary = comparison(live, batch)
    column = header.index("batch")
    for row in rows:
        assert row[column - 1] == " " and row[column] != " ", row  # the batch cell starts at its column
    assert rows[-1].split()[-2:] == ["no", "price"] and "no price  " in rows[-1], rows[-1]
    assert "no price (install the [prices] extra: genai-prices)" in summary
