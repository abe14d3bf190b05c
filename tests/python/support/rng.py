"""Helpers of the rng tests: drawing from memory=host generators into NumPy arrays, and the
statistics the GPU tests judge distributions by (no SciPy needed)."""

from __future__ import annotations

import math

import numpy as np


def host_draw(generator, distribution, dtype, count, **params):
    """`count` values from a memory=host generator (cuplug._core.rng) into a new NumPy array."""
    out = np.empty(count, dtype)
    generator.generate(distribution, np.dtype(dtype).name, out.ctypes.data, count, **params)
    return out


def kolmogorov_p(statistic, n):
    """P(D_n >= statistic) for the one-sample Kolmogorov-Smirnov statistic, by the asymptotic
    series with Stephens' small-sample correction."""
    t = (math.sqrt(n) + 0.12 + 0.11 / math.sqrt(n)) * statistic
    if t < 0.2:
        return 1.0
    total = sum((-1) ** (k - 1) * math.exp(-2 * k * k * t * t) for k in range(1, 101))
    return min(1.0, max(0.0, 2 * total))


def ks_test(samples, cdf):
    """(statistic, p-value) of samples against the continuous distribution with that cdf."""
    x = np.sort(np.asarray(samples, dtype=np.float64))
    n = x.size
    f = cdf(x)
    above = np.arange(1, n + 1) / n - f
    below = f - np.arange(0, n) / n
    d = float(max(above.max(), below.max()))
    return d, kolmogorov_p(d, n)


def normal_cdf(x, mean=0.0, sd=1.0):
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return 0.5 * (1 + erf((np.asarray(x) - mean) / (sd * math.sqrt(2))))


def chi_square_upper(statistic, dof):
    """P(X >= statistic) for X chi-square with `dof` degrees of freedom (Wilson-Hilferty)."""
    z = ((statistic / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2))


def poisson_chi_square(counts, lam):
    """(statistic, dof, p-value) of integer samples against Poisson(lam), over bins with an
    expected count of at least 5 (the tails pooled into the outermost bins)."""
    counts = np.asarray(counts, dtype=np.int64)
    n = counts.size
    top = int(max(counts.max(), lam + 10 * math.sqrt(lam) + 10))
    k = np.arange(top + 1)
    logp = k * math.log(lam) - lam - np.array([math.lgamma(i + 1) for i in k])
    p = np.exp(logp)
    p[-1] += max(0.0, 1 - p.sum())
    observed = np.bincount(np.minimum(counts, top), minlength=top + 1).astype(np.float64)
    expected = p * n
    # Pool from both ends until every bin expects 5 or more.
    bins_o, bins_e, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(observed, expected):
        acc_o += o
        acc_e += e
        if acc_e >= 5:
            bins_o.append(acc_o)
            bins_e.append(acc_e)
            acc_o = acc_e = 0.0
    if bins_e:
        bins_o[-1] += acc_o
        bins_e[-1] += acc_e
    o, e = np.array(bins_o), np.array(bins_e)
    statistic = float(((o - e) ** 2 / e).sum())
    dof = len(e) - 1
    return statistic, dof, chi_square_upper(statistic, dof)
