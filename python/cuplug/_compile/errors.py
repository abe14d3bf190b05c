"""CompileError as cuplug.compiler raises it: the error lines of the log, an excerpt of the user's
source at them, and the source written to a file when CUPLUG_DUMP_SOURCE_ON_ERROR is set."""

from __future__ import annotations

import os
import re
import tempfile

from cuplug import _core

CompileError = _core.CompileError

# One diagnostic line: "[dir/]file(line): [catastrophic ]error". Nothing in it may cross a line
# end, or an echoed source line holding a "/" swallows the diagnostic after it.
_ERROR_LINE = re.compile(
    r"^(?:[^\n]*[/\\])?(?P<file>[^/\\()\n]+)\((?P<line>\d+)\): (?:catastrophic )?error",
    re.MULTILINE,
)


def _excerpt(source, lines, context=1, at_most=5):
    text = source.splitlines()
    out = []
    for n in lines[:at_most]:
        for i in range(max(1, n - context), min(len(text), n + context) + 1):
            out.append(f"{'>' if i == n else ' '}{i:5d} | {text[i - 1]}")
        out.append("")
    return "\n".join(out).rstrip()


def _dump_source(source):
    fd, path = tempfile.mkstemp(prefix="cuplug-failed-", suffix=".cu")
    with os.fdopen(fd, "w") as f:
        f.write(source)
    return path


def enriched_compile_error(e, user_source, compiled_source, source_name, hint=None):
    """CompileError with .log, .source, .line_numbers (of errors, in the user's source) and an
    excerpt of those lines in the message."""
    log = e.stderr or ""
    lines = sorted(
        {int(m.group("line")) for m in _ERROR_LINE.finditer(log) if m.group("file") == source_name}
    )
    msg = e.msg
    if lines:
        plural = "s" if len(lines) > 1 else ""
        where = ", ".join(map(str, lines))
        msg += f"\n[errors at line{plural} {where}:\n{_excerpt(user_source, lines)}]"
    if hint:
        msg += "\n[" + hint + "]"
    dumped = None
    if os.environ.get("CUPLUG_DUMP_SOURCE_ON_ERROR", "") not in ("", "0"):
        dumped = _dump_source(compiled_source)
        msg += f"\n[source written to {dumped}]"
    err = CompileError(msg, command_line=e.command_line, stdout=e.stdout, stderr=log)
    err.log = log
    err.source = user_source
    err.line_numbers = lines
    err.source_file = dumped
    return err
