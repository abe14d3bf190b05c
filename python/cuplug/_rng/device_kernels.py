"""The CUDA source of PyCUDA's device-API generators (cuplug.curandom's XORWOW, MRG32k3a and Sobol
classes): one module per generator class over cuRAND's device API (curand_kernel.h), with a
kernel per distribution and dtype, the skip-ahead kernels and a ``prepare`` kernel that
initialises one state per thread. Pure source generation, apart from the classes that compile
and launch it (device_generators.py), so that CI can compile every module without a GPU."""

from __future__ import annotations

# name, output type, expression over the state pointer `s` (and mean / stddev / lambda),
# extra parameters.
DRAWS = [
    ("uniform_int", "unsigned int", "curand(s)", ""),
    ("uniform_float", "float", "curand_uniform(s)", ""),
    ("uniform_double", "double", "curand_uniform_double(s)", ""),
    ("normal_float", "float", "curand_normal(s)", ""),
    ("normal_double", "double", "curand_normal_double(s)", ""),
    ("normal_log_float", "float", "curand_log_normal(s, mean, stddev)", "float mean, float stddev"),
    (
        "normal_log_double",
        "double",
        "curand_log_normal_double(s, mean, stddev)",
        "double mean, double stddev",
    ),
    ("poisson_int", "unsigned int", "curand_poisson(s, lambda)", "double lambda"),
]
# 64-bit words: the 64-bit Sobol generators only.
DRAWS_64 = [("uniform_long", "unsigned long long", "curand(s)", "")]
# Two normal values per call: the generators with Box-Muller (XORWOW, MRG32k3a).
DRAWS_PAIRS = [
    ("normal_float2", "float2", "curand_normal2(s)", ""),
    ("normal_double2", "double2", "curand_normal2_double(s)", ""),
    (
        "normal_log_float2",
        "float2",
        "curand_log_normal2(s, mean, stddev)",
        "float mean, float stddev",
    ),
    (
        "normal_log_double2",
        "double2",
        "curand_log_normal2_double(s, mean, stddev)",
        "double mean, double stddev",
    ),
]
# (name, value type): Poisson counts whose means are the array's own values, replaced by them.
POISSON_IN_PLACE = [
    ("poisson_inplace_float", "float"),
    ("poisson_inplace_double", "double"),
    ("poisson_inplace_int", "unsigned int"),
]
# Argument formats (Function.prepare) of the draw kernels by their extra parameters; "PPdn"
# (one double: Poisson's lambda) otherwise.
FORMATS = {"": "PPn", "float mean, float stddev": "PPffn", "double mean, double stddev": "PPddn"}
OTHER_FORMAT = "PPdn"

# The prepare kernels, by family: seeds (one per generator) and an offset for the
# pseudo-random ones, direction vectors (and scramble constants) for Sobol. Sobol's generators
# read row i % rows of the tables, so that one copy of cuRAND's 20000 dimensions serves any
# number of generators (sobol.py).
_PSEUDO_PREPARE = """
__global__ void prepare(%(state)s *states, const size_t n, const unsigned int *seeds,
                        const size_t offset)
{
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n)
    curand_init(seeds[i], i, offset, &states[i]);
}"""
_SOBOL_PREPARE = """
__global__ void prepare(%(state)s *states, const size_t n, %(vectors)s *vectors,
                        const size_t rows, const size_t offset)
{
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n)
    curand_init(vectors[i %% rows], offset, &states[i]);
}"""
_SCRAMBLED_SOBOL_PREPARE = """
__global__ void prepare(%(state)s *states, const size_t n, %(vectors)s *vectors,
                        %(scramble)s *scramble, const size_t rows, const size_t offset)
{
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n)
    curand_init(vectors[i %% rows], scramble[i %% rows], offset, &states[i]);
}"""


def draws(generator_bits, has_box_muller):
    """The draw kernels, (name, output type, expression, extra parameters), of a generator."""
    found = list(DRAWS)
    if generator_bits == 64:
        found += DRAWS_64
    if has_box_muller:
        found += DRAWS_PAIRS
    return found


def skip_type(state_type, generator_bits):
    """The C type of skip-ahead counts: Sobol32's skipahead takes an unsigned int."""
    sobol32 = "Sobol" in state_type and generator_bits == 32
    return "unsigned int" if sobol32 else "unsigned long long"


def pseudo_prepare_source(state_type):
    """The prepare kernel of XORWOW and MRG32k3a: (states, n, seeds, offset)."""
    return _PSEUDO_PREPARE % {"state": state_type}


def sobol_prepare_source(state_type, generator_bits, scrambled):
    """The prepare kernel of a Sobol generator: (states, n, vectors, [scramble,] rows, offset)."""
    wide = generator_bits == 64
    names = {
        "state": state_type,
        "vectors": "curandDirectionVectors64_t" if wide else "curandDirectionVectors32_t",
        "scramble": "unsigned long long" if wide else "unsigned int",
    }
    return (_SCRAMBLED_SOBOL_PREPARE if scrambled else _SOBOL_PREPARE) % names


def _draw_source(name, state, out_type, expression, params):
    extra = f", {params}" if params else ""
    return f"""
__global__ void {name}({state} *states, {out_type} *out{extra}, const size_t n)
{{
  const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  {state} *s = &states[t];
  for (size_t i = t; i < n; i += (size_t)blockDim.x * gridDim.x)
    out[i] = {expression};
}}"""


def _poisson_in_place_source(name, state, value_type):
    return f"""
__global__ void {name}({state} *states, {value_type} *values, const size_t n)
{{
  const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  {state} *s = &states[t];
  for (size_t i = t; i < n; i += (size_t)blockDim.x * gridDim.x)
    values[i] = ({value_type})curand_poisson(s, (double)values[i]);
}}"""


def _skip_source(name, state, skip_type_, function):
    return f"""
__global__ void {name}({state} *states, const size_t n, const {skip_type_} skip)
{{
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n)
    {function}(skip, &states[i]);
}}
__global__ void {name}_array({state} *states, const size_t n, const {skip_type_} *skip)
{{
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n)
    {function}(skip[i], &states[i]);
}}"""


def module_source(state_type, draw_kernels, skip_type_, skips, prepare):
    """The whole module of one generator class: its draw kernels, the in-place Poisson kernels,
    skip_ahead (skipahead) and the further skips ((kernel name, cuRAND function) pairs), the
    prepare kernel's source, and state_size (sizeof the state, for the allocation)."""
    state = state_type
    pieces = [_draw_source(name, state, *rest) for name, *rest in draw_kernels]
    pieces += [_poisson_in_place_source(n, state, t) for n, t in POISSON_IN_PLACE]
    pieces.append(_skip_source("skip_ahead", state, skip_type_, "skipahead"))
    for name, function in skips:
        pieces.append(_skip_source(name, state, "unsigned long long", function))
    pieces.append(prepare)
    pieces.append(f"__global__ void state_size(size_t *out) {{ *out = sizeof({state}); }}")
    return '#include <curand_kernel.h>\nextern "C" {\n' + "\n".join(pieces) + "\n}\n"
