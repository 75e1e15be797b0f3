"""An app config file seen as "its MCP section + everything else", edited without touching everything else.

JSON/JSONC files are edited by span (:mod:`mcp_runtime.importers.jsonc`); TOML files round-trip through
tomlkit, which keeps comments and formatting. After editing, the result is parsed again and checked:
the MCP section must hold exactly the intended entries and every other key must be unchanged.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol

import tomlkit
import tomlkit.exceptions
from tomlkit.items import InlineTable, Table

from mcp_runtime.importers import jsonc
from mcp_runtime.importers.files import UnparsableFile

FileFormat = Literal["json", "toml"]


class SectionDocument(Protocol):
    """The operations sync needs; ``entries`` are plain parsed values."""

    def entries(self) -> dict[str, Any]: ...
    def set(self, name: str, value: dict[str, Any]) -> None: ...
    def remove(self, name: str) -> None: ...
    def render(self) -> str: ...


def _check_entries(entries: Any, section: str) -> dict[str, Any]:
    if entries is None:
        return {}
    if not isinstance(entries, dict):
        raise UnparsableFile(f'"{section}" is not an object')
    return entries


class JsonDocument:
    """A JSON/JSONC file whose MCP section is the top-level object ``section``."""

    def __init__(self, text: str | None, section: str) -> None:
        self.section = section
        self.text = text if text is not None and text.strip() else "{}\n"
        try:
            root = jsonc.parse(self.text)
        except jsonc.JsoncError as exc:
            raise UnparsableFile(f"not valid JSON: {exc}") from exc
        if not isinstance(root.value, dict):
            raise UnparsableFile("the top level is not an object")
        sections = [m for m in root.members or [] if m.key == section]
        if len(sections) > 1:
            raise UnparsableFile(f'"{section}" appears more than once')
        self._entries = _check_entries(root.value.get(section), section)
        node = sections[0].node if sections else None
        if node is not None and node.members is not None:
            names = [m.key for m in node.members]
            if len(names) != len(set(names)):
                raise UnparsableFile(f'"{section}" holds the same server name twice')

    def entries(self) -> dict[str, Any]:
        return dict(self._entries)

    def set(self, name: str, value: dict[str, Any]) -> None:
        self.text = jsonc.set_member(self.text, (self.section,), name, value)

    def remove(self, name: str) -> None:
        self.text = jsonc.remove_member(self.text, (self.section,), name)

    def render(self) -> str:
        return self.text


class TomlDocument:
    """A TOML file whose MCP section is the table ``section`` of tables (Codex ``[mcp_servers.<name>]``)."""

    def __init__(self, text: str | None, section: str) -> None:
        self.section = section
        self.original = text or ""
        try:
            self.doc = tomlkit.parse(self.original)
        except (tomlkit.exceptions.TOMLKitError, ValueError) as exc:
            raise UnparsableFile(f"not valid TOML: {exc}") from exc
        if isinstance(self.doc.get(section), InlineTable):
            raise UnparsableFile(f'"{section}" is an inline table; only [{section}.<name>] tables can be edited')
        self._entries = _check_entries(self.doc.unwrap().get(section), section)

    def entries(self) -> dict[str, Any]:
        return dict(self._entries)

    def _section(self) -> Any:
        if self.section not in self.doc:
            self.doc[self.section] = tomlkit.table(is_super_table=True)
        return self.doc[self.section]

    def set(self, name: str, value: dict[str, Any]) -> None:
        table = tomlkit.table()
        for key, item in value.items():
            if isinstance(item, dict):
                inline = tomlkit.inline_table()
                inline.update(item)
                table[key] = inline
            else:
                table[key] = item
        table.add(tomlkit.nl())
        self._section()[name] = table

    def remove(self, name: str) -> None:
        section = self.doc.get(self.section)
        if section is not None and name in section:
            del section[name]
            if not section and isinstance(section, Table) and section.is_super_table():
                del self.doc[self.section]  # an implicit parent with nothing left renders as a stray blank line

    def render(self) -> str:
        text = tomlkit.dumps(self.doc)
        if text.endswith("\n\n") and not self.original.endswith("\n\n"):
            text = text.rstrip("\n") + "\n"  # our tables end in a blank line; not at the end of the file
        return text


def open_document(fmt: FileFormat, text: str | None, section: str) -> SectionDocument:
    """Parse ``text`` (None: the file does not exist yet); raise :class:`UnparsableFile`."""
    if fmt == "toml":
        return TomlDocument(text, section)
    return JsonDocument(text, section)


def parse_entries(fmt: FileFormat, text: str, section: str) -> dict[str, Any]:
    """Just the MCP section of a file, as plain values (for import)."""
    return open_document(fmt, text, section).entries()


def verify(fmt: FileFormat, before: str | None, after: str, section: str, expected: dict[str, Any]) -> None:
    """Fail unless ``after`` parses, its section equals ``expected`` and every other key is unchanged."""

    def others(text: str | None) -> Any:
        if fmt == "toml":
            data = tomlkit.parse(text or "").unwrap()
        else:
            data = jsonc.parse(text).value if text and text.strip() else {}
        data.pop(section, None)
        return json.dumps(data, sort_keys=True, default=str)

    if others(before) != others(after):
        raise RuntimeError("an edit outside the MCP section was detected")
    if json.dumps(parse_entries(fmt, after, section), sort_keys=True, default=str) != json.dumps(
        expected, sort_keys=True, default=str
    ):
        raise RuntimeError("the MCP section does not hold the intended entries")
