"""Private driver-level machinery under the public facades (issue 25's ``_driver`` wing). Its
modules import only downward: the C++ extension (``cuplug._core``) and bottom utilities, never a
public module such as ``cuplug.driver`` or ``cuplug.tools``."""
