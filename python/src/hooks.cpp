// cuplug._core._register_hooks / _registered_hooks: the one registry of the Python objects the
// extension calls back into (hooks.hpp).
#include "hooks.hpp"

#include "array/array_object.hpp"
#include "support/convert.hpp"

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace cuplug::python::hooks {
namespace {

struct hook_info {
  const char *name;
  kind what_kind;
  const char *provider;
  const char *what;
};

constexpr std::array<hook_info, static_cast<std::size_t>(hook::count)> table{{
#define CUPLUG_HOOK_INFO(name, what_kind, provider, what) {#name, kind::what_kind, provider, what},
    CUPLUG_PYTHON_HOOKS(CUPLUG_HOOK_INFO)
#undef CUPLUG_HOOK_INFO
}};

const hook_info &info(hook h) { return table[static_cast<std::size_t>(h)]; }

// Leaked on purpose: contexts are destroyed (and context_destroyed looked up) until the very end
// of the process, after the interpreter may have cleared this module.
struct registry {
  std::array<py::object, table.size()> objects;
  std::array<std::vector<void (*)()>, table.size()> listeners;
};

registry &the_registry() {
  static auto *r = new registry();
  return *r;
}

std::string names() {
  std::string out;
  for (const hook_info &i : table)
    out += (out.empty() ? "" : ", ") + std::string(i.name);
  return out;
}

hook find(const std::string &name) {
  for (std::size_t k = 0; k < table.size(); ++k)
    if (name == table[k].name)
      return static_cast<hook>(k);
  throw py::type_error("_register_hooks() got an unknown hook '" + name +
                       "'; the hooks are: " + names());
}

const char *expected(kind k) {
  switch (k) {
  case kind::a_class:
    return "a class";
  case kind::a_callable:
    return "a callable";
  case kind::an_array_class:
    return "a subclass of cuplug._core._array.ArrayBase";
  case kind::a_flag:
    return "a bool";
  case kind::a_count:
    return "an int of at least 1";
  }
  return "?";
}

bool fits(kind k, py::handle obj) {
  PyObject *o = obj.ptr();
  switch (k) {
  case kind::a_class:
    return PyType_Check(o) != 0;
  case kind::a_callable:
    return PyCallable_Check(o) != 0;
  case kind::an_array_class:
    return PyType_Check(o) != 0 && array::array_type() != nullptr &&
           PyType_IsSubtype(reinterpret_cast<PyTypeObject *>(o), array::array_type()) != 0;
  case kind::a_flag:
    return PyBool_Check(o) != 0;
  case kind::a_count:
    return PyLong_Check(o) != 0 && PyBool_Check(o) == 0;
  }
  return false;
}

void check(hook h, py::handle obj) {
  const hook_info &i = info(h);
  if (!fits(i.what_kind, obj))
    throw py::type_error("_register_hooks(): " + std::string(i.name) + " must be " +
                         expected(i.what_kind) + " (" + i.what + "), got " + type_name(obj));
  if (i.what_kind == kind::a_count && obj.cast<long long>() < 1)
    throw py::value_error("_register_hooks(): " + std::string(i.name) +
                          " must be at least 1, got " + std::string(py::str(obj)));
}

// Every hook is checked before any is stored: a call that raises changes nothing.
void register_hooks(const py::kwargs &given) {
  std::vector<std::pair<hook, py::object>> checked;
  for (auto item : given) {
    const hook h = find(py::str(item.first).cast<std::string>());
    check(h, item.second);
    checked.emplace_back(h, py::reinterpret_borrow<py::object>(item.second));
  }
  registry &r = the_registry();
  for (auto &[h, obj] : checked)
    r.objects[static_cast<std::size_t>(h)] = std::move(obj);
  for (auto &entry : checked)
    for (void (*listener)() : r.listeners[static_cast<std::size_t>(entry.first)])
      listener();
}

py::dict registered_hooks() {
  py::dict out;
  const registry &r = the_registry();
  for (std::size_t k = 0; k < table.size(); ++k)
    out[table[k].name] = r.objects[k] ? r.objects[k] : py::object(py::none());
  return out;
}

std::string documentation() {
  std::string doc =
      "Registers objects the extension calls back into, by name (each provider module "
      "registers its own at import). Every hook is checked first (TypeError for an unknown "
      "name or a value of the wrong kind); then all are stored, replacing earlier ones.\n\n"
      "The hooks:\n";
  for (const hook_info &i : table)
    doc += std::string("  ") + i.name + " (" + expected(i.what_kind) + ", from " + i.provider +
           "): " + i.what + "\n";
  return doc;
}

} // namespace

py::handle get(hook h) noexcept { return the_registry().objects[static_cast<std::size_t>(h)]; }

py::handle require(hook h, const char *needed_for) {
  py::handle obj = get(h);
  if (!obj) {
    const hook_info &i = info(h);
    throw std::runtime_error(
        std::string("cuplug: ") + needed_for + " needs the '" + i.name + "' hook, which " +
        i.provider + " registers when it is imported, and it has not been: import " + i.provider +
        " (or the public module that uses it, such as "
        "cuplug.driver or cuplug.gpuarray) first");
  }
  return obj;
}

void on_register(hook h, void (*listener)()) {
  the_registry().listeners[static_cast<std::size_t>(h)].push_back(listener);
}

void init_hooks(py::module_ &m) {
  static const std::string doc = documentation();
  m.def("_register_hooks", &register_hooks, doc.c_str());
  m.def("_registered_hooks", &registered_hooks,
        "{hook name: the registered object, or None}, for every hook the extension knows "
        "(_register_hooks lists what each is for).");
}

} // namespace cuplug::python::hooks
