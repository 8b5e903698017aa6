"""tests/typing holds programs that are type-checked, never run: pytest collects nothing here.

``user_program.py`` is checked by ``mypy --strict`` (``make test``'s mypy line covers tests/, and
tests/unit/test_user_typing.py checks the one file on its own).
"""

collect_ignore_glob = ["*.py"]
