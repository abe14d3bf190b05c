"""cuplug.debug (PyCUDA's pycuda.debug): a script run through it compiles with debugging on."""

import subprocess
import sys
import textwrap


def run(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "cuplug.debug", *args],
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )


def test_the_script_runs_with_debugging_on_and_its_arguments(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import cuplug.compat.pycuda
            import pycuda.driver as drv
            print("debugging", drv.CUDA_DEBUGGING, "argv", sys.argv[1:], "name", __name__)
            """
        )
    )
    proc = run(str(script), "a", "b")
    assert proc.returncode == 0, proc.stderr
    assert "debugging True argv ['a', 'b'] name __main__" in proc.stdout


def test_missing_script_and_no_script_are_clear_errors(tmp_path):
    proc = run(str(tmp_path / "nope.py"))
    assert proc.returncode == 1 and "nope.py does not exist" in proc.stderr
    proc = run()
    assert proc.returncode == 2 and "usage: python -m cuplug.debug SCRIPT" in proc.stderr


def test_importing_it_turns_debugging_on():
    code = "import cuplug.driver as d; assert not d.CUDA_DEBUGGING; import cuplug.debug;"
    code += " print(d.CUDA_DEBUGGING)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "True", proc.stderr
