"""JSON with comments and trailing commas: a parser that keeps source spans, and member edits by span.

Writers must change only the MCP object of an app's file and leave every other byte alone (SPEC §6
``syncAllToLive``). A re-serializing JSON library cannot promise that, so edits here replace, insert or
delete exactly one member's text, computed from spans of a fresh parse, and everything else is copied.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_MAX_DEPTH = 256
_WS = " \t\r\n\ufeff"


class JsoncError(ValueError):
    """The text is not JSON(C); the message carries a line and column, never file contents."""

    def __init__(self, message: str, text: str, pos: int) -> None:
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        super().__init__(f"{message} at line {line} column {column}")
        self.line = line
        self.column = column


@dataclass
class Node:
    """A parsed value and where its text is: ``text[start:end]``."""

    start: int
    end: int
    value: Any
    members: list[Member] | None = None  # objects only, in source order (duplicates kept)


@dataclass
class Member:
    """``"key": value`` inside an object, plus the position of the comma after it, if any."""

    key: str
    key_start: int
    node: Node
    comma: int | None = field(default=None)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, message: str) -> JsoncError:
        return JsoncError(message, self.text, self.pos)

    def skip_trivia(self) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in _WS:
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("unterminated comment")
                self.pos = end + 2
            else:
                return

    def value(self, depth: int) -> Node:
        if depth > _MAX_DEPTH:
            raise self.fail("nesting too deep")
        self.skip_trivia()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of input")
        ch = self.text[self.pos]
        if ch == "{":
            return self.object(depth)
        if ch == "[":
            return self.array(depth)
        if ch == '"':
            start = self.pos
            value = self.string()
            return Node(start, self.pos, value)
        match = _NUMBER.match(self.text, self.pos)
        if match:
            self.pos = match.end()
            return Node(match.start(), match.end(), json.loads(match.group()))
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                start = self.pos
                self.pos += len(word)
                return Node(start, self.pos, literal)
        raise self.fail("unexpected character")

    def string(self) -> str:
        start = self.pos
        text = self.text
        index = start + 1
        while True:
            if index >= len(text):
                raise self.fail("unterminated string")
            ch = text[index]
            if ch == "\\":
                index += 2
            elif ch == '"':
                break
            else:
                index += 1
        self.pos = index + 1
        try:
            decoded = json.loads(text[start : self.pos])
        except ValueError as exc:
            self.pos = start
            raise self.fail("invalid string") from exc
        return str(decoded)

    def object(self, depth: int) -> Node:
        start = self.pos
        self.pos += 1
        members: list[Member] = []
        value: dict[str, Any] = {}
        while True:
            self.skip_trivia()
            if self.pos >= len(self.text):
                raise self.fail("unterminated object")
            if self.text[self.pos] == "}":
                self.pos += 1
                return Node(start, self.pos, value, members)
            if members and members[-1].comma is None:
                raise self.fail("expected ',' or '}'")
            if self.text[self.pos] != '"':
                raise self.fail("expected a string key")
            key_start = self.pos
            key = self.string()
            self.skip_trivia()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':'")
            self.pos += 1
            node = self.value(depth + 1)
            member = Member(key, key_start, node)
            members.append(member)
            value[key] = node.value
            self.skip_trivia()
            if self.text.startswith(",", self.pos):
                member.comma = self.pos
                self.pos += 1

    def array(self, depth: int) -> Node:
        start = self.pos
        self.pos += 1
        items: list[Any] = []
        expecting_comma = False
        while True:
            self.skip_trivia()
            if self.pos >= len(self.text):
                raise self.fail("unterminated array")
            ch = self.text[self.pos]
            if ch == "]":
                self.pos += 1
                return Node(start, self.pos, items)
            if expecting_comma:
                if ch != ",":
                    raise self.fail("expected ',' or ']'")
                self.pos += 1
                expecting_comma = False
                continue
            items.append(self.value(depth + 1).value)
            expecting_comma = True


def parse(text: str) -> Node:
    """Parse a whole document (comments and trailing commas allowed); raise :class:`JsoncError`."""
    parser = _Parser(text)
    node = parser.value(0)
    parser.skip_trivia()
    if parser.pos != len(text):
        raise parser.fail("unexpected content after the document")
    return node


def find_object(root: Node, path: tuple[str, ...]) -> Node | None:
    """The object at ``path`` (last duplicate wins, like every JSON reader); None if absent."""
    node = root
    for key in path:
        if node.members is None:
            return None
        found = [m for m in node.members if m.key == key]
        if not found:
            return None
        node = found[-1].node
    return node if node.members is not None else None


# --- editing -------------------------------------------------------------------------------------------


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _own_line_indent(text: str, pos: int) -> str | None:
    """The indentation before ``pos`` if only whitespace precedes it on its line."""
    prefix = text[_line_start(text, pos) : pos]
    return prefix if prefix.strip(" \t") == "" else None


def _line_indent(text: str, pos: int) -> str:
    start = _line_start(text, pos)
    line = text[start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _after_line_trivia(text: str, pos: int) -> int | None:
    """From ``pos``, skip blanks and comments up to the end of the line; None if real content follows."""
    while pos < len(text):
        ch = text[pos]
        if ch in " \t":
            pos += 1
        elif ch in "\r\n":
            return pos
        elif text.startswith("//", pos):
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            return end - 1 if end > 0 and text[end - 1] == "\r" else end
        elif text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            if end < 0 or "\n" in text[pos:end]:
                return None
            pos = end + 2
        else:
            return None
    return pos


def _indent_unit(text: str, root: Node) -> str:
    """The file's indentation step, guessed from the root's first member (two spaces if unknown)."""
    if root.members:
        indent = _own_line_indent(text, root.members[0].key_start)
        if indent:
            return indent
    return "  "


def _render(value: Any, unit: str, base: str, nl: str, inline: bool) -> str:
    if inline:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    rendered = json.dumps(value, ensure_ascii=False, indent=unit)
    return rendered.replace("\n", nl + base)


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, replacement in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def set_member(text: str, path: tuple[str, ...], key: str, value: Any) -> str:
    """Return ``text`` with ``<path>.<key>`` set to ``value``, creating missing objects on the way."""
    root = parse(text)
    obj = find_object(root, path)
    if obj is None:
        if not path:
            raise JsoncError("the document is not an object", text, root.start)
        return set_member(text, path[:-1], path[-1], {key: value})
    assert obj.members is not None
    nl = _newline(text)
    unit = _indent_unit(text, root)
    existing = [m for m in obj.members if m.key == key]
    if existing:
        member = existing[-1]
        indent = _own_line_indent(text, member.key_start)
        rendered = _render(value, unit, indent or "", nl, indent is None)
        return _apply(text, [(member.node.start, member.node.end, rendered)])
    key_text = json.dumps(key, ensure_ascii=False) + ": "
    if not obj.members:
        outer = _line_indent(text, obj.start)
        inner = text[obj.start + 1 : obj.end - 1]
        entry = key_text + _render(value, unit, outer + unit, nl, False)
        if inner.strip(_WS) == "":
            return _apply(text, [(obj.start + 1, obj.end - 1, nl + outer + unit + entry + nl + outer)])
        return _apply(text, [(obj.start + 1, obj.start + 1, nl + outer + unit + entry)])
    last = obj.members[-1]
    indent = _own_line_indent(text, last.key_start)
    inline = indent is None
    entry = key_text + _render(value, unit, indent or "", nl, inline)
    if last.comma is not None:
        anchor = last.comma + 1
        line_end = None if inline else _after_line_trivia(text, anchor)
        if line_end is None:
            return _apply(text, [(anchor, anchor, " " + entry + ",")])
        return _apply(text, [(line_end, line_end, nl + (indent or "") + entry + ",")])
    anchor = last.node.end
    line_end = None if inline else _after_line_trivia(text, anchor)
    if line_end is None:
        return _apply(text, [(anchor, anchor, ", " + entry)])
    if line_end == anchor:
        return _apply(text, [(anchor, anchor, "," + nl + (indent or "") + entry)])
    return _apply(text, [(anchor, anchor, ","), (line_end, line_end, nl + (indent or "") + entry)])


def remove_member(text: str, path: tuple[str, ...], key: str) -> str:
    """Return ``text`` without ``<path>.<key>`` (unchanged if absent); neighbours keep their bytes."""
    root = parse(text)
    obj = find_object(root, path)
    if obj is None or obj.members is None:
        return text
    index = next((i for i in range(len(obj.members) - 1, -1, -1) if obj.members[i].key == key), None)
    if index is None:
        return text
    members = obj.members
    member = members[index]
    tail = member.comma + 1 if member.comma is not None else member.node.end
    own_line = _own_line_indent(text, member.key_start) is not None
    line_end = _after_line_trivia(text, tail) if own_line else None
    if line_end is not None:
        # The member has its own lines: delete them whole, then fix the comma of the new last member.
        start = _line_start(text, member.key_start)
        end = line_end
        if text.startswith("\r\n", end):
            end += 2
        elif text.startswith("\n", end):
            end += 1
        edits = [(start, end, "")]
        is_last = index == len(members) - 1
        prev = members[index - 1] if index > 0 else None
        if is_last and member.comma is None and prev is not None and prev.comma is not None:
            edits.append((prev.comma, prev.comma + 1, ""))
        result = _apply(text, edits)
        if len(members) == 1:
            inner_start = obj.start + 1
            inner_end = obj.end - 1 - (end - start)
            if result[inner_start:inner_end].strip(_WS) == "":
                result = result[: obj.start] + "{}" + result[inner_end + 1 :]
        return result
    if index < len(members) - 1:
        return _apply(text, [(member.key_start, members[index + 1].key_start, "")])
    if index > 0:
        return _apply(text, [(members[index - 1].node.end, member.node.end, "")])
    return _apply(text, [(member.key_start, tail, "")])
