"""Exact integer arithmetic of the elementwise tests (tests/elementwise/test_binary.py,
test_cat.py): the qparams are doubles, i.e. exact dyadic rationals, so requantization can be done
with Python integers and rounded half to even.
"""
from fractions import Fraction

import numpy as np


def codes(q):
    """The integer codes of quantized tensor q, as an int64 numpy array."""
    return q.int_repr().numpy().astype(np.int64)


def frac(x):
    """(numerator, denominator) of float x, exactly."""
    f = Fraction(x)
    return f.numerator, f.denominator


def round_half_even(num, den):
    """round(num / den) half to even; num, den Python ints (numpy object arrays ok), den > 0."""
    q = num // den
    r = num - q * den
    twice = 2 * r
    up = (twice > den) | ((twice == den) & (q % 2 == 1))
    return q + up
