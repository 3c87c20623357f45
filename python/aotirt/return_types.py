"""Pytree serialization names for torch.return_types, which torch registers without one.

torch.sort, topk, max(dim), ... return structseqs (torch.return_types.sort, ...). AOTInductor writes a package's
out_spec with torch.utils._pytree.treespec_dumps, which refuses a node type registered without a serialized name: a
model returning torch.sort(x) failed to lower ("No registered serialization name for <class
'torch.return_types.sort'>"). name_return_types gives every such structseq the name "torch.return_types.<name>"
before a lowering, and the runtime calls it before reading a package's out_spec back (its outputs then come back as
the same structseq). Types torch already named are left alone; a torch whose pytree internals differ leaves
everything as it was (the lowering then reports torch's own error).
"""
from __future__ import annotations

from aotirt.progress import log


def name_return_types(torch) -> int:
    """Names the unnamed torch.return_types structseqs; returns how many it named (0 when nothing was needed)."""
    try:
        import torch.return_types as rt
        from torch.utils import _pytree as pytree

        unnamed = pytree.NO_SERIALIZED_TYPE_NAME_FOUND
        named = 0
        for cls in getattr(rt, "all_return_types", ()):
            node = pytree.SUPPORTED_SERIALIZED_TYPES.get(cls)
            if node is None or node.serialized_type_name != unnamed:
                continue
            name = f"torch.return_types.{cls.__name__}"
            if pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE.get(name, cls) is not cls:
                continue  # the name is taken by another type: leave both alone
            pytree.SUPPORTED_SERIALIZED_TYPES[cls] = pytree._SerializeNodeDef(
                cls, name, node.to_dumpable_context, node.from_dumpable_context)
            pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE[name] = cls
            named += 1
        return named
    except Exception as e:  # pytree internals of another torch version
        log.debug("aotirt: torch.return_types left without serialization names (%s)", e)
        return 0
