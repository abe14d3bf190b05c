"""The rng backends from Python without a GPU: both plugins load, their host paths agree bit for
bit (what switching cuplug.use(rng=...) promises), arguments are checked with clear errors, and
cuRAND's tables and version reach cuplug.curandom."""

from __future__ import annotations

import numpy as np
import pytest
from support.rng import host_draw

import cuplug
from cuplug import _core, curandom
from cuplug._rng import sobol
from cuplug._rng.stream import Stream

rng = _core.rng


def host(name, **options):
    return rng.create(name, {"memory": "host", **{k: str(v) for k, v in options.items()}})


def test_both_rng_plugins_are_installed_and_curand_is_the_default(clean_selection):
    assert {"philox", "curand"} <= set(cuplug.plugins.names("rng"))
    assert cuplug.config.selected("rng").name == "curand"
    assert cuplug.plugins.unavailable_reason("rng") is None
    assert rng.selected_name() == "curand"


def test_use_switches_the_rng_backend_and_using_puts_it_back(clean_selection):
    previous = cuplug.use(rng="philox")
    assert previous == {"rng": "curand"}
    assert rng.selected_name() == "philox"
    assert rng.current().name == "philox"
    with cuplug.using(rng="curand"):
        assert rng.current().name == "curand"
    assert rng.selected_name() == "philox"
    with pytest.raises(cuplug.config.ConfigError, match="unknown rng 'dice'; available: .*philox"):
        cuplug.use(rng="dice")


@pytest.mark.parametrize("seed", [0, 2**64 - 1, 20241124])
def test_philox_and_curands_philox_give_the_same_values_call_after_call(seed):
    if rng.backend("curand").library_version < 10304:
        pytest.skip(
            "cuRAND before 10.3.4 goes on otherwise after a double call on the same generator "
            "(cuplug's streams start afresh there: test_curands_philox_tails_made_apart_...)"
        )
    mine, theirs = host("philox"), host("curand", generator="philox")
    mine.seed(seed)
    theirs.seed(seed)
    calls = [
        ("uniform", np.float32, 7, {}),
        ("raw_bits", np.uint32, 65537, {}),
        ("normal", np.float64, 10, {"mean": 1.0, "stddev": 3.0}),
        ("uniform", np.float64, 262151, {}),
        ("lognormal", np.float32, 300000, {"mean": 0.5, "stddev": 0.25}),
        ("normal", np.float32, 2, {}),
        ("uniform", np.float64, 5, {}),
    ]
    for distribution, dtype, count, params in calls:
        a = host_draw(mine, distribution, dtype, count, **params)
        b = host_draw(theirs, distribution, dtype, count, **params)
        assert a.tobytes() == b.tobytes(), (distribution, dtype, count)
        assert mine.offset == theirs.offset


def test_uniform_float_is_the_documented_function_of_the_raw_words():
    g = host("philox")
    g.seed(99)
    words = host_draw(g, "raw_bits", np.uint32, 1000)
    g.seed(99)
    floats = host_draw(g, "uniform", np.float32, 1000)
    expected = words.astype(np.float32) * np.float32(2.0**-32) + np.float32(2.0**-33)
    assert np.array_equal(floats, expected)
    assert floats.min() > 0 and floats.max() <= 1


def test_seeds_and_offsets_are_checked():
    g = host("philox")
    with pytest.raises(ValueError, match=r"seed must be in \[0, 2\*\*64\), got -1"):
        g.seed(-1)
    with pytest.raises(
        ValueError, match=r"seed must be in \[0, 2\*\*64\), got 18446744073709551616"
    ):
        g.seed(2**64)
    with pytest.raises(TypeError, match="seed must be an int, not float"):
        g.seed(1.5)
    g.offset = 2**64 - 1
    assert g.offset == 2**64 - 1
    g.seed(np.uint64(5))
    assert g.offset == 0


def test_bad_arguments_are_clear_errors():
    g = host("philox")
    out = np.empty(16, np.float64)
    with pytest.raises(ValueError, match="unknown rng distribution 'gauss'; distributions are: "):
        g.generate("gauss", "float32", out.ctypes.data, 4)
    with pytest.raises(ValueError, match="unknown rng dtype 'float16'; dtypes are: float32"):
        g.generate("uniform", "float16", out.ctypes.data, 4)
    with pytest.raises(ValueError, match="the count must be even; got 7: generate 8 and drop"):
        g.generate("normal", "float64", out.ctypes.data, 7)
    with pytest.raises(ValueError, match="stddev must be positive"):
        g.generate("lognormal", "float64", out.ctypes.data, 2, stddev=-1.0)
    with pytest.raises(ValueError, match="poisson lambda must be positive"):
        g.generate("poisson", "uint32", out.ctypes.data, 2, lam=0.0)
    with pytest.raises(ValueError, match=r"poisson lambda must be in \(0, 1e9\]"):
        g.generate("poisson", "uint32", out.ctypes.data, 2, lam=5e9)
    g.offset = 2**64 - 2
    with pytest.raises(ValueError, match=r"pass the end of the stream \(2\^64 positions\)"):
        g.generate("uniform", "float32", out.ctypes.data, 3)
    assert g.offset == 2**64 - 2
    assert "philox" in repr(g)


def test_what_a_backend_lacks_is_not_supported_and_supports_says_so():
    g = host("philox")
    out = np.empty(4, np.uint64)
    assert not g.supports("raw_bits", "uint64")
    with pytest.raises(_core.NotSupportedError, match="does not provide raw_bits uint64"):
        g.generate("raw_bits", "uint64", out.ctypes.data, 4)
    sobol64 = host("curand", generator="sobol64")
    assert sobol64.supports("raw_bits", "uint64") and not sobol64.supports("raw_bits", "uint32")
    host_draw(sobol64, "raw_bits", np.uint64, 4)
    mt = host("curand", generator="mtgp32")
    assert not mt.seekable
    with pytest.raises(_core.NotSupportedError, match="cannot move to an offset"):
        mt.offset = 10


def test_curand_options_are_checked():
    with pytest.raises(cuplug.config.ConfigError, match='unknown generator "dice"; it has: philox'):
        host("curand", generator="dice")
    with pytest.raises(cuplug.config.ConfigError, match='ordering "seeded" does not apply'):
        host("curand", generator="sobol32", ordering="seeded")
    with pytest.raises(cuplug.config.ConfigError, match="dimensions must be 1 to 20000"):
        host("curand", generator="sobol32", dimensions=0)
    with pytest.raises(cuplug.config.ConfigError, match='memory must be "device" or "host"'):
        rng.create("philox", {"memory": "gpu"})
    with pytest.raises(cuplug.config.ConfigError, match="unknown option 'generator'"):
        rng.create("philox", {"generator": "philox"})
    three = host("curand", generator="sobol32", dimensions=3)
    with pytest.raises(ValueError, match="the count must be a multiple of 3, got 4"):
        host_draw(three, "uniform", np.float32, 4)


def test_streams_restart_after_float64_calls_so_values_depend_only_on_the_offset():
    # A float64 call makes cuRAND's (and philox's) later values depend on the split; a Stream
    # starts the backend afresh after one, so (seed, offset) alone fixes what comes next.
    opts = {"memory": "host"}
    a = Stream(7, 0, "philox", opts)
    b = Stream(7, 0, "curand", {**opts, "generator": "philox"})
    for s in (a, b):
        out = np.empty(300001, np.float64)
        s.generate("uniform", "float64", out.ctypes.data, out.size)
    assert a.offset == b.offset == 300001
    after = []
    for s in (a, b, Stream(7, 300001, "philox", opts)):
        out = np.empty(300000, np.float32)
        s.generate("uniform", "float32", out.ctypes.data, out.size)
        after.append(out)
    assert after[0].tobytes() == after[1].tobytes() == after[2].tobytes()


def test_curands_tables_and_version_reach_curandom():
    version = curandom.get_curand_version()
    assert version is not None and version >= (10, 0, 0)
    c = rng.backend("curand")
    assert c.library_version // 1000 == version[0]
    assert c.table_size("sobol32_directions") == 20000 * 32
    first = np.empty(32, np.uint32)
    c.copy_table("sobol32_directions", 0, 32, first)
    assert list(first) == [1 << (31 - k) for k in range(32)]  # dimension 1: van der Corput
    # PyCUDA repeats the 20000 dimensions for more generators.
    many = sobol.host_table("sobol32_directions", 20003, np.uint32, 32)
    assert many.shape == (20003, 32)
    assert np.array_equal(many[20000:], many[:3])
    scramble = sobol.host_table("scramble64_constants", 5, np.uint64, 1)
    assert scramble.shape == (5,) and scramble.dtype == np.uint64
    with pytest.raises(ValueError, match="holds 8 bytes; 4 entries of sobol32_directions need 16"):
        c.copy_table("sobol32_directions", 0, 4, np.empty(2, np.uint32))
    with pytest.raises(_core.NotSupportedError, match="publishes no sobol32_directions"):
        host("philox").copy_table("sobol32_directions", 0, 1, first)
    assert host("philox").library_version == 0


@pytest.mark.parametrize(
    "cls",
    [
        curandom.XORWOWRandomNumberGenerator,
        curandom.MRG32k3aRandomNumberGenerator,
        curandom.Sobol32RandomNumberGenerator,
        curandom.ScrambledSobol32RandomNumberGenerator,
        curandom.Sobol64RandomNumberGenerator,
        curandom.ScrambledSobol64RandomNumberGenerator,
    ],
)
def test_the_device_api_generators_kernels_compile(cls):
    from cuplug import compiler

    ptx = compiler.compile(
        cls.source(), no_extern_c=True, target="ptx", arch="compute_90", backend="nvrtc"
    )
    text = ptx.decode() if isinstance(ptx, bytes) else ptx
    names = ["prepare", "skip_ahead", "skip_ahead_array", "state_size"]
    names += ["uniform_int", "normal_float", "normal_log_double", "poisson_inplace_int"]
    if cls.has_box_muller:
        names += ["normal_float2", "normal_log_double2", "skip_ahead_sequence"]
    if cls.generator_bits == 64:
        names.append("uniform_long")
    for name in names:
        assert f".entry {name}(" in text, name


def test_random_checks_its_arguments_before_touching_the_gpu():
    from cuplug import random

    with pytest.raises(ValueError, match=r"seed must be in \[0, 2\*\*64\), got -3"):
        random.default_rng(-3)
    with pytest.raises(TypeError, match="seed must be an int in"):
        random.default_rng(1.5)
    with pytest.raises(TypeError, match="backend must be an rng backend name"):
        random.default_rng(1, backend=3)
    g = random.default_rng(5, backend="philox")
    assert random.default_rng(g) is g
    assert g.state == {"seed": 5, "offset": 0, "backend": "philox"}
    g.state = {"seed": 9, "offset": 100, "backend": "curand"}
    assert (g.seed, g.offset, g.backend) == (9, 100, "curand")
    with pytest.raises(TypeError, match="state must be a mapping with 'seed'"):
        g.state = 5
    with pytest.raises(ValueError, match="scale must be positive"):
        g.normal(0, -1, size=4)
    with pytest.raises(ValueError, match="lam must be non-negative"):
        g.poisson(-1, size=4)
    with pytest.raises(NotImplementedError, match="loc must be a number here"):
        g.normal(np.zeros(3), 1, size=3)
    assert repr(g) == "Generator(seed=9, offset=100, backend='curand')"
    assert random.default_rng().seed != random.default_rng().seed  # from the OS


def test_curandom_rand_refuses_other_dtypes():
    with pytest.raises(NotImplementedError, match="rand makes float32, float64, int32 or uint32"):
        curandom.rand((4,), np.float16)
    assert curandom.direction_vector_set.SCRAMBLED_VECTOR_64 == 104
    with pytest.raises(ValueError, match="direction must be a direction_vector_set"):
        curandom.generate_direction_vectors(4, 7)


@pytest.mark.parametrize("backend", ["philox", "curand"])
def test_host_paths_pass_the_distribution_tests(backend):
    # The GPU tests run these on device output; the philox host path gives the device's values
    # bit for bit (normals within a few ulps), so CI checks the same streams.
    from support.rng import ks_test, normal_cdf, poisson_chi_square

    alpha = 1e-3
    g = host(backend, **({"generator": "philox"} if backend == "curand" else {}))
    g.seed(2024)
    u = host_draw(g, "uniform", np.float64, 400_000)
    assert ks_test(u, lambda x: np.clip(x, 0, 1))[1] > alpha
    z = host_draw(g, "normal", np.float32, 100_000, mean=3.0, stddev=2.0)
    assert ks_test(z, lambda x: normal_cdf(x, 3.0, 2.0))[1] > alpha
    y = host_draw(g, "lognormal", np.float64, 100_000, mean=0.0, stddev=0.5)
    assert ks_test(np.log(y), lambda x: normal_cdf(x, 0.0, 0.5))[1] > alpha
    for lam in (0.3, 4.0, 100.0, 1e5):
        g.seed(77)
        counts = host_draw(g, "poisson", np.uint32, 400_000, lam=lam)
        statistic, dof, p = poisson_chi_square(counts, lam)
        assert p > alpha, f"Poisson({lam}): chi-square {statistic:.1f} on {dof} dof, p = {p}"


@pytest.mark.parametrize(
    ("distribution", "dtype", "params"),
    [
        ("uniform", np.float32, {}),
        ("uniform", np.float64, {}),
        ("raw_bits", np.uint32, {}),
        ("normal", np.float32, {"mean": 0.5, "stddev": 2.0}),
        ("normal", np.float64, {"mean": 0.5, "stddev": 2.0}),
        ("lognormal", np.float32, {"mean": 0.5, "stddev": 2.0}),
        ("lognormal", np.float64, {"mean": 0.5, "stddev": 2.0}),
        ("poisson", np.uint32, {"lam": 6.0}),
    ],
)
def test_curands_philox_tails_made_apart_are_one_calls_values(distribution, dtype, params):
    # cuRAND 10.3.1 to 10.3.3 leave the last count % 4 values of a Philox call unwritten at
    # offsets that are nonzero multiples of 4 (curand_generators.hpp); the plugin then makes the
    # call as one of the next multiple of 4 values into scratch memory. split_tails="always"
    # takes that path on any cuRAND: it must give one call's values (the philox plugin's, where
    # it has the distribution) and leave the offset where one call would.
    ref = host("philox") if distribution != "poisson" else host("curand", generator="philox")
    split = host("curand", generator="philox", split_tails="always")
    auto = host("curand", generator="philox")
    pairs = distribution in ("normal", "lognormal")
    counts = (2, 4, 6, 10, 14, 262150) if pairs else (1, 2, 3, 4, 5, 7, 13, 262151)
    for offset in (0, 1, 2, 3, 4, 5, 8, 12, 1016, 1017, 4096, 65540):
        for count in counts:
            values = []
            for g in (ref, split, auto):
                g.offset = offset
                first = host_draw(g, distribution, dtype, count, **params)
                if dtype == np.float64:
                    g.offset = g.offset  # what cuplug's streams do after a double call
                after = host_draw(g, "uniform", np.float32, 5)
                values.append((first.tobytes(), after.tobytes(), g.offset))
            assert values[0] == values[1] == values[2], (offset, count)
    assert split.offset == 65540 + counts[-1] + 5


def test_split_tails_takes_three_values():
    with pytest.raises(cuplug.config.ConfigError, match='split_tails must be "auto", "always" or'):
        host("curand", generator="philox", split_tails="sometimes")
    host("curand", generator="xorwow", split_tails="never")  # the other generators take it too
