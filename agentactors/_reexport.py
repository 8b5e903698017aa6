"""Re-exported classes and functions report the package as their home, without breaking what reads that home.

``agentactors/__init__.py`` re-exports the user API from the submodules that define it.  Like httpx, it then
sets each name's ``__module__`` to ``"agentactors"``, so reprs, tracebacks and docs say ``agentactors.Runtime``
(where users import it from) rather than ``agentactors.actors.runtime.Runtime`` (where it happens to live
today, and may not tomorrow).

``__module__`` is not only a label, though.  Pickle and copy find a class by ``__module__`` + ``__qualname__``
— that keeps working because the package exports the class under that very name.  But
:func:`typing.get_type_hints` evaluates a class's string annotations (every module here uses
``from __future__ import annotations``) in the namespace of ``sys.modules[cls.__module__]``: once that is the
package, an annotation such as ``Mapping[str, Any]`` no longer resolves, which breaks ``attrs.resolve_types``,
cattrs, and the tool-schema builder when a user's tool takes one of these classes as a parameter.  So before
relabelling a class, :func:`adopt` pins each of its string annotations to the module that wrote it: a
``typing.ForwardRef`` with ``module=`` set, which ``get_type_hints`` evaluates in that module's namespace.

What still reads the new label: ``inspect.getsource(cls)`` looks for the class in ``agentactors/__init__.py``
and fails (functions are unaffected: they carry their code's file), and
``inspect.get_annotations(cls, eval_str=True)`` returns the pinned ``ForwardRef`` objects unevaluated (use
``typing.get_type_hints``).  httpx lives with the same trade.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterable, Mapping

__all__ = ["adopt"]


def adopt(namespace: Mapping[str, object], names: Iterable[str], package: str) -> None:
    """Make each class and function of ``namespace`` named in ``names`` report ``package`` as its module.

    Other objects (type aliases, constants) are left alone: they have no ``__module__`` of their own to set.
    Run once, at the package's import; a second run changes nothing.
    """
    for name in names:
        obj = namespace[name]
        if isinstance(obj, type):
            _pin_annotations(obj)
        elif not inspect.isfunction(obj):
            continue
        obj.__module__ = package


def _pin_annotations(cls: type) -> None:
    # Only the class's own annotations (get_annotations does not merge the bases'): each base is pinned, or
    # keeps its module, on its own.
    annotations = inspect.get_annotations(cls)
    if not any(isinstance(value, str) for value in annotations.values()):
        return
    module = cls.__module__
    # is_argument=False and is_class=True are what get_type_hints uses for a class's own strings (they allow
    # ClassVar and Final).
    cls.__annotations__ = {
        key: typing.ForwardRef(value, is_argument=False, module=module, is_class=True)
        if isinstance(value, str)
        else value
        for key, value in annotations.items()
    }
