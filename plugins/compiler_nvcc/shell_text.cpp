// Refusing option text that the shell nvcc runs its steps through would act on.
#include "shell_text.hpp"

#include <cuplug/errors.hpp>

#include <cstring>

namespace cuplug::plugins {

void refuse_shell_text(const std::string &text, const std::string &what, bool double_quoted) {
  const std::size_t at = text.find_first_of(double_quoted ? "$`\n\r" : "$`;|&<>\n\r");
  if (at == std::string::npos)
    return;
  std::string shown;
  for (char c : text)
    shown += c == '\n' ? std::string("\\n") : c == '\r' ? std::string("\\r") : std::string(1, c);
  const char c = text[at];
  const std::string which = c == '\n'   ? "a line break"
                            : c == '\r' ? "a carriage return"
                                        : std::string("'") + c + "'";
  throw config_error("nvcc cannot be given " + what + " '" + shown + "': it holds " + which +
                     ", which the shell nvcc runs its steps through (/bin/sh) would act on. "
                     "Remove it (the nvcc backend refuses $ ` ; | & < > and line breaks in "
                     "options, and $ ` in -D/-U/-I values and paths), or compile with the nvrtc "
                     "backend, which runs no shell");
}

bool double_quoted_by_nvcc(const std::string &o, const std::string &previous) {
  const bool raw_value =
      previous.rfind("-X", 0) == 0 || (previous.size() > 8 && previous.rfind("--", 0) == 0 &&
                                       previous.compare(previous.size() - 8, 8, "-options") == 0);
  if (raw_value)
    return false;
  for (const char *p :
       {"-D", "-U", "-I", "--define-macro=", "--undefine-macro=", "--include-path="})
    if (o.rfind(p, 0) == 0 && o.size() > std::strlen(p))
      return true;
  return false;
}

} // namespace cuplug::plugins
