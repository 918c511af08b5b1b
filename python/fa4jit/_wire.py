"""How the custom ops' non-tensor arguments are written: plain strings.

torch.library custom ops take tensors, numbers and strings; everything about a call that is not a
tensor (the aux list's names, kinds and trainability, the aux scalars' values, the block mask's
sizes, our kernel options) travels as text, so that the op schema is fixed, torch.compile treats
the values as constants, and autograd's input structure never depends on list contents.
No torch here: the CPU tests exercise these without it.
"""


def encode_aux_spec(entries):
    """entries: (name, is_tensor, trainable, scalar_type) -> "t:name:1,s:name:float" text."""
    out = []
    for name, is_tensor, trainable, scalar_type in entries:
        out.append(f"t:{name}:{int(bool(trainable))}" if is_tensor else f"s:{name}:{scalar_type}")
    return ",".join(out)


def decode_aux_spec(text):
    entries = []
    for item in filter(None, text.split(",")):
        kind, name, extra = item.split(":")
        if kind == "t":
            entries.append((name, True, extra == "1", None))
        else:
            entries.append((name, False, False, extra))
    return entries


def encode_options(opts):
    return ";".join(f"{k}={v}" for k, v in sorted(opts.items()))


def decode_options(text):
    out = {}
    for item in filter(None, text.split(";")):
        k, v = item.split("=", 1)
        out[k] = v
    return out


def encode_numbers(values):
    """Numbers as one string argument ("30.0,7"): torch.library flattens lists of numbers
    inconsistently (an empty list is a list, a non-empty one a leaf), which breaks the autograd
    structure check; strings are plain constants. repr() round-trips floats exactly."""
    return ",".join(repr(float(v)) if isinstance(v, float) else str(int(v)) for v in values)


def decode_numbers(text, kind=float):
    return [kind(x) for x in text.split(",")] if text else []


def trainable_names(aux_spec):
    return tuple(n for n, is_t, tr, _ in decode_aux_spec(aux_spec) if is_t and tr)
