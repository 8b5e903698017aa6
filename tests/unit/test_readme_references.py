"""What README.md points a reader at exists, and the commands it prints do what it says they do."""

from __future__ import annotations

import re
import shlex

from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_file_the_readme_names_exists() -> None:
    named = set(re.findall(r"\b((?:examples|docs|benchmarks|tests)/[\w./-]+\.(?:py|md|json|html|png))", README))
    assert named, "the pattern finds the README's paths"
    missing = sorted(p for p in named if not (ROOT / p).exists() and not (ROOT / "benchmarks" / p).exists())
    assert missing == []


def test_every_make_target_the_readme_names_exists() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    named = set(re.findall(r"`make ([\w-]+)", README))
    assert named and named <= targets, sorted(named - targets)


def test_a_bench_command_for_some_workloads_writes_its_own_file() -> None:
    """``benchmarks/run.py --only ...`` without ``--out`` replaces results/latest.json (and its page and charts)
    with those workloads alone: a command the README gives to reproduce a figure must not do that."""
    commands = re.findall(r'make bench ARGS="([^"]*)"', README)
    assert commands
    for args in commands:
        argv = shlex.split(args)
        if "--only" in argv:
            # (--merge keeps the other workloads' results: it refreshes some of latest.json, it does not replace it)
            assert "--out" in argv or "--merge" in argv, (
                f"make bench ARGS={args!r} would overwrite benchmarks/results/latest.json"
            )
            if "--out" not in argv:
                continue  # --merge into results/latest.json: its page and charts are redrawn from the whole file
            out = argv[argv.index("--out") + 1]
            assert (ROOT / out).exists(), f"{out}: the README's figure comes from a file that is not there"
            # The page and the charts are drawn beside --out: in results/, those workloads alone would replace them.
            if (ROOT / out).resolve().parent == (ROOT / "benchmarks" / "results").resolve():
                assert "--no-charts" in argv, f"make bench ARGS={args!r} would redraw results/index.html alone"
