"""MCP Bundles (``.mcpb``, manifest 0.2-0.4): inspect a file, unpack it with guards into
``<dataDir>/bundles/<name>/<version>/``, and turn its ``mcp_config`` into an ordinary stdio config.

Every entry is checked before a byte is written: ``..``, absolute paths, links and devices are ``unsafeBundle``;
more than 512 MiB unpacked, 20,000 files or a compression ratio over 100 is ``bundleTooLarge``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import stat
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from mcp_runtime.installs.schema import manifest_errors
from mcp_runtime.storage import safe_fs
from protocol.jsonrpc import AppError

MAX_UNPACKED = 512 << 20
MAX_FILES = 20_000
MAX_RATIO = 100
_RATIO_FLOOR = 1 << 20
"""Below this many unpacked bytes the ratio is not judged (a few small text files compress well)."""
BUNDLES = "bundles"
_SIG_HEADER, _SIG_FOOTER = b"MCPB_SIG_V1", b"MCPB_SIG_END"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_RUNTIMES = {"node": "node", "python": "python3", "uv": "uv"}


@dataclass(frozen=True)
class Bundle:
    """A bundle file read and checked: its manifest, its archive and its signature status."""

    path: str
    manifest: dict[str, Any]
    archive: zipfile.ZipFile
    signature: str

    @property
    def name(self) -> str:
        return str(self.manifest["name"])

    @property
    def version(self) -> str:
        return str(self.manifest["version"])


def _signature(content: bytes) -> tuple[bytes, str]:
    """The archive bytes without a signature block, and ``signed``/``unsigned``/``invalid``.

    ``signed`` means a PKCS#7 block with a certificate whose signed digest is the content's SHA-256; the signer is
    not checked against a trust store."""
    if not content.endswith(_SIG_FOOTER):
        return content, "unsigned"
    start = content.rfind(_SIG_HEADER)
    if start < 0:
        return content, "invalid"
    original = content[:start]
    length = int.from_bytes(content[start + len(_SIG_HEADER) : start + len(_SIG_HEADER) + 4], "little")
    block = content[start + len(_SIG_HEADER) + 4 : start + len(_SIG_HEADER) + 4 + length]
    try:
        from cryptography.hazmat.primitives.serialization import pkcs7

        certificates = pkcs7.load_der_pkcs7_certificates(block)
    except ValueError:
        return original, "invalid"
    digest = b"\x04\x20" + hashlib.sha256(original).digest()
    return original, "signed" if certificates and digest in block else "invalid"


def _unsafe(entry: str, why: str) -> AppError:
    return AppError("unsafeBundle", f"the bundle entry {entry[:256]!r} is {why}", entry=entry[:256])


def _check_entries(archive: zipfile.ZipFile) -> None:
    infos = archive.infolist()
    if len(infos) > MAX_FILES:
        raise AppError(
            "bundleTooLarge", f"the bundle has more than {MAX_FILES} files", limit=MAX_FILES, measure="files"
        )
    unpacked = packed = 0
    for info in infos:
        name = info.filename
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name) or ".." in parts:
            raise _unsafe(name, "outside the bundle (an absolute path or `..`)")
        kind = stat.S_IFMT(info.external_attr >> 16)
        if kind == stat.S_IFLNK:
            raise _unsafe(name, "a symbolic link")
        if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
            raise _unsafe(name, "a device, FIFO or socket")
        unpacked += info.file_size
        packed += info.compress_size
    if unpacked > MAX_UNPACKED:
        raise AppError("bundleTooLarge", "the bundle unpacks to more than 512 MiB", limit=MAX_UNPACKED, measure="bytes")
    if unpacked > _RATIO_FLOOR and unpacked > MAX_RATIO * max(packed, 1):
        raise AppError(
            "bundleTooLarge", f"the bundle's compression ratio is over {MAX_RATIO}", limit=MAX_RATIO, measure="ratio"
        )


def open_bundle(path: str) -> Bundle:
    """Read and check a bundle file (``notARegularFile``, ``invalidBundle``, ``unsafeBundle``, ``bundleTooLarge``)."""
    if not os.path.isabs(path):
        raise AppError(
            "invalidParams", "the bundle path must be absolute", errors=[{"path": "path", "message": "not absolute"}]
        )
    try:
        fd = os.open(path, os.O_RDONLY | safe_fs.O_NONBLOCK)
    except OSError as exc:
        raise AppError("invalidBundle", f"cannot read the bundle: {exc.strerror}", path=path) from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise AppError("notARegularFile", "the bundle is not a regular file", path=path)
        content = file.read(MAX_UNPACKED + 1)
    if len(content) > MAX_UNPACKED:
        raise AppError("bundleTooLarge", "the bundle file is larger than 512 MiB", limit=MAX_UNPACKED, measure="bytes")
    original, signature = _signature(content)
    try:
        archive = zipfile.ZipFile(io.BytesIO(original))
    except zipfile.BadZipFile:
        raise AppError("invalidBundle", "the file is not a ZIP archive", path=path) from None
    _check_entries(archive)
    try:
        manifest = json.loads(archive.read("manifest.json"))
    except KeyError:
        raise AppError("invalidBundle", "the bundle has no manifest.json", path=path) from None
    except (ValueError, zipfile.BadZipFile) as exc:
        raise AppError("invalidBundle", f"manifest.json does not parse: {exc}", path=path) from None
    errors = manifest_errors(manifest)
    if not errors and not (_NAME.fullmatch(str(manifest["name"])) and _NAME.fullmatch(str(manifest["version"]))):
        errors = [
            {
                "path": "name",
                "message": "name and version must be 1-128 of [A-Za-z0-9._-], starting with a letter or digit",
            }
        ]
    if errors:
        raise AppError("invalidBundle", "the bundle's manifest does not match its schema", path=path, errors=errors)
    return Bundle(path, manifest, archive, signature)


def user_inputs(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """``InstallInput``s of the manifest's ``user_config``."""
    fields = []
    for key, spec in (manifest.get("user_config") or {}).items():
        field: dict[str, Any] = {
            "key": key,
            "title": spec.get("title", key),
            "required": bool(spec.get("required", False)),
            "secret": bool(spec.get("sensitive", False)),
            "format": spec["type"],
        }
        for name in ("description", "default", "multiple", "min", "max"):
            if spec.get(name) is not None:
                field[name] = spec[name]
        fields.append(field)
    return fields


def compatibility(manifest: dict[str, Any]) -> dict[str, Any]:
    """Whether the bundle runs on this machine: its platforms, and the runtime its server type needs."""
    platforms = (manifest.get("compatibility") or {}).get("platforms")
    if platforms and sys.platform not in platforms:
        return {"ok": False, "reason": f"made for {', '.join(platforms)}, not {sys.platform}"}
    runtime = _RUNTIMES.get(manifest["server"]["type"])
    if runtime is not None and shutil.which(runtime) is None:
        return {"ok": False, "reason": f"{runtime} is not installed on this machine"}
    exposed = _sensitive_in_argv(manifest)
    if exposed is not None:
        where = "the server's command line, which every user of this machine can read"
        return {"ok": False, "reason": f"the sensitive setting {exposed!r} would be in {where}"}
    return {"ok": True}


def _sensitive_in_argv(manifest: dict[str, Any]) -> str | None:
    """A ``sensitive`` ``user_config`` key the command or arguments name (on any platform): a secret is never put
    in a child's argv, and a bundle has no other way to pass an argument, so it does not run here."""
    sensitive = {key for key, spec in (manifest.get("user_config") or {}).items() if spec.get("sensitive")}
    mcp = manifest["server"]["mcp_config"]
    configs = [mcp, *(mcp.get("platform_overrides") or {}).values()]
    for config in configs:
        for text in [config.get("command") or "", *(config.get("args") or [])]:
            for name in re.findall(r"\$\{user_config\.([^}]+)\}", str(text)):
                if name in sensitive:
                    return str(name)
    return None


def summary(manifest: dict[str, Any]) -> dict[str, Any]:
    """``BundleManifest``: what a consent dialog shows."""
    out: dict[str, Any] = {
        "name": manifest["name"],
        "version": manifest["version"],
        "author": manifest["author"],
        "description": manifest["description"],
        "tools": [{k: t[k] for k in ("name", "description") if k in t} for t in manifest.get("tools", [])],
        "prompts": [{k: p[k] for k in ("name", "description") if k in p} for p in manifest.get("prompts", [])],
        "manifestVersion": manifest.get("manifest_version", manifest.get("dxt_version")),
        "serverType": manifest["server"]["type"],
    }
    for key, wire in (("display_name", "displayName"), ("icon", "icon")):
        if manifest.get(key) is not None:
            out[wire] = manifest[key]
    return out


def check_values(manifest: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The ``user_config`` values: given, else defaults (``missingInput``/``invalidInput``)."""
    values: dict[str, Any] = {}
    for field in user_inputs(manifest):
        key, kind = field["key"], field["format"]
        value = given.get(key, field.get("default"))
        if value is None or value == "" or value == []:
            if field["required"]:
                raise AppError("missingInput", f"the input {key!r} is required", input=key)
            continue
        items = value if isinstance(value, list) and field.get("multiple") else [value]
        for item in items:
            ok = {
                "boolean": isinstance(item, bool),
                "number": isinstance(item, int | float) and not isinstance(item, bool),
            }.get(kind, isinstance(item, str))
            if (
                ok
                and kind == "number"
                and (("min" in field and item < field["min"]) or ("max" in field and item > field["max"]))
            ):
                ok = False
            if not ok:
                raise AppError("invalidInput", f"the input {key!r} is not a valid {kind}", input=key)
        values[key] = value
    return values


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def substitute(text: str, variables: dict[str, Any]) -> list[str]:
    """``${…}`` replaced once; a whole-string ``${user_config.KEY}`` of a list becomes several arguments."""
    whole = re.fullmatch(r"\$\{([^}]+)\}", text)
    if whole and isinstance(variables.get(whole.group(1)), list):
        return [_text(v) for v in variables[whole.group(1)]]
    return [re.sub(r"\$\{([^}]+)\}", lambda m: _text(variables.get(m.group(1), m.group(0))), text)]


def bundle_config(manifest: dict[str, Any], folder: Path, values: dict[str, Any], home: str) -> dict[str, Any]:
    """The stdio config (wire shape) of an unpacked bundle."""
    mcp = dict(manifest["server"]["mcp_config"])
    override = (mcp.pop("platform_overrides", None) or {}).get(sys.platform) or {}
    mcp |= override
    variables: dict[str, Any] = {
        "__dirname": str(folder),
        "HOME": home,
        "DESKTOP": os.path.join(home, "Desktop"),
        "DOCUMENTS": os.path.join(home, "Documents"),
        "/": os.sep,
    } | {f"user_config.{key}": value for key, value in values.items()}
    command = substitute(mcp["command"], variables)[0]
    kind = manifest["server"]["type"]
    if kind == "python" and command == "python":
        command = "python3"
    args = [part for arg in mcp.get("args", []) for part in substitute(arg, variables)]
    env = {name: " ".join(substitute(value, variables)) for name, value in (mcp.get("env") or {}).items()}
    env = {name: value for name, value in env.items() if "${user_config." not in value}
    config: dict[str, Any] = {"type": "stdio", "command": command, "args": args, "cwd": str(folder)}
    if env:
        config["env"] = env
    return config


def unpack(bundle: Bundle, data_dir: Path) -> Path:
    """Unpack into ``<dataDir>/bundles/<name>/<version>/`` (replacing an earlier unpack of the same version)."""
    home = data_dir / BUNDLES / bundle.name
    with safe_fs.directory(data_dir, [BUNDLES, bundle.name]):
        pass
    staging = home / f".{bundle.version}.{os.urandom(8).hex()}.unpack"
    staging.mkdir(mode=0o700)
    entry_point = str(PurePosixPath(bundle.manifest["server"].get("entry_point", "")))
    written = 0
    try:
        for info in bundle.archive.infolist():
            target = staging.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
            if info.is_dir():
                target.mkdir(mode=0o700, parents=True, exist_ok=True)
                continue
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            runnable = bundle.manifest["server"]["type"] == "binary" and info.filename == entry_point
            fd = os.open(
                target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | safe_fs.O_NOFOLLOW, 0o700 if runnable else 0o600
            )
            with os.fdopen(fd, "wb") as out, bundle.archive.open(info) as source:
                while chunk := source.read(1 << 20):
                    written += len(chunk)
                    if written > MAX_UNPACKED:
                        raise AppError(
                            "bundleTooLarge", "the bundle unpacks to more than 512 MiB", limit=MAX_UNPACKED,
                            measure="bytes",
                        )  # fmt: skip
                    out.write(chunk)
        final = home / bundle.version
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
        return final
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def remove_other_versions(data_dir: Path, name: str, keep: str) -> None:
    """After an upgrade: the earlier versions' folders go."""
    home = data_dir / BUNDLES / name
    for child in home.iterdir():
        if child.name != keep and not child.is_symlink() and child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
