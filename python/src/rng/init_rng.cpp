// Bindings for the rng backends (cuplug._core.rng): generator objects of any rng plugin, made by
// name or from the selection; cuplug.random and cuplug.curandom sit on them.
#include "bindings.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"

#include <cuplug/backends.hpp>
#include <cuplug/config.hpp>
#include <cuplug/registry.hpp>
#include <cuplug/rng.hpp>

#include <pybind11/stl.h>

#include <map>
#include <string>

namespace cuplug::python {
namespace {

template <class E, std::size_t N>
E parse(const std::string &name, const E (&values)[N], const char *what) {
  std::string known;
  for (E v : values) {
    if (name == to_string(v))
      return v;
    known += (known.empty() ? "" : ", ") + std::string(to_string(v));
  }
  throw py::value_error("unknown rng " + std::string(what) + " '" + name + "'; " + what +
                        "s are: " + known);
}

constexpr rng_distribution distributions[] = {rng_distribution::raw_bits, rng_distribution::uniform,
                                              rng_distribution::normal, rng_distribution::lognormal,
                                              rng_distribution::poisson};
constexpr rng_dtype dtypes[] = {rng_dtype::float32, rng_dtype::float64, rng_dtype::uint32,
                                rng_dtype::uint64};
constexpr rng_table tables[] = {
    rng_table::sobol32_directions,   rng_table::scrambled_sobol32_directions,
    rng_table::sobol64_directions,   rng_table::scrambled_sobol64_directions,
    rng_table::scramble32_constants, rng_table::scramble64_constants};

// An unsigned 64-bit value from an int (or anything with __index__): TypeError naming `what`
// otherwise, ValueError outside [0, 2^64).
std::uint64_t to_u64(py::handle value, const char *what) {
  if (!PyIndex_Check(value.ptr()))
    throw py::type_error(std::string(what) + " must be an int, not " + type_name(value));
  py::object number = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!number)
    throw py::error_already_set();
  const unsigned long long v = PyLong_AsUnsignedLongLong(number.ptr());
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    throw py::value_error(std::string(what) + " must be in [0, 2**64), got " +
                          std::string(py::str(number)));
  }
  return v;
}

template <class T, std::size_t N> py::tuple names(const T (&values)[N]) {
  py::list out;
  for (T v : values)
    out.append(to_string(v));
  return py::tuple(out);
}

} // namespace

void init_rng(py::module_ &m) {
  py::module_ sub = m.def_submodule(
      "rng", "Random number backends from Python: generators of any rng plugin, by name or from "
             "the selection.");
  sub.attr("DISTRIBUTIONS") = names(distributions);
  sub.attr("DTYPES") = names(dtypes);
  sub.attr("TABLES") = names(tables);

  py::class_<rng, std::shared_ptr<rng>>(
      sub, "Rng",
      "A generator of an rng backend: a seed and a position (offset), one position per value. "
      "Not for use from several threads at once.")
      .def_property_readonly("name", &plugin_object::backend_name,
                             "The backend name it was created under.")
      .def(
          "seed", [](rng &g, const hint::size &seed) { g.seed(to_u64(seed, "seed")); },
          py::arg("seed"),
          "Sets the seed and restarts at offset 0." CUPLUG_DOC_PARAMS
          "seed : int\n    The seed, in [0, 2**64).\n")
      .def_property(
          "offset", &rng::offset,
          py::cpp_function(
              [](rng &g, const hint::size &offset) { g.set_offset(to_u64(offset, "offset")); },
              py::is_method(sub.attr("Rng")), py::arg("value")),
          "Where the next generate() starts; NotSupportedError on setting it for a generator "
          "that cannot skip (see seekable).")
      .def_property_readonly("seekable", &rng::seekable,
                             "Whether offset can be set (the generator can skip ahead).")
      .def(
          "supports",
          [](const rng &g, const std::string &distribution, const std::string &dtype) {
            return g.supports(parse(distribution, distributions, "distribution"),
                              parse(dtype, dtypes, "dtype"));
          },
          py::arg("distribution"), py::arg("dtype"),
          "Whether generate() provides `distribution` values of `dtype`." CUPLUG_DOC_PARAMS
          "distribution : str\n    One of DISTRIBUTIONS.\n"
          "dtype : str\n    One of DTYPES.\n")
      .def(
          "generate",
          [](rng &g, const std::string &distribution, const std::string &dtype,
             const hint::device_ptr_public &out, const hint::size &count, double mean,
             double stddev, double lam, const hint::stream_public &stream) {
            const rng_distribution d = parse(distribution, distributions, "distribution");
            const rng_dtype t = parse(dtype, dtypes, "dtype");
            const device_ptr ptr = to_devptr(out);
            const std::size_t n = to_size(count, "generate: count");
            const CUstream s = to_stream(stream);
            rng_params p;
            p.mean = mean;
            p.stddev = stddev;
            p.lambda = lam;
            py::gil_scoped_release nogil; // the host path and cuRAND's set-up take time
            g.generate(d, t, ptr, n, p, s);
          },
          py::arg("distribution"), py::arg("dtype"), py::arg("out"), py::arg("count"),
          py::arg("mean") = 0.0, py::arg("stddev") = 1.0, py::arg("lam") = 1.0,
          py::arg("stream") = py::none(),
          "Fills memory with random values, ordered on `stream`." CUPLUG_DOC_PARAMS
          "distribution : str\n    One of DISTRIBUTIONS.\n"
          "dtype : str\n    One of DTYPES: the values' type.\n"
          "out : DeviceAllocation | int\n    Where the values go: device memory (host memory "
          "for a backend created with memory=host).\n"
          "count : int\n    How many values (elements; even for normal and lognormal).\n"
          "mean, stddev : float\n    Normal and lognormal parameters.\n"
          "lam : float\n    The Poisson mean.\n" CUPLUG_DOC_STREAM_PARAM)
      .def(
          "table_size",
          [](const rng &g, const std::string &table) {
            return g.table_size(parse(table, tables, "table"));
          },
          py::arg("table"),
          "Entries of a published table (0 when there is none)." CUPLUG_DOC_PARAMS
          "table : str\n    One of TABLES.\n")
      .def(
          "copy_table",
          [](const rng &g, const std::string &table, const hint::size &first,
             const hint::size &count, py::buffer out) {
            const rng_table t = parse(table, tables, "table");
            const std::size_t f = to_size(first, "copy_table: first");
            const std::size_t n = to_size(count, "copy_table: count");
            py::buffer_info info = out.request(true);
            const auto bytes = static_cast<std::size_t>(info.size * info.itemsize);
            if (bytes < n * entry_size(t))
              throw py::value_error("copy_table: the output holds " + std::to_string(bytes) +
                                    " bytes; " + std::to_string(n) + " entries of " + table +
                                    " need " + std::to_string(n * entry_size(t)));
            g.copy_table(t, f, n, info.ptr);
          },
          py::arg("table"), py::arg("first"), py::arg("count"), py::arg("out"),
          "Copies entries [first, first + count) of a published table into `out`." CUPLUG_DOC_PARAMS
          "table : str\n    One of TABLES.\n"
          "first : int\n    The first entry.\n"
          "count : int\n    Entries to copy.\n"
          "out : collections.abc.Buffer\n    A writable host buffer of at least count entries' "
          "bytes.\n")
      .def_property_readonly("library_version", &rng::library_version,
                             "The version number of the library behind it (cuRAND's "
                             "curandGetVersion), 0 when there is none.")
      .def("__repr__", [](const rng &g) {
        return "<cuplug rng '" + g.backend_name() + "' at offset " + std::to_string(g.offset()) +
               ">";
      });

  sub.def(
      "create",
      [](const std::string &name, const std::map<std::string, std::string> &opts) {
        options merged = config::instance().plugin_options(plugin_kind::rng, name, opts);
        py::gil_scoped_release nogil;
        return registry::instance().create<rng>(plugin_kind::rng, name, merged);
      },
      py::arg("name"), py::arg("options") = std::map<std::string, std::string>{},
      "A new generator of an rng backend." CUPLUG_DOC_PARAMS "name : str\n    The backend.\n"
      "options : dict[str, str]\n    Options overlaid on its configured ones.\n");
  sub.def(
      "backend",
      [](const std::string &name) {
        py::gil_scoped_release nogil;
        return std::static_pointer_cast<rng>(cuplug::backend(plugin_kind::rng, name));
      },
      py::arg("name"),
      "The shared generator of an rng backend (what selecting it would use)." CUPLUG_DOC_PARAMS
      "name : str\n    The backend.\n");
  sub.def(
      "current",
      [] {
        py::gil_scoped_release nogil;
        return current_rng();
      },
      "The shared generator of the selected rng backend.");
  sub.def(
      "selected_name", [] { return config::instance().selected(plugin_kind::rng).name; },
      "The name of the selected rng backend.");
}

} // namespace cuplug::python
