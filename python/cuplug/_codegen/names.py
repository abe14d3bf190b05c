"""C names in generated sources: which names are C identifiers (kernel, argument and prefix names
users give), and the tag a C type name makes inside one (``cuda::std::complex<float>`` ->
``cuda_std_complex_float_``). String methods, not regular expressions: compiling one cost the
first ``x * 2`` of a process tens of microseconds."""

from __future__ import annotations

__all__ = ["is_c_identifier", "word_tag"]


def is_c_identifier(name: object) -> bool:
    """Whether ``name`` is a str of C's identifier form, [A-Za-z_][A-Za-z0-9_]* (PTX, which
    kernel names reach, takes no other letters either)."""
    return isinstance(name, str) and name.isascii() and name.isidentifier()


def word_tag(text: str) -> str:
    """``text`` with each run of characters other than letters, digits and _ made one _ (what
    ``re.sub(r"\\W+", "_", text)`` gives)."""
    out = []
    in_run = False
    for c in text:
        word = c.isalnum() or c == "_"
        if word or not in_run:
            out.append(c if word else "_")
        in_run = not word
    return "".join(out)
