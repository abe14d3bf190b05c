"""cuplug.characterize on a real GPU: sizeof() compiles and runs a kernel that measures C types.
The rest of cuplug.tools, characterize and the auto modules is test_tools.py's."""

import pytest

from cuplug import tools

pytestmark = pytest.mark.real_gpu


def test_sizeof(ctx):
    from cuplug import characterize

    assert characterize.sizeof("double") == 8
    assert characterize.sizeof("struct pair", "struct pair { int a; char b; };") == 8
    tools.clear_context_caches()
