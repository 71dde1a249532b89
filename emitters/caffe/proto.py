"""Python message classes for caffe_subset.proto, built at import time without protoc.

The .proto text is the single source of truth: a small reader for the proto2 subset Caffe uses
(messages, nested enums, optional/repeated scalar, enum and message fields, [packed], [default])
turns it into a FileDescriptorProto, and protobuf's message factory makes the classes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

PROTO_PATH = Path(__file__).with_name("caffe_subset.proto")

SCALARS = ("double", "float", "int64", "uint64", "int32", "bool", "string", "bytes", "uint32")

_FIELD = re.compile(
    r"^(optional|repeated|required)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*(?:\[(.*)\])?\s*;$"
)
_ENUM_VALUE = re.compile(r"^(\w+)\s*=\s*(-?\d+)\s*;$")


@dataclass
class FieldDef:
    label: str
    type: str
    name: str
    number: int
    options: dict[str, str] = field(default_factory=dict)


@dataclass
class MessageDef:
    name: str
    fields: dict[str, FieldDef] = field(default_factory=dict)
    enums: dict[str, dict[str, int]] = field(default_factory=dict)


def parse_proto(text: str) -> tuple[str, dict[str, MessageDef]]:
    """(package, messages) of a proto2 file in the subset described above."""
    text = re.sub(r"//[^\n]*", "", text)
    package = ""
    messages: dict[str, MessageDef] = {}
    stack: list[tuple[str, Any]] = []  # ("message", MessageDef) | ("enum", dict)
    for raw in re.split(r"(?<=[;{}])", text):
        line = " ".join(raw.split())
        if not line:
            continue
        if line.split()[0] in ("syntax", "option", "import"):
            continue
        if line.startswith("package"):
            package = line.split()[1].rstrip(";")
            continue
        if line.startswith("message ") and line.endswith("{"):
            msg = MessageDef(line.split()[1])
            messages[msg.name] = msg
            stack.append(("message", msg))
            continue
        if line.startswith("enum ") and line.endswith("{"):
            values: dict[str, int] = {}
            if stack and stack[-1][0] == "message":
                stack[-1][1].enums[line.split()[1]] = values
            stack.append(("enum", values))
            continue
        if line == "}":
            stack.pop()
            continue
        kind, owner = stack[-1] if stack else ("", None)
        if kind == "enum":
            m = _ENUM_VALUE.match(line)
            if m:
                owner[m.group(1)] = int(m.group(2))
            continue
        m = _FIELD.match(line)
        if kind == "message" and m:
            label, ftype, name, number, opts = m.groups()
            options = {}
            for opt in (opts or "").split(","):
                if "=" in opt:
                    k, v = opt.split("=", 1)
                    options[k.strip()] = v.strip().strip("'\"")
            owner.fields[name] = FieldDef(label, ftype, name, int(number), options)
    return package, messages


def _file_descriptor(package: str, messages: dict[str, MessageDef]):
    from google.protobuf import descriptor_pb2

    fdp = descriptor_pb2.FileDescriptorProto(name="caffe_subset.proto", package=package, syntax="proto2")
    F = descriptor_pb2.FieldDescriptorProto
    labels = {"optional": F.LABEL_OPTIONAL, "repeated": F.LABEL_REPEATED, "required": F.LABEL_REQUIRED}
    for msg in messages.values():
        mp = fdp.message_type.add(name=msg.name)
        for ename, values in msg.enums.items():
            ep = mp.enum_type.add(name=ename)
            for vname, number in values.items():
                ep.value.add(name=vname, number=number)
        for f in msg.fields.values():
            fp = mp.field.add(name=f.name, number=f.number, label=labels[f.label])
            if f.type in SCALARS:
                fp.type = getattr(F, f"TYPE_{f.type.upper()}")
            elif f.type in msg.enums:
                fp.type = F.TYPE_ENUM
                fp.type_name = f".{package}.{msg.name}.{f.type}"
            else:
                fp.type = F.TYPE_MESSAGE
                fp.type_name = f".{package}.{f.type}"
            if f.options.get("packed") == "true":
                fp.options.packed = True
            if "default" in f.options:
                fp.default_value = f.options["default"]
    return fdp


@lru_cache(maxsize=1)
def messages() -> dict[str, type]:
    """Message name (e.g. 'NetParameter') -> generated class."""
    from google.protobuf import descriptor_pool, message_factory

    package, defs = parse_proto(PROTO_PATH.read_text())
    fdp = _file_descriptor(package, defs)
    pool = descriptor_pool.DescriptorPool()
    classes = message_factory.GetMessages([fdp], pool=pool)
    return {name.split(".", 1)[1]: cls for name, cls in classes.items()}
