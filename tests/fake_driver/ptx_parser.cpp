// Reads PTX for what the loader needs: kernels (.entry) with their parameter layout, launch
// bounds and static shared memory; module-scope .global / .const variables, sizes and values.
#include "module_image.hpp"
#include "ptx_tokens.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <set>

namespace fake {
namespace {

using namespace ptx; // tokens, type sizes, numbers (ptx_tokens.hpp)

// A declaration `[.align N] [.v2|.v4] .type name[dims] [= init]`, as used for parameters,
// variables and shared arrays.
struct declaration {
  size_t align = 0; // explicit .align before the type, 0 if none
  size_t elem = 0;  // element size (vector width included)
  std::string type;
  std::string name;
  std::vector<unsigned long long> dims; // 0 for `[]`
  bool has_init = false;
  std::vector<unsigned char> init;
  size_t init_elems = 0;

  size_t count() const {
    size_t c = 1;
    for (auto d : dims)
      c *= d;
    return c;
  }
  size_t size() const { return elem * count(); }
  size_t alignment() const { return align ? align : elem; }
};

class parser {
public:
  explicit parser(const std::string &text) : toks_(tokenize(text)) {}

  load_result run(image_info &out) {
    if (!expect_header(out))
      return result_;
    while (pos_ < toks_.size()) {
      if (!top_level(out))
        return result_;
    }
    return result_;
  }

private:
  std::vector<token> toks_;
  size_t pos_ = 0;
  load_result result_;

  bool at_end() const { return pos_ >= toks_.size(); }
  const std::string &peek(size_t ahead = 0) const {
    static const std::string empty;
    return pos_ + ahead < toks_.size() ? toks_[pos_ + ahead].text : empty;
  }
  int line() const {
    return pos_ < toks_.size() ? toks_[pos_].line : toks_.empty() ? 1 : toks_.back().line;
  }

  bool fail(CUresult code, const std::string &message) {
    result_.code = code;
    result_.log = "ptxas application ptx input, line " + std::to_string(line()) +
                  "; error   : " + message + "\nptxas fatal   : Ptx assembly aborted due to errors";
    return false;
  }

  bool expect_header(image_info &out) {
    if (peek() != ".version")
      return fail(CUDA_ERROR_INVALID_PTX, "Missing .version directive at start of file");
    ++pos_;
    std::string v = peek();
    ++pos_;
    int major = 0, minor = 0;
    if (std::sscanf(v.c_str(), "%d.%d", &major, &minor) != 2)
      return fail(CUDA_ERROR_INVALID_PTX, "Malformed .version directive '" + v + "'");
    if (const int newest = newest_ptx_version(); major * 10 + minor > newest) {
      result_.code = CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
      result_.log = "ptxas application ptx input, line 1; fatal   : Unsupported .version " + v +
                    "; current version is '" + std::to_string(newest / 10) + "." +
                    std::to_string(newest % 10) + "'";
      return false;
    }
    if (peek() != ".target")
      return fail(CUDA_ERROR_INVALID_PTX, "Missing .target directive");
    ++pos_;
    std::string target = peek();
    ++pos_;
    while (peek() == ",")
      pos_ += 2; // further target modifiers (texmode_..., debug)
    int sm = 0;
    if (std::sscanf(target.c_str(), "sm_%d", &sm) != 1)
      return fail(CUDA_ERROR_INVALID_PTX, "Unknown target '" + target + "'");
    if (sm > 90)
      return fail(CUDA_ERROR_INVALID_PTX, "SM version specified by .target is higher than default "
                                          "SM version assumed");
    out.ptx_version = sm;
    return true;
  }

  // Skips one statement: up to ';' or over a balanced { } block. .file, .loc and
  // .address_size have no terminator: they end with their line.
  void skip_statement() {
    const std::string &first = peek();
    if (first == ".file" || first == ".loc" || first == ".address_size") {
      int start = line();
      while (!at_end() && toks_[pos_].line == start)
        ++pos_;
      return;
    }
    while (!at_end()) {
      const std::string &t = peek();
      if (t == ";") {
        ++pos_;
        return;
      }
      if (t == "{") {
        skip_block();
        return;
      }
      ++pos_;
    }
  }

  void skip_block() {
    int depth = 0;
    while (!at_end()) {
      const std::string &t = peek();
      ++pos_;
      if (t == "{")
        ++depth;
      if (t == "}" && --depth == 0)
        return;
    }
  }

  bool top_level(image_info &out) {
    bool is_extern = false;
    while (peek() == ".visible" || peek() == ".weak" || peek() == ".extern" ||
           peek() == ".common") {
      is_extern |= peek() == ".extern";
      ++pos_;
    }
    const std::string t = peek();
    if (t == ".entry") {
      ++pos_;
      return entry(out, is_extern);
    }
    if ((t == ".global" || t == ".const") && !is_extern) {
      ++pos_;
      return variable(out, t == ".const");
    }
    if (t == "{" || t == "}")
      return fail(CUDA_ERROR_INVALID_PTX, "syntax error at '" + t + "'");
    skip_statement();
    return true;
  }

  // Reads a declaration after its state space (.param / .global / .shared ...).
  bool read_declaration(declaration &d, bool allow_init) {
    size_t vector = 1;
    while (!at_end()) {
      const std::string &t = peek();
      if (t == ".align") {
        ++pos_;
        unsigned long long a = 0;
        if (!parse_number(peek(), a))
          return fail(CUDA_ERROR_INVALID_PTX, "bad .align value");
        if (d.type.empty())
          d.align = a; // after the type it qualifies a .ptr's pointee
        ++pos_;
      } else if (t == ".v2" || t == ".v4" || t == ".v8") {
        vector = std::strtoul(t.c_str() + 2, nullptr, 10);
        ++pos_;
      } else if (type_size(t)) {
        d.type = t;
        d.elem = type_size(t) * vector;
        ++pos_;
      } else if (t == ".texref" || t == ".samplerref" || t == ".surfref") {
        d.type = t;
        d.elem = 8;
        ++pos_;
      } else if (!t.empty() && t[0] == '.') {
        ++pos_; // .ptr, state spaces of a pointer parameter, .attribute(...) etc.
        if (peek() == "(")
          skip_parens();
      } else {
        break;
      }
    }
    if (d.type.empty())
      return fail(CUDA_ERROR_INVALID_PTX, "Unknown or missing type in declaration");
    d.name = peek();
    if (d.name.empty() || !(std::isalpha(static_cast<unsigned char>(d.name[0])) ||
                            d.name[0] == '_' || d.name[0] == '$' || d.name[0] == '%'))
      return fail(CUDA_ERROR_INVALID_PTX, "syntax error: expected a name, found '" + d.name + "'");
    ++pos_;
    while (peek() == "[") {
      ++pos_;
      unsigned long long dim = 0;
      if (peek() != "]") {
        if (!parse_number(peek(), dim))
          return fail(CUDA_ERROR_INVALID_PTX, "bad array size");
        ++pos_;
      }
      if (peek() != "]")
        return fail(CUDA_ERROR_INVALID_PTX, "expected ']'");
      ++pos_;
      d.dims.push_back(dim);
    }
    if (allow_init && peek() == "=") {
      ++pos_;
      d.has_init = true;
      read_initializer(d);
    }
    return true;
  }

  void skip_parens() {
    int depth = 0;
    while (!at_end()) {
      const std::string &t = peek();
      ++pos_;
      if (t == "(")
        ++depth;
      if (t == ")" && --depth == 0)
        return;
    }
  }

  // Appends one literal of the declaration's type to d.init; symbol references stay zero.
  void append_literal(declaration &d, const std::string &t) {
    size_t width = type_size(d.type);
    unsigned char bytes[16] = {};
    const bool is_float = d.type == ".f32" || d.type == ".f64";
    if (t.size() == 10 && (t.rfind("0f", 0) == 0 || t.rfind("0F", 0) == 0)) {
      uint32_t bits = uint32_t(std::strtoul(t.c_str() + 2, nullptr, 16));
      std::memcpy(bytes, &bits, 4);
    } else if (t.size() == 18 && (t.rfind("0d", 0) == 0 || t.rfind("0D", 0) == 0)) {
      uint64_t bits = std::strtoull(t.c_str() + 2, nullptr, 16);
      std::memcpy(bytes, &bits, 8);
    } else if (is_float) {
      double v = std::strtod(t.c_str(), nullptr);
      if (d.type == ".f32") {
        float f = float(v);
        std::memcpy(bytes, &f, 4);
      } else {
        std::memcpy(bytes, &v, 8);
      }
    } else if (!t.empty() && (std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '-')) {
      long long v = std::strtoll(t.c_str(), nullptr, 0);
      std::memcpy(bytes, &v, std::min<size_t>(8, width));
    }
    d.init.insert(d.init.end(), bytes, bytes + width);
    ++d.init_elems;
  }

  void read_initializer(declaration &d) {
    int depth = 0;
    while (!at_end()) {
      const std::string t = peek();
      if (t == ";" && depth == 0)
        return;
      ++pos_;
      if (t == "{") {
        ++depth;
      } else if (t == "}") {
        --depth;
      } else if (t == ",") {
        continue;
      } else if (t == "generic" || t == "(" || t == ")" || t == "+") {
        continue; // address expressions: the fake cannot relocate them
      } else {
        append_literal(d, t);
      }
    }
  }

  bool variable(image_info &out, bool constant) {
    declaration d;
    if (!read_declaration(d, true))
      return false;
    if (peek() != ";")
      return fail(CUDA_ERROR_INVALID_PTX, "syntax error: expected ';' after " + d.name);
    ++pos_;
    if (d.type == ".texref" || d.type == ".samplerref" || d.type == ".surfref")
      return true;
    global_info g;
    g.name = d.name;
    g.constant = constant;
    size_t count = d.count();
    if (count == 0)
      count = d.init_elems; // `name[] = {...}`
    g.size = d.elem * count;
    g.init = std::move(d.init);
    if (g.init.size() > g.size)
      g.init.resize(g.size);
    out.globals.push_back(std::move(g));
    return true;
  }

  bool entry(image_info &out, bool is_extern) {
    kernel_info k;
    k.name = peek();
    if (k.name.empty() || k.name == "(")
      return fail(CUDA_ERROR_INVALID_PTX, "expected a kernel name after .entry");
    ++pos_;
    if (peek() == "(") {
      ++pos_;
      while (peek() != ")") {
        if (at_end())
          return fail(CUDA_ERROR_INVALID_PTX, "unterminated parameter list of " + k.name);
        if (peek() == ",") {
          ++pos_;
          continue;
        }
        if (peek() != ".param")
          return fail(CUDA_ERROR_INVALID_PTX, "expected .param in " + k.name);
        ++pos_;
        declaration d;
        if (!read_declaration(d, false))
          return false;
        size_t offset = align_up(k.param_bytes, d.alignment());
        k.params.push_back({offset, d.size()});
        k.param_bytes = offset + d.size();
      }
      ++pos_;
    }
    // Performance directives up to the body.
    while (!at_end() && peek() != "{" && peek() != ";") {
      const std::string t = peek();
      ++pos_;
      if (t == ".pragma") {
        while (!at_end() && peek() != ";")
          ++pos_;
        ++pos_;
      } else if (t == ".maxntid" || t == ".reqntid") {
        unsigned dims[3] = {1, 1, 1};
        for (int i = 0; i < 3; ++i) {
          unsigned long long v = 0;
          if (!parse_number(peek(), v))
            break;
          dims[i] = unsigned(v);
          ++pos_;
          if (peek() == ",")
            ++pos_;
        }
        if (t == ".maxntid")
          k.maxntid = dims[0] * dims[1] * dims[2];
        else
          std::copy(dims, dims + 3, k.reqntid);
      }
    }
    if (peek() == ";") { // a prototype (.extern .entry): nothing to load
      ++pos_;
      return true;
    }
    if (is_extern)
      return fail(CUDA_ERROR_INVALID_PTX, "extern .entry " + k.name + " has a body");
    if (!body(k))
      return false;
    if (std::any_of(out.kernels.begin(), out.kernels.end(),
                    [&](const kernel_info &o) { return o.name == k.name; }))
      return fail(CUDA_ERROR_INVALID_PTX, "Duplicate definition of function '" + k.name + "'");
    out.kernels.push_back(std::move(k));
    return true;
  }

  // Skips to the end of the current statement (its ';').
  void skip_to_semicolon() {
    while (!at_end() && peek() != ";" && peek() != "{" && peek() != "}")
      ++pos_;
    if (peek() == ";")
      ++pos_;
  }

  // Walks a kernel body: every statement must be a directive, a label or a known instruction;
  // .shared and .local declarations are summed.
  bool body(kernel_info &k) {
    if (peek() != "{")
      return fail(CUDA_ERROR_INVALID_PTX, "expected '{' for the body of " + k.name);
    int depth = 0;
    while (!at_end()) {
      const std::string t = peek();
      if (t == "{") {
        ++depth;
        ++pos_;
      } else if (t == "}") {
        ++pos_;
        if (--depth == 0)
          return true;
      } else if (t == ";") {
        ++pos_;
      } else if (t == ".loc" || t == ".file") {
        int start = line();
        while (!at_end() && toks_[pos_].line == start)
          ++pos_;
      } else if (t == ".shared" || t == ".local" || t == ".extern") {
        bool ext = t == ".extern";
        if (ext)
          ++pos_;
        std::string space = peek();
        ++pos_;
        declaration d;
        if (!read_declaration(d, true))
          return false;
        if (!ext && (space == ".shared" || space == ".local")) {
          size_t &total = space == ".shared" ? k.static_shared : k.local_bytes;
          total = align_up(total, d.alignment()) + d.size();
        }
        skip_to_semicolon();
      } else if (!t.empty() && t[0] == '.') {
        skip_to_semicolon(); // .reg, .param, .pragma ...
      } else if (peek(1) == ":") {
        pos_ += 2; // label
      } else {
        if (t == "@") { // guard predicate: @p or @!p
          ++pos_;
          if (peek() == "!")
            ++pos_;
          ++pos_;
        }
        std::string opcode = peek();
        if (!known_instruction(opcode.substr(0, opcode.find('.'))))
          return fail(CUDA_ERROR_INVALID_PTX,
                      "Not a name of any known instruction: '" + opcode + "'");
        skip_to_semicolon();
      }
    }
    return fail(CUDA_ERROR_INVALID_PTX, "unexpected end of file in the body of " + k.name);
  }

  static bool known_instruction(const std::string &op) {
    static const std::set<std::string> opcodes = {
        "abs",          "activemask",    "add",       "addc",       "alloca",
        "and",          "applypriority", "atom",      "bar",        "barrier",
        "bfe",          "bfi",           "bfind",     "bmsk",       "bra",
        "brev",         "brkpt",         "brx",       "call",       "clusterlaunchcontrol",
        "clz",          "cnot",          "copysign",  "cos",        "cp",
        "createpolicy", "cvt",           "cvta",      "discard",    "div",
        "dp2a",         "dp4a",          "elect",     "ex2",        "exit",
        "fence",        "fma",           "fns",       "getctarank", "griddepcontrol",
        "isspacep",     "istypeof",      "ld",        "ldmatrix",   "ldu",
        "lg2",          "lop3",          "mad",       "mad24",      "madc",
        "mapa",         "match",         "max",       "mbarrier",   "membar",
        "min",          "mma",           "mov",       "movmatrix",  "mul",
        "mul24",        "multimem",      "nanosleep", "neg",        "not",
        "or",           "pmevent",       "popc",      "prefetch",   "prefetchu",
        "prmt",         "rcp",           "red",       "redux",      "rem",
        "ret",          "rsqrt",         "sad",       "selp",       "set",
        "setmaxnreg",   "setp",          "shf",       "shfl",       "shl",
        "shr",          "sin",           "slct",      "sqrt",       "st",
        "stackrestore", "stacksave",     "stmatrix",  "sub",        "subc",
        "suld",         "suq",           "sured",     "sust",       "szext",
        "tanh",         "tcgen05",       "tensormap", "testp",      "tex",
        "tld4",         "trap",          "txq",       "vabsdiff",   "vabsdiff2",
        "vabsdiff4",    "vadd",          "vadd2",     "vadd4",      "vavrg2",
        "vavrg4",       "vmad",          "vmax",      "vmax2",      "vmax4",
        "vmin",         "vmin2",         "vmin4",     "vote",       "vset",
        "vset2",        "vset4",         "vshl",      "vshr",       "vsub",
        "vsub2",        "vsub4",         "wgmma",     "wmma",       "xor"};
    return opcodes.count(op) != 0;
  }
};

} // namespace

load_result parse_ptx(const std::string &text, image_info &out) {
  image_info info;
  load_result r = parser(text).run(info);
  if (r.code == CUDA_SUCCESS) {
    for (auto &k : info.kernels)
      out.kernels.push_back(std::move(k));
    for (auto &g : info.globals)
      out.globals.push_back(std::move(g));
    out.ptx_version = std::max(out.ptx_version, info.ptx_version);
  }
  return r;
}

} // namespace fake
