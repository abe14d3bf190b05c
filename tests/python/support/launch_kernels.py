"""The kernels and argument values of the launch tests (launch/test_launch*.py): PTX with a kernel
for each parameter layout they check, a value for every prepare() format code, and the parameter
buffer a launch must give, laid out at the kernel's own offsets."""

import struct

import numpy as np

PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry ptr_int(.param .u64 p, .param .u32 n) { ret; }
.visible .entry nothing() { ret; }
.visible .entry int_vec4(.param .s32 a, .param .align 16 .b8 v[16]) { ret; }
.visible .entry vec3(.param .align 4 .b8 v[12]) { ret; }
.visible .entry one_ptr(.param .u64 p) { ret; }
.visible .entry one_double(.param .f64 d) { ret; }
.visible .entry all_types(
    .param .s8 p_b, .param .u8 p_B, .param .s16 p_h, .param .u16 p_H,
    .param .s32 p_i, .param .u32 p_I, .param .s64 p_l, .param .u64 p_L,
    .param .s64 p_q, .param .u64 p_Q, .param .b16 p_e, .param .f32 p_f,
    .param .f64 p_d, .param .align 4 .b8 p_F[8], .param .align 8 .b8 p_D[16],
    .param .u8 p_bool, .param .u64 p_P, .param .s64 p_n, .param .u64 p_N, .param .b8 p_c)
{ ret; }
"""

ALL_CODES = "bBhHiIlLqQefdFD?PnNc"
ALL_VALUES = [
    -5,
    250,
    -30000,
    60000,
    -(2**31),
    2**32 - 1,
    -(2**63),
    2**64 - 1,
    -(2**62),
    2**63,
    1.5,
    0.25,
    -2.5,
    1 + 2j,
    3 - 4j,
    True,
    0xDEADBEEF000,
    -7,
    2**40,
    b"x",
]
NUMPY_TYPES = {
    "b": np.int8,
    "B": np.uint8,
    "h": np.int16,
    "H": np.uint16,
    "i": np.int32,
    "I": np.uint32,
    "l": np.int64,
    "L": np.uint64,
    "q": np.longlong,
    "Q": np.ulonglong,
    "e": np.float16,
    "f": np.float32,
    "d": np.float64,
    "F": np.complex64,
    "D": np.complex128,
    "?": np.bool_,
}
VEC4 = np.dtype([("x", "f4"), ("y", "f4"), ("z", "f4"), ("w", "f4")])
VEC3 = np.dtype([("x", "f4"), ("y", "f4"), ("z", "f4")])


def value_bytes(code, value):
    if code in "FD":
        return np.array(value, NUMPY_TYPES[code]).tobytes()
    return struct.pack("@" + code, value)


def expected_params(function, codes, values):
    """The parameter buffer laid out at the kernel's own offsets."""
    layout = function.param_layout
    out = bytearray(max(offset + size for offset, size in layout))
    for (offset, size), code, value in zip(layout, codes, values):
        part = value_bytes(code, value)
        assert len(part) == size
        out[offset : offset + size] = part
    return bytes(out)
