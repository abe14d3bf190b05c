// Text that the shell nvcc runs its steps through would act on: refused before nvcc runs.
#pragma once

#include <string>

namespace cuplug::plugins {

// nvcc runs its steps (host preprocessor, cicc, ptxas) through /bin/sh, pasting what it got into
// those command lines: -D / -U / -I values and file paths inside double quotes (where "$(...)",
// "`...`" and "$VAR" still expand), others, such as what -Xcompiler passes on, as they are
// (where ";", "|", "&", "<", ">" and line breaks act too). nvcc strips backslashes itself, so no
// quoting of cuplug's reaches that shell intact: such text is refused instead. The NVRTC backend
// (the default) runs no shell, and its fall-back to nvcc must not start one that runs option text.
//
// Throws config_error naming `what` ("the option"), the text and the character, when `text`
// holds one the shell acts on in its context (`double_quoted`: only $ ` and line breaks).
void refuse_shell_text(const std::string &text, const std::string &what, bool double_quoted);

// Whether nvcc passes option `o` on inside double quotes: -D, -U and -I with their value in the
// same word, unless `previous` (the option before it) makes it the value of an option nvcc passes
// on as it is (-Xcompiler, --ptxas-options, ...).
bool double_quoted_by_nvcc(const std::string &o, const std::string &previous);

} // namespace cuplug::plugins
