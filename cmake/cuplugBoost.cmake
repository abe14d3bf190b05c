# Finds the Boost headers cuplug uses (Boost.DLL; Boost.Test's header-only runner for the tests)
# and sets CUPLUG_BOOST_INCLUDE_DIR. Looked for, first found wins:
#   1. CUPLUG_BOOST_INCLUDE_DIR, when given (-D or the cache);
#   2. the `boost-headers` Python package of the Python that builds (pip install's build
#      requirement, so `pip install .` needs no system Boost). In the CMake config installed in a
#      wheel (cuplugConfig.cmake sets _cuplug_boost_site to the site-packages holding cuplug),
#      the one installed beside cuplug by `pip install "cuplug[sdk]"` comes first, whichever
#      Python is asked (Python_EXECUTABLE, else python3 on PATH, else none: its folder is looked
#      at directly);
#   3. the system's (find_path: /usr/include, CMAKE_PREFIX_PATH, ...).
# The package's path is found again at every configure and never cached: pip's isolated build
# environment, where it lives, is deleted after each build.
set(CUPLUG_BOOST_INCLUDE_DIR "" CACHE PATH
  "Folder holding boost/dll.hpp (empty: the boost-headers Python package, else the system's)")

function(_cuplug_boost_version dir out)
  file(STRINGS "${dir}/boost/version.hpp" _line REGEX "^#define BOOST_LIB_VERSION ")
  string(REGEX REPLACE ".*\"([0-9_]+)\".*" "\\1" _version "${_line}")
  string(REPLACE "_" "." _version "${_version}")
  set(${out} "${_version}" PARENT_SCOPE)
endfunction()

if(CUPLUG_BOOST_INCLUDE_DIR)
  if(NOT EXISTS "${CUPLUG_BOOST_INCLUDE_DIR}/boost/dll.hpp")
    message(FATAL_ERROR "cuplug: CUPLUG_BOOST_INCLUDE_DIR=${CUPLUG_BOOST_INCLUDE_DIR} has no "
      "boost/dll.hpp: give the folder that holds boost/ (e.g. /usr/include), or leave it empty")
  endif()
  set(_cuplug_boost_from "CUPLUG_BOOST_INCLUDE_DIR")
else()
  # (A normal variable set to "" would stop find_program from searching: CMP0125.)
  if(Python_EXECUTABLE)
    set(_cuplug_boost_python "${Python_EXECUTABLE}")
  else()
    find_program(_cuplug_boost_python NAMES python3 python)
  endif()
  set(_cuplug_boost_pkg "")
  if(_cuplug_boost_python)
    # The argument: the site-packages of an installed wheel's cuplug, searched first (or none).
    set(_cuplug_boost_probe "import sys; sys.path[:0] = [p for p in sys.argv[1:] if p]; \
import boost_headers; print(boost_headers.get_include())")
    execute_process(
      COMMAND "${_cuplug_boost_python}" -c "${_cuplug_boost_probe}" "${_cuplug_boost_site}"
      OUTPUT_VARIABLE _cuplug_boost_pkg OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _cuplug_boost_rc ERROR_QUIET)
    if(NOT _cuplug_boost_rc EQUAL 0)
      set(_cuplug_boost_pkg "")
    endif()
  endif()
  set(_cuplug_boost_from "the boost-headers Python package, asked ${_cuplug_boost_python}")
  if(NOT _cuplug_boost_pkg AND _cuplug_boost_site
     AND EXISTS "${_cuplug_boost_site}/boost_headers/include/boost/dll.hpp")
    set(_cuplug_boost_pkg "${_cuplug_boost_site}/boost_headers/include")
    set(_cuplug_boost_from "the boost-headers Python package beside cuplug")
  endif()
  if(_cuplug_boost_pkg AND EXISTS "${_cuplug_boost_pkg}/boost/dll.hpp")
    file(TO_CMAKE_PATH "${_cuplug_boost_pkg}" CUPLUG_BOOST_INCLUDE_DIR)
  else()
    find_path(_cuplug_boost_system boost/dll.hpp)
    if(NOT _cuplug_boost_system)
      if(_cuplug_boost_site)
        # An installed wheel: its build's boost-headers were in pip's build environment only.
        message(FATAL_ERROR "cuplug: no Boost headers (boost/dll.hpp) found: plugins built "
          "against the cuplug installed in ${_cuplug_boost_site} need the `sdk` extra. Install "
          "it into that environment with `python -m pip install \"cuplug[sdk]\"` (the same "
          "Python that installed cuplug; docs/plugins.md), or `apt-get install libboost-dev`, "
          "or set CUPLUG_BOOST_INCLUDE_DIR to the folder that holds boost/.")
      endif()
      message(FATAL_ERROR "cuplug: no Boost headers (boost/dll.hpp) found. Install them with "
        "`${_cuplug_boost_python} -m pip install boost-headers` (what `pip install .` does "
        "itself) or `apt-get install libboost-dev`, or set CUPLUG_BOOST_INCLUDE_DIR to the "
        "folder that holds boost/.")
    endif()
    set(CUPLUG_BOOST_INCLUDE_DIR "${_cuplug_boost_system}")
    set(_cuplug_boost_from "the system")
  endif()
endif()
_cuplug_boost_version("${CUPLUG_BOOST_INCLUDE_DIR}" CUPLUG_BOOST_VERSION)
if(CUPLUG_BOOST_VERSION VERSION_LESS 1.74)
  message(FATAL_ERROR "cuplug: Boost ${CUPLUG_BOOST_VERSION} in ${CUPLUG_BOOST_INCLUDE_DIR} is "
    "older than 1.74: `pip install boost-headers` or set CUPLUG_BOOST_INCLUDE_DIR to a newer one")
endif()
message(STATUS "cuplug: Boost ${CUPLUG_BOOST_VERSION} headers in ${CUPLUG_BOOST_INCLUDE_DIR} "
  "(from ${_cuplug_boost_from})")
