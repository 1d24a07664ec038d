"""FileCheck, the subset lit-style test programs use: ``CHECK``, ``CHECK-LABEL``,
``CHECK-NEXT``, ``CHECK-SAME`` and ``CHECK-NOT``, patterns of literal text with
``{{regex}}`` blocks, runs of blanks matching any blanks, checks matched in order (each
after the end of the previous match) against a program's printed output.

Used by the RUN-line programs of the official suite (:mod:`.arguments`: the interpreter's
printed results) and by IREE's programs (:mod:`.iree_run`: the tools' printed results).
"""

from __future__ import annotations

import re


def check_lines(source: str, prefixes: tuple[str, ...] = ("CHECK",)) -> tuple[tuple[str, str], ...]:
    """``(directive, pattern)`` of the CHECK lines of the given prefixes;
    directive is ``""``, ``NEXT``, ``LABEL``, ``SAME`` or ``NOT``; the pattern without its
    leading and trailing blanks (FileCheck's default)."""
    alt = "|".join(re.escape(p) for p in prefixes)
    rx = re.compile(rf"^\s*//\s*(?:{alt})(?:-(NEXT|LABEL|SAME|NOT))?:\s?(.*)$", re.M)
    return tuple((m.group(1) or "", m.group(2).strip()) for m in rx.finditer(source))


def _pattern(text: str) -> re.Pattern:
    """A FileCheck pattern: literal text with ``{{regex}}`` blocks."""
    parts = []
    pos = 0
    for m in re.finditer(r"\{\{(.*?)\}\}", text):
        parts.append(_literal(text[pos:m.start()]))
        parts.append(f"(?:{m.group(1)})")
        pos = m.end()
    parts.append(_literal(text[pos:]))
    return re.compile("".join(parts).strip())


def _literal(text: str) -> str:
    return "[ \t]+".join(re.escape(w) for w in re.split(r"[ \t]+", text))


def filecheck(output: str, checks: tuple[tuple[str, str], ...]) -> str | None:
    """None when ``output`` satisfies the checks, else why not (with the
    output from the line where the failing check searched)."""
    why = _filecheck(output, checks)
    if why is None:
        return None
    message, cur = why
    first = output.count("\n", 0, cur)
    shown = output.split("\n")[first:first + 6]
    return f"{message}; output from line {first + 1}:\n" + "\n".join(shown)


def _filecheck(output: str, checks: tuple[tuple[str, str], ...]) -> tuple[str, int] | None:
    cur = 0
    nots: list[tuple[str, re.Pattern]] = []

    def clean_gap(end: int) -> tuple[str, int] | None:
        for pat, rx in nots:
            if rx.search(output, cur, end):
                return f"CHECK-NOT: {pat!r} found in output", cur
        nots.clear()
        return None

    for directive, pat in checks:
        rx = _pattern(pat)
        if directive == "NOT":
            nots.append((pat, rx))
            continue
        if directive in ("NEXT", "SAME"):
            nl = output.find("\n", cur) if directive == "NEXT" else cur - 1
            if directive == "NEXT" and nl < 0:
                return f"CHECK-NEXT: {pat!r}: no next line in output", cur
            line_end = output.find("\n", nl + 1)
            start = nl + 1 if directive == "NEXT" else cur
            m = rx.search(output, start, len(output) if line_end < 0 else line_end)
            if m is None:
                got = output[nl + 1: None if line_end < 0 else line_end]
                return (f"CHECK-{directive}: {pat!r} not on the {'next' if directive == 'NEXT' else 'same'} line "
                        f"(got {got!r})", cur)
        else:
            m = rx.search(output, cur)
            if m is None:
                name = f"CHECK-{directive}" if directive else "CHECK"
                return f"{name}: {pat!r} not found in output", cur
        why = clean_gap(m.start())
        if why:
            return why
        cur = m.end()
    return clean_gap(len(output))
