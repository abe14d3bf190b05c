// Text from outside (the environment, a file) made safe to show in a message.
#pragma once

#include <string>

namespace cuplug {

// `text` for a message, its control characters (C0 and DEL) escaped as Python's repr() writes
// them (\n, \t, \x1b): a value from the environment never reaches a terminal or a log raw.
std::string printable(const std::string &text);

} // namespace cuplug
