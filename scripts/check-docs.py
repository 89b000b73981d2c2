#!/usr/bin/env python3
"""Checks the docs like code: README.md and docs/**/*.md against the files, the CLI and openapi.yaml.

1. Every relative link in README.md and docs/**/*.md resolves: the file exists, and a `#anchor` is the
   GitHub-style slug of a heading in it.
2. Every `paperboy …` command line in those files (in code blocks and in inline code) names a subcommand path
   that exists, and only flags that this subcommand's `--help` lists (`paperboy help` and `<sub> --help`,
   read recursively from the binary given by --binary). And every subcommand and every flag that `--help`
   lists appears in some documented command line of that subcommand, except those in EXCEPTIONS below.
3. Every `example` and `examples` in openapi.yaml validates against its schema (`$ref`s resolved).
4. Every JSON block (```json) in those files parses and validates against the openapi.yaml schema it declares in
   an HTML comment on the line before its fence (`<!-- schema: PUT /v1/devices/{token} -->` for a request body,
   `<!-- schema: PUT /v1/devices/{token} 201 -->` for an answer, `<!-- schema: Error -->` for a component,
   `<!-- schema: none (why) -->` for what is no API body); and every `curl` body (`-d`, `--data…`, `--json`) in a
   shell block validates against the request body of the operation its method and URL path name, with the shell's
   quoting as bash reads it and the variables of SAMPLE_VALUES filled in (a body read from a file, `@file`, is the
   reader's). That is how a refused example is caught before an app team copies it.
5. Every code block marked `<!-- from: PATH#NAME -->` on the line before its fence is, line for line, the region NAME
   of the source file PATH (between `// snippet: NAME` and `// end snippet: NAME`, its common indentation
   removed): the guide's code is the clients' code, compiled and tested, never retyped. In the files of
   SNIPPET_DOCS every Swift, Kotlin and Java block must carry such a marker, or `<!-- from: none (why) -->`.
   `--write-snippets` rewrites the marked blocks from their sources instead of reporting them.

Prints one line per finding (`file:line: what`) and exits 1 when there is any; exits 0 and prints a summary
otherwise. Needs PyYAML and jsonschema (installed with pip when missing).

Usage: scripts/check-docs.py [--binary PATH] [--root DIR] [--examples-only] [--write-snippets]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path


def ensure_modules() -> None:
    try:
        import jsonschema  # noqa: F401
        import referencing  # noqa: F401
        import yaml  # noqa: F401
    except ImportError:
        print("installing PyYAML and jsonschema (pip)…", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "pyyaml", "jsonschema"], check=True)


# Subcommands and flags that `--help` lists and the docs need not show, with the reason. Keys are the
# subcommand path ("" is `paperboy` itself); a value of None exempts the subcommand itself, a set exempts flags.
# `TODO(code)` marks a disagreement that is the code's to fix; it goes once the code is fixed.
EXCEPTIONS: dict[str, dict[str, str]] = {
    # Every command has these; the docs say so once (docs/cli.md) instead of on every line.
    "*": {
        "--help": "every command has it (argument-parser)",
        "-h": "every command has it (argument-parser)",
        "--version": "argument-parser's, on the root command",
    },
}

class Finding:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, where: str, what: str) -> None:
        self.lines.append(f"{where}: {what}")


# ---------------------------------------------------------------------------------------------- markdown


def doc_files(root: Path) -> list[Path]:
    files = [root / "README.md"] + sorted((root / "docs").rglob("*.md"))
    return [f for f in files if f.exists()]


FENCE = re.compile(r"^\s*(```|~~~)")


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # keeps letters, digits, _, - and spaces (Unicode letters too)
    return text.replace(" ", "-")


def headings(path: Path) -> set[str]:
    slugs: dict[str, int] = {}
    result: set[str] = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            continue
        match = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        if slug in slugs:
            slugs[slug] += 1
            result.add(f"{slug}-{slugs[slug]}")
        else:
            slugs[slug] = 0
            result.add(slug)
    # Explicit anchors: <a id="…"> or <a name="…">
    for match in re.finditer(r'<a\s+(?:id|name)="([^"]+)"', path.read_text(encoding="utf-8")):
        result.add(match.group(1))
    return result


LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)")


def strip_inline_code(line: str) -> str:
    return re.sub(r"(`+)(.+?)\1", lambda m: " " * len(m.group(0)), line)


def check_links(root: Path, files: list[Path], findings: Finding) -> int:
    cache: dict[Path, set[str]] = {}
    checked = 0
    for path in files:
        in_code = False
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FENCE.match(line):
                in_code = not in_code
                continue
            if in_code:
                continue
            text = strip_inline_code(line)
            targets = [m.group(1) for m in LINK.finditer(text)]
            definition = REFERENCE_DEFINITION.match(text)
            if definition:
                targets.append(definition.group(1))
            for target in targets:
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                    continue
                checked += 1
                where = f"{path.relative_to(root)}:{number}"
                file_part, _, anchor = target.partition("#")
                file_part = urllib.parse.unquote(file_part)
                destination = path if file_part == "" else (path.parent / file_part).resolve()
                if not destination.exists():
                    findings.add(where, f"link {target}: {file_part} does not exist")
                    continue
                if anchor:
                    if destination.is_dir() or destination.suffix != ".md":
                        findings.add(where, f"link {target}: an anchor into a file that is not Markdown")
                        continue
                    if destination not in cache:
                        cache[destination] = headings(destination)
                    if urllib.parse.unquote(anchor) not in cache[destination]:
                        findings.add(where, f"link {target}: no heading #{anchor} in {destination.relative_to(root)}")
    return checked


# ---------------------------------------------------------------------------------------------- the CLI


class Command:
    def __init__(self, path: tuple[str, ...]) -> None:
        self.path = path
        self.flags: set[str] = set()
        self.subcommands: dict[str, Command] = {}
        self.default: str | None = None
        # A short name's long form (`-n` → `--count`), from entries that list both.
        self.aliases: dict[str, str] = {}

    @property
    def name(self) -> str:
        return " ".join(self.path)

    @property
    def display(self) -> str:
        return " ".join(("paperboy",) + self.path)

    def all_flags(self) -> set[str]:
        """The flags accepted here: its own, and its default subcommand's (`broadcast --edition` is `broadcast start`)."""
        flags = set(self.flags)
        if self.default:
            flags |= self.subcommands[self.default].all_flags()
        return flags

    def walk(self):
        yield self
        for sub in self.subcommands.values():
            yield from sub.walk()


SECTION = re.compile(r"^([A-Z][A-Z0-9 ()'-]*):\s*$")
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][A-Za-z0-9-]*)")


NAME_TOKEN = re.compile(r"^(?:-{1,2}[A-Za-z0-9][\w-]*(?:/--?[A-Za-z0-9][\w-]*)*,?|<[^>]+>(?:\.\.\.)?,?)$")


def option_names(line: str) -> list[str]:
    """The names at the start of an option's help entry (`-n, --count <count>`, `--foo/--no-foo`), without the help
    text, which usually starts two spaces later but only one when the names fill their column."""
    names = []
    for token in line.split():
        if not NAME_TOKEN.match(token):
            break
        names.append(token)
    return names


def read_help(binary: str, path: tuple[str, ...]) -> str:
    run = subprocess.run([binary, *path, "--help"], capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        raise RuntimeError(f"{binary} {' '.join(path)} --help exited {run.returncode}: {run.stderr.strip()}")
    return run.stdout


def parse_help(text: str, command: Command) -> list[str]:
    """Fills command's flags from its help; returns the names of its subcommands (the default marked)."""
    section = None
    subcommands: list[str] = []
    for line in text.splitlines():
        header = SECTION.match(line)
        if header:
            section = header.group(1)
            continue
        if section is None or section.startswith("USAGE") or section.startswith("OVERVIEW"):
            continue
        if section == "SUBCOMMANDS":
            match = re.match(r"^  ([a-z0-9][a-z0-9-]*)( \(default\))?(\s|$)", line)
            if match:
                subcommands.append(match.group(1))
                if match.group(2):
                    command.default = match.group(1)
            continue
        if section.startswith("ARGUMENTS"):
            continue
        # An options section (OPTIONS, or an option group's title): an entry starts at column 2 with a dash;
        # its names end where two spaces start the help text.
        if re.match(r"^  -", line):
            names = FLAG.findall(" ".join(option_names(line)))
            command.flags.update(names)
            long_names = [n for n in names if n.startswith("--")]
            for name in names:
                if not name.startswith("--") and long_names:
                    command.aliases[name] = long_names[0]
    return subcommands


def load_cli(binary: str) -> Command:
    root = Command(())

    def visit(command: Command) -> None:
        names = parse_help(read_help(binary, command.path), command)
        for name in names:
            if name == "help":
                continue
            sub = Command(command.path + (name,))
            command.subcommands[name] = sub
            visit(sub)

    visit(root)
    return root


# A `paperboy` that runs the program: at a line's start, after a shell separator, `$(`, `exec`, `time`, an
# environment assignment, or as a path's last part (.build/debug/paperboy). Not paperboy-bench, paperboy_… or
# "paperboy's".
INVOCATION = re.compile(
    r"(?:^|(?<=[\s;&|(`$]))(?:[\w./-]*/)?paperboy(?=\s|$)(?![-_'’])"
)


def shell_words(text: str) -> list[str]:
    """Splits a command line into words, keeping quoted text as one word (quotes dropped)."""
    words: list[str] = []
    for match in re.finditer(r"\"[^\"]*\"|'[^']*'|\S+", text):
        words.append(match.group(0))
    return words


STOP_WORDS = {"&&", "||", ";", ">", ">>", "2>", "2>&1", "<", "&"}


def after_option(code: str, start: int) -> bool:
    """Whether the word before a `paperboy` is an option, as in `--simulator .build/release/paperboy`: an argument."""
    before = code[:start].split()
    return bool(before) and before[-1].startswith("-")


SHELL_FENCES = {"", "sh", "bash", "shell", "console", "zsh"}


def command_lines(files: list[Path], root: Path):
    """(where, text after `paperboy`) for each invocation in code blocks and inline code."""
    for path in files:
        lines = path.read_text(encoding="utf-8").splitlines()
        in_code = False
        shell = True
        pending: list[tuple[int, str]] = []
        for number, line in enumerate(lines, 1):
            if FENCE.match(line):
                in_code = not in_code
                shell = line.strip().lstrip("`~").strip().lower() in SHELL_FENCES
                pending = []
                continue
            if in_code:
                if not shell:
                    continue
                # Join continuation lines (a trailing backslash).
                if line.rstrip().endswith("\\"):
                    pending.append((number, line.rstrip()[:-1]))
                    continue
                start = pending[0][0] if pending else number
                joined = " ".join([text for _, text in pending] + [line])
                pending = []
                code = joined.split(" # ")[0] if not joined.lstrip().startswith("#") else ""
                for match in INVOCATION.finditer(code):
                    if not after_option(code, match.start()):
                        yield f"{path.relative_to(root)}:{start}", code[match.end():], True
            else:
                for span in re.finditer(r"(`+)(.+?)\1", line):
                    code = span.group(2)
                    for match in INVOCATION.finditer(code):
                        if not after_option(code, match.start()):
                            yield f"{path.relative_to(root)}:{number}", code[match.end():], False


def resolve(cli: Command, rest: str):
    """The subcommand a command line names, its flags, and an unknown subcommand word if any.

    The line ends at a shell separator, a comment, a pipe outside brackets (`[--window 30m | --capacity R]` is
    an alternative, `… | jq` a pipe), or a parenthesis that closes more than it opened (`$(paperboy … --json)`).
    """
    node = cli
    flags: list[str] = []
    unknown: str | None = None
    expecting_subcommand = True
    depth = 0
    for raw in shell_words(rest):
        if raw in STOP_WORDS or raw.startswith(("#", ">", "2>")):
            break
        if raw == "|" and depth <= 0:
            break
        quoted = raw[:1] in "\"'"
        if not quoted:
            depth += raw.count("[") + raw.count("(") - raw.count("]") - raw.count(")")
        word = raw.strip("[](){}\"',;")
        if word.startswith("-") and not quoted:
            expecting_subcommand = False
            # Alternatives written as --a|--b name several flags; --name=value names one.
            for part in re.split(r"\|", word.split("=", 1)[0]):
                part = part.strip("[](){}\"',.:…")
                if re.fullmatch(r"--?[A-Za-z0-9][A-Za-z0-9-]*", part):
                    flags.append(part)
        elif word and not quoted:
            if expecting_subcommand and word in node.subcommands:
                node = node.subcommands[word]
            else:
                if expecting_subcommand and node.subcommands and node.default is None and re.fullmatch(r"[a-z][a-z0-9-]*", word):
                    unknown = word
                expecting_subcommand = False
        else:
            expecting_subcommand = False
        if depth < 0:
            break
    return node, flags, unknown


def check_cli(binary: str, files: list[Path], root: Path, findings: Finding) -> tuple[int, int]:
    cli = load_cli(binary)
    documented: dict[tuple[str, ...], set[str]] = {}
    seen: set[tuple[str, ...]] = set()
    universal = set(EXCEPTIONS["*"])
    count = 0
    for where, rest, _ in command_lines(files, root):
        count += 1
        node, flags, unknown = resolve(cli, rest)
        if unknown:
            findings.add(where, f"`{node.display}`: {unknown} is not a subcommand of `{node.display}`")
            continue
        seen.add(node.path)
        accepted = node.all_flags() | universal
        for flag in flags:
            if flag not in accepted:
                findings.add(where, f"`{node.display}`: {flag} is not in `{node.display} --help`")
                continue
            # A group's flag may be its default subcommand's (`paperboy broadcast --edition` is `broadcast start`).
            owner = node
            while flag not in owner.flags and owner.default:
                owner = owner.subcommands[owner.default]
                seen.add(owner.path)
            documented.setdefault(owner.path, set()).add(owner.aliases.get(flag, flag))
    flag_count = 0
    for command in cli.walk():
        if command.path and not any(path[: len(command.path)] == command.path for path in seen):
            findings.add("docs", f"`{command.display}` is in --help but in no documented command line")
        exempt = set(EXCEPTIONS.get(" ".join(command.path), {})) | universal
        for flag in sorted(command.flags):
            flag_count += 1
            long_form = command.aliases.get(flag, flag)
            if flag in exempt or long_form in documented.get(command.path, set()):
                continue
            findings.add("docs", f"`{command.display}`: {flag} is in --help but in no documented `{command.display}` command line")
    for name, flags in EXCEPTIONS.items():
        if name == "*":
            continue
        for flag in flags:
            if not any(" ".join(c.path) == name and flag in c.flags for c in cli.walk()):
                findings.add("scripts/check-docs.py", f"the exception `paperboy {name} {flag}` names no flag in --help: remove it")
    return count, flag_count


# ---------------------------------------------------------------------------------------------- openapi


def check_openapi(root: Path, findings: Finding) -> int:
    import jsonschema
    import yaml
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    path = root / "openapi.yaml"
    text = path.read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    base = "urn:paperboy:openapi"
    registry = Registry().with_resource(base, Resource(contents=document, specification=DRAFT202012))

    def pointer(parts: list) -> str:
        return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts)

    def line_of(parts: list) -> int:
        # The line of the last key of the path, searched in order (good enough to find the example).
        line = 0
        lines = text.splitlines()
        for part in parts:
            if isinstance(part, int):
                continue
            for index in range(line, len(lines)):
                stripped = lines[index].strip()
                if stripped.startswith(f"{part}:") or stripped.startswith(f'"{part}":') or stripped.startswith(f"'{part}':"):
                    line = index
                    break
        return line + 1

    checked = 0

    def validate(schema_parts: list, value, example_parts: list) -> None:
        nonlocal checked
        checked += 1
        ref = base + "#" + urllib.parse.quote(pointer(schema_parts), safe="/~")
        validator = jsonschema.Draft202012Validator({"$ref": ref}, registry=registry)
        for error in sorted(validator.iter_errors(value), key=lambda e: list(e.path)):
            at = "/".join(str(p) for p in error.absolute_path) or "(the example)"
            findings.add(
                f"openapi.yaml:{line_of(example_parts)}",
                f"example {pointer(example_parts)} at {at}: {error.message}",
            )

    def visit(node, parts: list, in_schema: bool) -> None:
        if isinstance(node, dict):
            if "$ref" in node and len(node) == 1:
                return
            # A schema's own example(s).
            if in_schema:
                if "example" in node:
                    validate(parts, node["example"], parts + ["example"])
                if isinstance(node.get("examples"), list):
                    for index, value in enumerate(node["examples"]):
                        validate(parts, value, parts + ["examples", index])
            # A media type's or a parameter's example(s) against its schema.
            elif "schema" in node and ("example" in node or isinstance(node.get("examples"), dict)):
                if "example" in node:
                    validate(parts + ["schema"], node["example"], parts + ["example"])
                for name, example in (node.get("examples") or {}).items():
                    if isinstance(example, dict) and "$ref" in example:
                        target = document
                        for key in example["$ref"].lstrip("#/").split("/"):
                            target = target[key.replace("~1", "/").replace("~0", "~")]
                        example = target
                    if isinstance(example, dict) and "value" in example:
                        validate(parts + ["schema"], example["value"], parts + ["examples", name, "value"])
            for key, value in node.items():
                if in_schema and key in ("example", "examples", "enum", "const", "default"):
                    continue
                if not in_schema and key in ("example", "examples"):
                    continue
                child_in_schema = in_schema or key == "schema" or (parts[-1:] == ["schemas"] and not in_schema)
                if not in_schema and parts == ["components", "schemas"]:
                    child_in_schema = True
                if in_schema and key == "properties":
                    for name, sub in value.items():
                        visit(sub, parts + [key, name], True)
                    continue
                visit(value, parts + [key], child_in_schema)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                visit(value, parts + [index], in_schema)

    visit(document, [], False)
    return checked


# ---------------------------------------------------------------------------------------------- doc examples


# A JSON block declares what it is with an HTML comment on the line before its fence (invisible on GitHub):
#   <!-- schema: PUT /v1/devices/{token} -->       the operation's request body
#   <!-- schema: PUT /v1/devices/{token} 201 -->   the operation's answer with that status
#   <!-- schema: EditionPushAPNs -->               a schema of openapi.yaml's components
#   <!-- schema: none (why) -->                    not an API body (still parsed as JSON)
# A `curl` command's body (`-d`, `--data`, `--data-raw`, `--data-binary`, `--json`) needs no comment: its method
# (`-X`, else POST with a body) and its URL's path name the operation, whose request body schema it must match.
SCHEMA_MARKER = re.compile(r"^\s*<!--\s*schema:\s*(.*?)\s*-->\s*$")
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
DATA_FLAGS = {"-d", "--data", "--data-raw", "--data-binary", "--json", "--data-ascii"}
# What the docs' shell variables stand for when they appear in a body (a made-up but valid value each).
SAMPLE_VALUES = {
    "EDITION_ID": "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11",
    "EDITION": "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11",
    "WAVE": "1",
}


class OpenAPI:
    """openapi.yaml with a validator per schema reference, and its operations by method and path."""

    def __init__(self, root: Path) -> None:
        import yaml
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012

        self.text = (root / "openapi.yaml").read_text(encoding="utf-8")
        self.document = yaml.safe_load(self.text)
        self.base = "urn:paperboy:openapi"
        self.registry = Registry().with_resource(self.base, Resource(contents=self.document, specification=DRAFT202012))

    def errors(self, pointer: str, value) -> list[str]:
        import jsonschema

        ref = self.base + "#" + urllib.parse.quote(pointer, safe="/~")
        validator = jsonschema.Draft202012Validator({"$ref": ref}, registry=self.registry)
        found = []
        for error in sorted(validator.iter_errors(value), key=lambda e: list(e.path)):
            at = "/".join(str(p) for p in error.absolute_path) or "(the body)"
            found.append(f"at {at}: {error.message}")
        return found

    def operation(self, method: str, path: str) -> tuple[str, dict] | None:
        """The path template of openapi.yaml that `path` (no query) names with `method`: literal segments must be
        equal, `{param}` takes any one segment; the template with the most literal segments wins."""
        segments = path.strip("/").split("/")
        best: tuple[int, str] | None = None
        for template, item in (self.document.get("paths") or {}).items():
            if method not in item:
                continue
            parts = template.strip("/").split("/")
            if len(parts) != len(segments):
                continue
            literal = 0
            for part, segment in zip(parts, segments):
                if part.startswith("{") and part.endswith("}"):
                    continue
                if part != segment:
                    break
                literal += 1
            else:
                if best is None or literal > best[0]:
                    best = (literal, template)
        if best is None:
            return None
        return best[1], self.document["paths"][best[1]][method]

    @staticmethod
    def escape(part: str) -> str:
        return part.replace("~", "~0").replace("/", "~1")

    def request_pointer(self, method: str, template: str) -> str | None:
        operation = self.document["paths"][template][method]
        content = ((operation.get("requestBody") or {}).get("content") or {}).get("application/json")
        if not content or "schema" not in content:
            return None
        return f"/paths/{self.escape(template)}/{method}/requestBody/content/application~1json/schema"

    def response_pointer(self, method: str, template: str, status: str) -> str | None:
        response = (self.document["paths"][template][method].get("responses") or {}).get(status)
        if response is None:
            return None
        pointer = f"/paths/{self.escape(template)}/{method}/responses/{status}"
        if "$ref" in response:  # a shared response: follow it to its content
            pointer = response["$ref"].lstrip("#")
            target = self.document
            for key in pointer.strip("/").split("/"):
                target = target[key.replace("~1", "/").replace("~0", "~")]
            response = target
        if "application/json" not in (response.get("content") or {}):
            return None
        return f"{pointer}/content/application~1json/schema"


def shell_commands(block: list[tuple[int, str]]):
    """(line, text) of each command of a shell block: a newline ends one unless a backslash or an open quote
    continues it."""
    text = ""
    start = None
    quote = None
    for number, line in block:
        if start is None:
            start = number
        index = 0
        while index < len(line):
            char = line[index]
            if quote:
                if char == quote:
                    quote = None
                elif char == "\\" and quote == '"':
                    index += 1
            elif char in "'\"":
                quote = char
            elif char == "\\":
                index += 1
            elif char == "#" and (index == 0 or line[index - 1] in " \t;&|("):
                line = line[:index]
                break
            index += 1
        if quote:
            text += line + "\n"
            continue
        if line.rstrip().endswith("\\"):
            text += line.rstrip()[:-1] + " "
            continue
        text += line
        if text.strip():
            yield start, text
        text = ""
        start = None
    if text.strip():
        yield start, text


def substitute(text: str) -> tuple[str, list[str]]:
    """`$NAME` and `${NAME}` replaced by SAMPLE_VALUES; the names it does not know."""
    unknown: list[str] = []

    def value(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        if name in SAMPLE_VALUES:
            return SAMPLE_VALUES[name]
        unknown.append(name)
        return match.group(0)

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, text), unknown


def curl_requests(command: str):
    """(method, path, body or None) of each `curl` in a command line (shell quoting as bash reads it)."""
    import shlex

    try:
        words = shlex.split(command, comments=False, posix=True)
    except ValueError as error:
        yield None, None, f"the command does not parse as shell: {error}"
        return
    index = 0
    while index < len(words):
        if words[index] != "curl" and not words[index].endswith("/curl"):
            index += 1
            continue
        index += 1
        method = None
        url = None
        body = None
        while index < len(words) and words[index] not in ("|", "&&", "||", ";"):
            word = words[index]
            if word in ("-X", "--request") and index + 1 < len(words):
                method = words[index + 1].lower()
                index += 2
                continue
            if word in DATA_FLAGS and index + 1 < len(words):
                body = words[index + 1]
                index += 2
                continue
            if word in ("-H", "--header", "-o", "--output", "-w", "--write-out", "-u", "--user", "-A", "--user-agent",
                        "-e", "--referer", "-m", "--max-time", "--connect-timeout", "-x", "--proxy"):
                index += 2
                continue
            if not word.startswith("-") and url is None:
                url = word
            index += 1
        if url is None:
            continue
        method = method or ("post" if body is not None else "get")
        # The path after the base URL (`$API`, `https://host`): from the first `/v1/` or `/health/` on.
        match = re.search(r"(/(?:v1|health)/[^?#\s]*|/metrics|/openapi\.yaml)", url)
        yield method, (match.group(1) if match else None), body


def check_doc_examples(root: Path, files: list[Path], api: OpenAPI, findings: Finding) -> int:
    checked = 0
    for path in files:
        lines = path.read_text(encoding="utf-8").splitlines()
        in_code = False
        language = ""
        marker: tuple[int, str] | None = None
        block: list[tuple[int, str]] = []
        fence_line = 0
        previous = ""
        for number, line in enumerate(lines, 1):
            if FENCE.match(line):
                if not in_code:
                    in_code = True
                    language = line.strip().lstrip("`~").strip().lower()
                    fence_line = number
                    found = SCHEMA_MARKER.match(previous)
                    marker = (number - 1, found.group(1)) if found else None
                    block = []
                    continue
                in_code = False
                where = f"{path.relative_to(root)}:{fence_line}"
                if language in ("json", "jsonc"):
                    checked += 1
                    check_json_block(where, "\n".join(text for _, text in block), marker, api, findings)
                elif language in SHELL_FENCES:
                    for start, command in shell_commands(block):
                        if "curl" not in command:
                            continue
                        for method, request_path, body in curl_requests(command):
                            if method is None:
                                findings.add(f"{path.relative_to(root)}:{start}", body)
                                continue
                            if body is None:
                                continue
                            checked += 1
                            check_curl_body(f"{path.relative_to(root)}:{start}", method, request_path, body, api, findings)
                previous = line
                continue
            if in_code:
                block.append((number, line))
            elif line.strip():
                previous = line
    return checked


def check_json_block(where: str, text: str, marker: tuple[int, str] | None, api: OpenAPI, findings: Finding) -> None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        findings.add(where, f"the JSON block does not parse: {error}")
        return
    if marker is None:
        findings.add(
            where,
            "the JSON block declares no schema: put `<!-- schema: METHOD /path [STATUS] -->`, `<!-- schema: Name -->` "
            "or `<!-- schema: none (why) -->` on the line before its fence",
        )
        return
    declared = marker[1]
    if declared.startswith("none"):
        return
    parts = declared.split()
    if len(parts) in (2, 3) and parts[0].lower() in METHODS:
        method = parts[0].lower()
        operation = api.operation(method, parts[1].split("?")[0])
        if operation is None:
            findings.add(where, f"schema `{declared}`: openapi.yaml has no {parts[0]} {parts[1]}")
            return
        template, _ = operation
        if template != parts[1].split("?")[0]:
            findings.add(where, f"schema `{declared}`: write the path as openapi.yaml does, {template}")
            return
        if len(parts) == 3:
            pointer = api.response_pointer(method, template, parts[2])
            what = f"the answer {parts[2]} of {parts[0]} {template}"
        else:
            pointer = api.request_pointer(method, template)
            what = f"the request body of {parts[0]} {template}"
        if pointer is None:
            findings.add(where, f"schema `{declared}`: openapi.yaml gives {what} no JSON schema")
            return
    elif len(parts) == 1 and parts[0] in (api.document.get("components", {}).get("schemas") or {}):
        pointer = f"/components/schemas/{parts[0]}"
        what = f"the schema {parts[0]}"
    else:
        findings.add(where, f"schema `{declared}`: neither an operation (METHOD /path [STATUS]) nor a schema of openapi.yaml")
        return
    for error in api.errors(pointer, value):
        findings.add(where, f"the JSON block is not {what} of openapi.yaml: {error}")


def check_curl_body(where: str, method: str, request_path: str | None, body: str, api: OpenAPI, findings: Finding) -> None:
    if request_path is None:
        findings.add(where, "curl: its URL names no path of the API (/v1/…)")
        return
    path_only, _ = substitute(request_path)
    operation = api.operation(method, path_only)
    if operation is None:
        findings.add(where, f"curl: openapi.yaml has no {method.upper()} {request_path}")
        return
    template, _ = operation
    pointer = api.request_pointer(method, template)
    if pointer is None:
        findings.add(where, f"curl: {method.upper()} {template} takes no JSON body, and this one sends one")
        return
    if body.startswith("@"):  # a file the reader has: nothing to check here
        return
    text, unknown = substitute(body)
    if unknown:
        findings.add(where, f"curl: the body uses ${', $'.join(unknown)}, which scripts/check-docs.py has no sample value for (SAMPLE_VALUES)")
        return
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        findings.add(where, f"curl: the body of {method.upper()} {template} does not parse as JSON: {error}")
        return
    for error in api.errors(pointer, value):
        findings.add(where, f"curl: the body of {method.upper()} {template} is refused by openapi.yaml: {error}")


# ---------------------------------------------------------------------------------------------- main


# ---------------------------------------------------------------------------------------------- snippets

# The guides whose every Swift, Kotlin and Java block must come from a client's source (check 5).
SNIPPET_DOCS = ("docs/app-integration.md",)
SNIPPET_LANGUAGES = ("swift", "kotlin", "kt", "java")
FROM_MARKER = re.compile(r"^\s*<!--\s*from:\s*(.+?)\s*-->\s*$")
SNIPPET_START = re.compile(r"^\s*(?://|#)\s*snippet:\s*(\S+)\s*$")
SNIPPET_END = re.compile(r"^\s*(?://|#)\s*end snippet:\s*(\S+)\s*$")


def source_snippet(root: Path, reference: str) -> tuple[list[str] | None, str]:
    """The lines of region NAME in PATH (`PATH#NAME`), dedented; or None and why not."""
    if "#" not in reference:
        return None, f"'{reference}' names no region (PATH#NAME)"
    relative, name = reference.rsplit("#", 1)
    path = root / relative
    if not path.is_file():
        return None, f"{relative} does not exist"
    region: list[str] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        start, end = SNIPPET_START.match(line), SNIPPET_END.match(line)
        if start and start.group(1) == name:
            if region is not None:
                return None, f"{relative} opens region '{name}' twice"
            region = []
        elif end and end.group(1) == name:
            if region is None:
                return None, f"{relative} closes region '{name}' before opening it"
            indents = [len(text) - len(text.lstrip()) for text in region if text.strip()]
            cut = min(indents, default=0)
            # Nested markers of other regions are not the guide's code.
            return [text[cut:].rstrip() for text in region if not (SNIPPET_START.match(text) or SNIPPET_END.match(text))], ""
        elif region is not None:
            region.append(line)
    return None, f"{relative} has no region '{name}' (// snippet: {name} … // end snippet: {name})"


def check_snippets(root: Path, files: list[Path], findings: Finding, write: bool) -> int:
    checked = 0
    for path in files:
        relative = str(path.relative_to(root))
        lines = path.read_text(encoding="utf-8").splitlines()
        enforced = relative in SNIPPET_DOCS
        output: list[str] = []
        changed = False
        index = 0
        previous = ""
        while index < len(lines):
            line = lines[index]
            output.append(line)
            if not FENCE.match(line):
                if line.strip():
                    previous = line
                index += 1
                continue
            language = line.strip().lstrip("`~").strip().lower()
            end = index + 1
            while end < len(lines) and not FENCE.match(lines[end]):
                end += 1
            block = lines[index + 1 : end]
            marker = FROM_MARKER.match(previous)
            where = f"{relative}:{index + 1}"
            if marker and not marker.group(1).startswith("none"):
                checked += 1
                expected, why = source_snippet(root, marker.group(1))
                if expected is None:
                    findings.add(where, why)
                elif [text.rstrip() for text in block] != expected:
                    if write:
                        block = expected
                        changed = True
                    else:
                        findings.add(where, f"differs from {marker.group(1)}: run scripts/check-docs.py --write-snippets")
            elif enforced and not marker and language in SNIPPET_LANGUAGES:
                findings.add(where, f"a {language} block with no `<!-- from: PATH#NAME -->` (or `<!-- from: none (why) -->`) before it")
            output.extend(block)
            if end < len(lines):
                output.append(lines[end])
            previous = lines[end] if end < len(lines) else ""
            index = end + 1
        if changed:
            path.write_text("\n".join(output) + "\n", encoding="utf-8")
            print(f"check-docs: rewrote the marked snippets of {relative}")
    return checked


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=".build/debug/paperboy", help="the paperboy binary whose --help to read")
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent), help="the repository")
    parser.add_argument(
        "--examples-only",
        action="store_true",
        help="check only the JSON examples (4 and 3) and the snippets (5), without links or the CLI: no binary needed",
    )
    parser.add_argument(
        "--write-snippets",
        action="store_true",
        help="rewrite every block marked `<!-- from: PATH#NAME -->` from its source region, then check as usual",
    )
    args = parser.parse_args()
    root = Path(args.root).resolve()
    ensure_modules()
    findings = Finding()
    files = doc_files(root)
    links = lines = flags = 0
    if not args.examples_only:
        links = check_links(root, files, findings)
        binary = args.binary if "/" in args.binary and Path(args.binary).is_absolute() else str((Path.cwd() / args.binary))
        if not Path(binary).exists():
            print(f"check-docs: {args.binary} does not exist: build it (swift build --product paperboy) or pass --binary", file=sys.stderr)
            return 2
        lines, flags = check_cli(binary, files, root, findings)
    examples = check_openapi(root, findings)
    doc_examples = check_doc_examples(root, files, OpenAPI(root), findings)
    if args.write_snippets:
        check_snippets(root, files, Finding(), write=True)
    snippets = check_snippets(root, files, findings, write=False)
    for line in findings.lines:
        print(line)
    if findings.lines:
        print(f"check-docs: {len(findings.lines)} findings", file=sys.stderr)
        return 1
    if args.examples_only:
        print(
            f"check-docs: {len(files)} files, {doc_examples} JSON blocks and curl bodies, {examples} OpenAPI examples, "
            f"{snippets} snippets from the clients' sources: all agree"
        )
        return 0
    print(
        f"check-docs: {len(files)} files, {links} relative links, {lines} paperboy command lines against {flags} flags "
        f"in --help, {examples} OpenAPI examples, {doc_examples} JSON blocks and curl bodies in the docs, {snippets} snippets "
        f"from the clients' sources: all agree"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
