#!/usr/bin/env python3
"""Checks the docs like code: README.md and docs/**/*.md against the files, the CLI and openapi.yaml.

1. Every relative link in README.md and docs/**/*.md resolves: the file exists, and a `#anchor` is the
   GitHub-style slug of a heading in it.
2. Every `paperboy …` command line in those files (in code blocks and in inline code) names a subcommand path
   that exists, and only flags that this subcommand's `--help` lists (`paperboy help` and `<sub> --help`,
   read recursively from the binary given by --binary). And every subcommand and every flag that `--help`
   lists appears in some documented command line of that subcommand, except those in EXCEPTIONS below.
3. Every `example` and `examples` in openapi.yaml validates against its schema (`$ref`s resolved).

Prints one line per finding (`file:line: what`) and exits 1 when there is any; exits 0 and prints a summary
otherwise. Needs PyYAML and jsonschema (installed with pip when missing).

Usage: scripts/check-docs.py [--binary PATH] [--root DIR]
"""

from __future__ import annotations

import argparse
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


# ---------------------------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=".build/debug/paperboy", help="the paperboy binary whose --help to read")
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent), help="the repository")
    args = parser.parse_args()
    root = Path(args.root).resolve()
    ensure_modules()
    findings = Finding()
    files = doc_files(root)
    links = check_links(root, files, findings)
    binary = args.binary if "/" in args.binary and Path(args.binary).is_absolute() else str((Path.cwd() / args.binary))
    if not Path(binary).exists():
        print(f"check-docs: {args.binary} does not exist: build it (swift build --product paperboy) or pass --binary", file=sys.stderr)
        return 2
    lines, flags = check_cli(binary, files, root, findings)
    examples = check_openapi(root, findings)
    for line in findings.lines:
        print(line)
    if findings.lines:
        print(f"check-docs: {len(findings.lines)} findings", file=sys.stderr)
        return 1
    print(
        f"check-docs: {len(files)} files, {links} relative links, {lines} paperboy command lines against {flags} flags "
        f"in --help, {examples} OpenAPI examples: all agree"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
