"""Every corpus file is covered by some conformance module.

Each ``tests/conformance/test_*_corpus.py`` module declares a module-level
``COVERED: frozenset[str]`` of the corpus file names it round-trips (with or
without the ``.json`` suffix).  A file added to the corpus that no module
covers fails here, as does a module that claims a file that does not exist.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent


def _stem(name: str) -> str:
    return name.removesuffix(".json")


def _load(path: Path) -> ModuleType:
    # Import by path under a private name so this works whether or not tests/ is a package.
    name = f"_coverage_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def conformance_modules() -> list[Path]:
    return sorted(HERE.glob("test_*_corpus.py"))


def coverage(modules: list[Path]) -> dict[str, set[str]]:
    """corpus file stem -> the modules that claim it."""
    claimed: dict[str, set[str]] = {}
    for path in modules:
        covered = getattr(_load(path), "COVERED", None)
        assert isinstance(covered, frozenset), f"{path.name} must define COVERED: frozenset[str]"
        assert all(isinstance(n, str) for n in covered), f"{path.name}: COVERED must hold file names"
        for name in covered:
            claimed.setdefault(_stem(name), set()).add(path.name)
    return claimed


def corpus_files(corpus_dir: Path) -> set[str]:
    return {p.stem for p in corpus_dir.glob("*.json")}


def test_there_are_conformance_modules() -> None:
    assert conformance_modules(), "no tests/conformance/test_*_corpus.py modules found"


def test_every_corpus_file_is_covered(corpus_dir: Path) -> None:
    files = corpus_files(corpus_dir)
    assert files, f"the corpus at {corpus_dir} is empty"
    claimed = coverage(conformance_modules())
    uncovered = sorted(files - set(claimed))
    assert not uncovered, f"corpus files no conformance module covers: {uncovered}"


def test_no_module_claims_a_missing_file(corpus_dir: Path) -> None:
    claimed = coverage(conformance_modules())
    stale = {name: sorted(mods) for name, mods in claimed.items() if name not in corpus_files(corpus_dir)}
    assert not stale, f"COVERED names files that are not in the corpus: {stale}"


def test_the_check_detects_an_uncovered_file(tmp_path: Path) -> None:
    """The coverage check itself can fail: a module covering one of two files leaves the other reported."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "x__a__1.json").write_text("{}")
    (corpus / "x__b__1.json").write_text("{}")
    module = tmp_path / "test_x_corpus.py"
    module.write_text('COVERED: frozenset[str] = frozenset({"x__a__1.json"})\n')
    claimed = coverage([module])
    assert corpus_files(corpus) - set(claimed) == {"x__b__1"}


def test_a_module_without_covered_is_rejected(tmp_path: Path) -> None:
    module = tmp_path / "test_y_corpus.py"
    module.write_text("COVERAGE = 1\n")
    with pytest.raises(AssertionError, match="must define COVERED"):
        coverage([module])
