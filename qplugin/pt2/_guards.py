"""`skip_packed_params_guards`: a `guard_filter_fn` for `torch.compile` that drops the guards
Dynamo installs on qplugin's packed-params objects (docs/pt2.md section 6).

Dynamo guards every torchbind argument of a compiled region on its class name and on the result
of its `__obj_flatten__()` (the packed weight's shape and config), and re-evaluates those guards
on every call: one Python -> TorchScript method call (~4-8 us) per guard per packed object, about
a third of a millisecond per call for a small CNN. The packed objects are graph inputs (the
compiled code calls the op on whatever object the module holds at call time), so without these
guards a module whose packed params are replaced by ones of the same shape and config still runs
correctly; what is no longer caught is a replacement with a different shape or config (e.g. a
conv with another stride), which then runs the code traced for the old one. Use it when the
packed params of a compiled model are not swapped for differently shaped ones:

    cm = torch.compile(pmodel, options={"guard_filter_fn": qplugin.pt2.skip_packed_params_guards})

Only guards whose value shows they belong to a qplugin packed-params object are dropped (class
name under torch.classes.qplugin, or a flattened config naming qplugin's fields); every other
guard is kept.
"""
from typing import Sequence

__all__ = ["skip_packed_params_guards"]

_QUALNAME_PREFIX = "__torch__.torch.classes.qplugin."


def _flattened_fields():
    from .fake import packed
    return frozenset(f for cls in packed._BY_QUALNAME.values() for f in cls._FIELDS)


def _is_packed_guard(entry, fields) -> bool:
    if not entry.has_value:
        return False
    name, value = entry.name, entry.value
    if name.endswith("._type().qualified_name()"):
        return isinstance(value, str) and value.startswith(_QUALNAME_PREFIX)
    if name.endswith(".__obj_flatten__()"):
        return (isinstance(value, tuple) and len(value) > 0 and
                all(isinstance(kv, tuple) and len(kv) == 2 and kv[0] in fields for kv in value))
    return False


def skip_packed_params_guards(guards: Sequence) -> Sequence[bool]:
    """guard_filter_fn for torch.compile: False (drop) for the class-name and `__obj_flatten__`
    guards of qplugin packed-params objects, True (keep) for every other guard."""
    fields = _flattened_fields()
    return [not _is_packed_guard(g, fields) for g in guards]
