"""Filling a frozen attrs value slot by slot: what the fast constructors of the run path share.

A frozen, slotted attrs class is built through its ``__init__``: ``object.__setattr__`` per field, each
converter, then ``__attrs_post_init__``'s checks — about a microsecond for the values every run builds
(its messages, the step's request, a tool's result, the run's result).  The loop's fast constructors
(``messages.text_message``, ``tools.results.result_of``, ``loop.result.answered`` ...) make the constructor's
checks inline, then fill a *draft* of the value and make it the value::

    value: Any = _new(_MessageDraft)   # _MessageDraft = draft(Message, "role content ... parts")
    value.role = role                  # ... every field, in field order
    value.__class__ = Message

A draft (:func:`draft`) is a subclass of the frozen class that adds nothing but the plain
``__setattr__`` the frozen class takes away: a store into a slot is then the interpreter's own
(no call at all), where a slot descriptor's ``__set__`` is a C call that packs its arguments into a
tuple — a value of nine fields is built in under half the time.  The draft has the class's exact
layout, so the last line, which makes it that class (frozen from then on), is allowed.

:func:`draft` is given the names of the fields its caller fills: a field the class gains breaks the
module's import, rather than leaving the new slot unset in every value built.

Measured on W1 (a tool loop: four messages, two requests and responses, a tool result and the run's result
built per run), filling drafts rather than setting each slot through its descriptor cut a run's CPU by ~10 %.
"""

from __future__ import annotations

from typing import TypeVar

import attrs

__all__ = ["draft"]

T = TypeVar("T")


def draft(cls: type[T], fields: str) -> type[T]:
    """A draft of the frozen, slotted attrs class ``cls`` (see the module): its instances take attribute stores.

    ``fields``: the names ``cls.__init__`` takes its fields by, space-separated, in field order — the ones the
    caller fills.  A private field (``_parts``) is filled under that name too (``parts``): the draft holds its
    slot under it, so a module fills a value of its own class without naming a private attribute.

    :raises TypeError: ``fields`` are not ``cls``'s fields (it gained, lost or renamed one).
    """
    found = attrs.fields(cls)  # type: ignore[arg-type]  # an attrs class
    names = tuple(field.alias for field in found)
    if tuple(fields.split()) != names:
        raise TypeError(f"a draft of {cls.__name__} must fill {' '.join(names)!r}, not {fields!r}")
    namespace = {"__slots__": (), "__setattr__": object.__setattr__, "__delattr__": object.__delattr__}
    for field in found:
        if field.alias != field.name:
            namespace[field.alias] = getattr(cls, field.name)  # the slot's descriptor, under the public name
    return type(f"{cls.__name__}Draft", (cls,), namespace)

