"""What a new user reads from ``python -m agentactors`` when a flag does not fit: plain, grammatical, complete."""

from __future__ import annotations

import pytest

from agentactors.__main__ import main


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--live"], "--live does not apply"),
        (["--record", "x.jsonl"], "--record does not apply"),
        (["--live", "--record", "x.jsonl"], "--live and --record do not apply"),
        (["--live", "--fault-rate", "0.5", "--record", "x.jsonl"], "--live, --fault-rate and --record do not apply"),
    ],
)
def test_demo_batch_names_the_options_it_refuses_in_a_sentence(
    extra: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # It read "--live do not apply" and "--live and --fault-rate and --record do not apply".
    assert main(["demo", "--batch", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"demo --batch: {said}: "), err


def test_every_command_says_what_it_does_in_its_own_help(capsys: pytest.CaptureFixture[str]) -> None:
    # `python -m agentactors exchange --help` printed a usage line and nothing else.
    with pytest.raises(SystemExit) as exit_:
        main(["exchange", "--help"])
    assert exit_.value.code == 0
    assert "ScriptedProvider" in capsys.readouterr().out
