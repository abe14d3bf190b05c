#!/usr/bin/env bash
# Style gate: clang-format (.clang-format) over the C/C++ files and ruff (pyproject.toml's
# [tool.ruff]) lint and format checks over the Python files, tracked or new (not ignored).
# Exits non-zero when any file needs a change, saying how many and how to fix them.
# Usage: bash tools/check_style.sh [--fix]   (--fix rewrites the files instead of checking)
# Environment: CLANG_FORMAT (default clang-format), RUFF (default: ruff, else python3 -m ruff).
set -u
cd "$(dirname "$0")/.." || exit 2
fix=0
case "${1:-}" in
  --fix) fix=1 ;;
  "") ;;
  *) echo "usage: bash tools/check_style.sh [--fix]" >&2; exit 2 ;;
esac

clang_format=${CLANG_FORMAT:-clang-format}
if [ -n "${RUFF:-}" ]; then
  read -r -a ruff <<<"$RUFF" # a command with arguments: "python3 -m ruff"
elif command -v ruff >/dev/null; then
  ruff=(ruff)
else
  ruff=(python3 -m ruff)
fi
missing=()
command -v "$clang_format" >/dev/null || missing+=("clang-format (apt-get install clang-format)")
"${ruff[@]}" --version >/dev/null 2>&1 || missing+=("ruff (pip install ruff)")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'tools/check_style.sh: missing %s\n' "${missing[@]}" >&2
  echo "tools/check_style.sh: bash tools/ensure_deps.sh --style installs them" >&2
  exit 2
fi

files() { git ls-files --cached --others --exclude-standard -- "$@" | sort -u; }
mapfile -t cxx < <(files '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh')
mapfile -t py < <(files '*.py' '*.pyi')
failed=0

if [ $fix -eq 1 ]; then
  "$clang_format" -i "${cxx[@]}"
  "${ruff[@]}" check --fix --force-exclude "${py[@]}" || failed=1
  "${ruff[@]}" format --force-exclude "${py[@]}"
  [ $failed -eq 0 ] || echo "tools/check_style.sh: ruff check left findings --fix cannot fix"
  exit $failed
fi

echo "== clang-format ($("$clang_format" --version | grep -oE '[0-9]+\.[0-9.]+' | head -1)):" \
  "${#cxx[@]} C/C++ files"
unformatted=()
for f in "${cxx[@]}"; do
  "$clang_format" --dry-run -Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
done
if [ ${#unformatted[@]} -gt 0 ]; then
  printf '  needs formatting: %s\n' "${unformatted[@]}"
  echo "clang-format: ${#unformatted[@]} of ${#cxx[@]} files need formatting"
  failed=1
fi

echo "== ruff check ($("${ruff[@]}" --version)): ${#py[@]} Python files"
"${ruff[@]}" check --force-exclude --output-format concise "${py[@]}" || failed=1

echo "== ruff format --check"
ruff_out=$("${ruff[@]}" format --check --force-exclude "${py[@]}" 2>&1)
ruff_rc=$?
if [ $ruff_rc -ne 0 ]; then
  echo "$ruff_out" | grep -E '^Would reformat|would be reformatted|error' | sed 's/^/  /'
  failed=1
fi

if [ $failed -ne 0 ]; then
  echo "tools/check_style.sh: style check FAILED; bash tools/check_style.sh --fix formats" \
    "(lint findings it cannot fix are listed above)"
else
  echo "tools/check_style.sh: style OK"
fi
exit $failed
