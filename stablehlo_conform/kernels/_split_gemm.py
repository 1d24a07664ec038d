"""One 2-D float product on several threads, only where its pieces give the whole call's bits.

The engine's float product is one BLAS call (``np.dot``) on one BLAS thread (see
``_blas_threads``). OpenBLAS picks its kernels and its blocking by shape, so a block of rows or
columns of the result computed by a call of its own can round differently from the same block
of the whole call (``docs/benchmarks.md``): on an AVX-512 machine the column halves of a
``(750, 384) @ (384, 384)`` product give the whole call's bits and its row halves at 368 do
not, and for ``(197, 768) @ (768, 768)`` rows at 96 do and columns at 384 do not. So a product
is cut into pieces only where this process has *seen* the cut give the whole call's bits
(:func:`split_product`):

- the first time a product of one kind is met (the shapes, the element type, each operand's
  layout, C or Fortran order, and the thread count), the cuts of :func:`_cuts` are tried on
  operands of that kind filled with pseudo-random values of full significands in [-1, 1)
  (sums whose roundings depend on the order of the additions); the first whose every bit
  equals the whole call's is kept for that kind if it took at most :data:`FASTER` of the
  whole call's time, else none is;
- a BLAS call is a data-oblivious sequence of roundings fixed by its arguments: the shapes,
  the layouts, the thread count. The operands' addresses are not among them (OpenBLAS copies
  both operands into packed buffers of its own first; ``tests/test_split_gemm.py`` checks
  every 4-byte offset), so the trial shows what the same cut gives on any values. Only
  products of at least :data:`MIN_K` terms and pieces of at least :data:`MIN_PIECE` rows or
  columns are cut: a different order of additions then shows in thousands of elements at once;
- products that are exact (integers held in floats, see ``linalg._int_matmul``: every partial
  sum is an integer the float holds) have one value in any order: they are cut in even pieces
  (:func:`_even_cuts`), and their trial only times the cut against the whole call, on the
  operands themselves.

The pieces run at once on :func:`._parallel.threads` threads, each one BLAS call on one BLAS
thread (:func:`._parallel.run`: a helper thread slow to start leaves its piece to the caller);
inside another op's piece (the engine's groups of independent products) the whole call runs.

A product of a few rows and a large right operand (a recurrent cell's step: ``(4, 512) @ (512,
1024)``) can also run faster as column blocks one after the other on one thread
(:func:`blocked_product`): OpenBLAS copies the whole right operand into a packed buffer before
it multiplies, and with a few rows to multiply it by, that copy is most of the call; a block of
columns packs into a buffer that stays in the core's cache. On OpenBLAS's AVX-512 kernels
``(4, 512) @ (512, 1024)`` takes 177 us as one call and 65 us as four blocks of 256 columns, with
the same bits; on its AVX2 kernels the blocks are slower. So the blocks too are kept only where
a trial of that kind of product showed them giving the whole call's bits in less time.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from . import _parallel

# the least product (multiply-adds) cut: about 0.8 ms of one f32 BLAS call (handing a piece to
# another thread costs up to 0.1 ms: smaller cuts measured slower on 2 cores, 128x512x512 among them)
MIN_MACS = 1 << 26
MIN_K = 64  # the shortest contraction cut (see the module docstring)
MIN_PIECE = 16  # the fewest rows or columns of one piece
POOL = 1_000_003  # trial values: this many, repeated
MOST_TRIED = 1 << 22  # the most elements of both operands of a product tried (larger ones stay one call)
FASTER = 0.85  # the most time a cut may take, as a part of the whole call's, to be kept
MOST_KINDS = 1024  # the most kinds of product a process tries (each kept with its cut)

_kinds: dict[tuple, tuple | None] = {}  # kind -> the cut kept for it (or None: one call)
_widths: dict[tuple, int | None] = {}  # kind -> the column blocks kept for it (or None: one call)
_lock = threading.Lock()
_pool: dict[np.dtype, np.ndarray] = {}
_SEED = 20261128


def _layout(x: np.ndarray) -> str | None:
    if x.flags.c_contiguous:
        return "C"
    if x.flags.f_contiguous:
        return "F"
    return None


# the units a cut's edges are multiples of, per axis, in the order tried where they balance
# the pieces equally well: on OpenBLAS's AVX-512 kernels row blocks of 48 and column blocks of
# 320 (and, on narrower results, of 64) give the whole call's bits on every product of the
# model zoo where any cut does; elsewhere the trial finds what holds
UNITS = (("rows", 48), ("cols", 320), ("cols", 64))
MAX_TRIALS = 3  # cuts tried for one kind of product at most


def _cuts(m: int, n: int, parts: int) -> list[tuple[str, tuple]]:
    """The cuts tried for an ``m x n`` result in ``parts`` pieces, each a list of ``[start,
    stop)`` ranges of rows (``"rows"``) or columns (``"cols"``) whose edges are multiples of
    one of :data:`UNITS`; the most even first (the largest piece the smallest), at most
    :data:`MAX_TRIALS`."""
    found = {}
    for axis, unit in UNITS:
        size = m if axis == "rows" else n
        edges = sorted({0, size} | {min(size, round(size * i / parts / unit) * unit) for i in range(1, parts)})
        ranges = tuple(zip(edges, edges[1:]))
        if len(ranges) >= 2 and all(b - a >= MIN_PIECE for a, b in ranges):
            found.setdefault((axis, ranges), max(b - a for a, b in ranges) / size)
    return sorted(found, key=found.get)[:MAX_TRIALS]


def _even_cuts(m: int, n: int, parts: int) -> list[tuple[str, tuple]]:
    """An exact product's cut (any cut gives its bits): rows, or columns where the result has
    fewer than ``parts`` times :data:`MIN_PIECE` rows, in ``parts`` pieces of about equal size."""
    axis, size = ("rows", m) if m >= parts * MIN_PIECE else ("cols", n)
    ranges = tuple(_parallel.spans(size, parts, MIN_PIECE))
    return [(axis, ranges)] if len(ranges) >= 2 else []


def _run(a: np.ndarray, b: np.ndarray, cut: tuple) -> np.ndarray:
    axis, ranges = cut
    if axis == "rows":
        out = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))

        def piece(r0: int, r1: int) -> None:
            np.dot(a[r0:r1], b, out=out[r0:r1])

        _parallel.run([lambda r=r: piece(*r) for r in ranges], record=False)
        return out
    parts = _parallel.run([lambda r=r: np.dot(a, b[:, r[0]:r[1]]) for r in ranges], record=False)
    return np.concatenate(parts, axis=1)


def _like(shape: tuple, dtype: np.dtype, layout: str) -> np.ndarray:
    """An array of ``shape``, ``dtype`` and ``layout`` (C or Fortran order) holding pseudo-random
    values of full significands in [-1, 1): :data:`POOL` of them repeated (a prime period: no
    two rows or columns of an operand are alike)."""
    pool = _pool.get(dtype)
    if pool is None:
        pool = _pool[dtype] = (np.random.default_rng(_SEED).random(POOL, dtype=dtype) * 2 - 1).astype(dtype)
    flat = np.resize(pool, int(np.prod(shape)))
    return flat.reshape(shape) if layout == "C" else flat.reshape(shape[::-1]).T


def _remembered(record: dict, kind: tuple, trial):
    """``record[kind]``, found by ``trial()`` the first time (and kept); None where the trial
    does not run: the record holds :data:`MOST_KINDS` kinds already (a process meeting ever new
    shapes, a campaign), or its operands do not fit the run's memory budget (MemoryError)."""
    try:
        return record[kind]
    except KeyError:
        pass
    if len(record) >= MOST_KINDS:
        return None
    try:
        found = trial()
    except MemoryError:
        return None
    with _lock:
        record[kind] = found
    return found


def _kept(a: np.ndarray, b: np.ndarray, layouts: tuple, cuts: list, exact: bool) -> tuple | None:
    """The first of ``cuts`` giving the whole call's bits on trial operands of ``a``'s and
    ``b``'s shapes and type in ``layouts``, in at most :data:`FASTER` of its time (a product
    bound by memory gains nothing from a second core sharing it). ``exact``: every cut gives
    the whole call's bits (the first is timed on the operands themselves)."""
    if exact:
        (_, took), (_, cut_took) = _timed(lambda: np.dot(a, b)), _timed(lambda: _run(a, b, cuts[0]))
        return cuts[0] if cut_took <= FASTER * took else None
    return _kept_on_trial(a.shape, b.shape, a.dtype, layouts, cuts)


def _whole_on_trial(ashape: tuple, bshape: tuple, dtype: np.dtype, layouts: tuple) -> tuple:
    """Trial operands of a kind of product (:func:`_like`), the bytes of their whole call and
    its time: what a cut or blocks of that kind are held to."""
    ta, tb = _like(ashape, dtype, layouts[0]), _like(bshape, dtype, layouts[1])
    whole, took = _timed(lambda: np.dot(ta, tb))
    return ta, tb, whole.view(np.uint8), took


def _kept_on_trial(ashape: tuple, bshape: tuple, dtype: np.dtype, layouts: tuple, cuts: list):
    """:func:`_kept` of a product that is not exact, from its kind alone; a cut giving the
    bits in more than :data:`FASTER` of the time is kept as :class:`_Slow` (timed again later)."""
    ta, tb, bits, took = _whole_on_trial(ashape, bshape, dtype, layouts)
    _parallel.start()  # the pool's threads up: a thread started by the trial's first cut makes it slow
    for cut in cuts:
        pieces, cut_took = _timed(lambda: _run(ta, tb, cut))
        if np.array_equal(pieces.view(np.uint8), bits):
            return cut if cut_took <= FASTER * took else _Slow(cut, (ashape, bshape, dtype, layouts))
    return None


RETRY_AFTER = 16  # the calls of a kind of product after which a slow cut is timed again (doubled each time)
RETRIES = 4  # the most times it is


class _Slow:
    """A cut that gave the whole call's bits on trial but took more than :data:`FASTER` of its
    time: a trial's time is one moment of the machine's (another process, or a thread slow to
    wake, can take the second core then: a cut of ``(128, 3072) @ (3072, 768)`` that takes 0.6
    of the whole call's time took 1.1 in one process of four). Each call of the kind runs the
    whole call; after :data:`RETRY_AFTER` calls, doubled after each try, at most
    :data:`RETRIES` times, the cut is timed again on the trial operands, and kept for the kind
    where it then takes at most :data:`FASTER` of the time (the bits were seen already)."""

    def __init__(self, cut: tuple, kind: tuple):
        self.cut, self.kind = cut, kind
        self.wait = self.left = RETRY_AFTER
        self.tries = RETRIES

    def now(self, record: dict, key) -> tuple | None:
        """The cut, where it is kept from this call on; None for the whole call."""
        self.left -= 1
        if self.left > 0 or self.tries <= 0:
            return None
        self.tries -= 1
        self.wait *= 2
        self.left = self.wait
        ta, tb, _, took = _whole_on_trial(*self.kind)
        _, cut_took = _timed(lambda: _run(ta, tb, self.cut))
        if cut_took > FASTER * took:
            return None
        with _lock:
            record[key] = self.cut
        return self.cut


def _cut_for(key: tuple, trial) -> tuple | None:
    """The cut kept for the kind of product ``key`` (:func:`_remembered` of its ``trial``), or
    None for the whole call (also while a slow cut waits to be timed again, see :class:`_Slow`)."""
    cut = _remembered(_kinds, key, trial)
    return cut.now(_kinds, key) if cut.__class__ is _Slow else cut


def _timed(call) -> tuple:
    """``call()``'s result and the shorter wall time of two calls (the first pays for its
    result's fresh pages; a slow moment of the machine is made good by :class:`_Slow`: a third
    call made every trial of vit_b16's first run 0.1 s longer)."""
    took = []
    for _ in range(2):
        start = time.perf_counter()
        out = call()
        took.append(time.perf_counter() - start)
    return out, min(took)


_orders: dict[tuple, bool] = {}  # (rows, b's shape, type) -> whether b in C order keeps the bits


def same_in_c_order(rows, b: np.ndarray) -> bool:
    """Whether ``np.dot(a, b)`` of a C-ordered ``a`` of ``r`` rows, for each ``r`` of ``rows``,
    and a C-ordered ``b`` gives every bit of the same product with ``b`` in Fortran order, on
    trial operands of those shapes and type (see the module docstring: the bits are those of
    the shapes and layouts, whatever the values). A convolution's kernel ``(K*C, O)`` is a
    C-ordered view of its HWIO operand, while its Fortran-ordered form is a transposed copy of
    it on every call (about 2 ms for a 3x3x512x512 kernel); where this holds the products
    read the view. One trial per kind, at most :data:`MOST_KINDS` kinds and
    :data:`MOST_TRIED` elements (False beyond). To be called on one BLAS thread."""
    k = b.shape[0]

    def trial(r: int) -> bool:
        ta, tb = _like((r, k), b.dtype, "C"), _like(b.shape, b.dtype, "C")
        return np.array_equal(np.dot(ta, tb).view(np.uint8), np.dot(ta, np.asfortranarray(tb)).view(np.uint8))

    if b.dtype.kind != "f" or any(r * k + b.size > MOST_TRIED for r in rows):
        return False
    return all(_remembered(_orders, (r, b.shape, b.dtype), lambda r=r: trial(r)) for r in rows)


def _cuttable(a: np.ndarray, b: np.ndarray, exact: bool) -> tuple | None:
    """The operands' layouts where a product of these operands may be cut over the threads
    (2-D, of one type, on more than one thread and not inside another op's piece, at least
    :data:`MIN_MACS` multiply-adds and, unless ``exact``, :data:`MIN_K` terms, C or Fortran
    order and at most :data:`MOST_TRIED` elements to try); None where it stays one call."""
    if a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype or _parallel.threads() < 2 or _parallel.inside():
        return None
    (m, k), n = a.shape, b.shape[1]
    if (k < MIN_K and not exact) or m * k * n < MIN_MACS:
        return None
    la, lb = _layout(a), _layout(b)
    if not exact and (la is None or lb is None or a.size + b.size > MOST_TRIED):
        return None
    return la, lb


def split_product(a: np.ndarray, b: np.ndarray, exact: bool = False) -> np.ndarray | None:
    """``np.dot(a, b)`` of 2-D f32 or f64 operands of one type, computed in pieces on several
    threads where a cut of this kind of product gives the whole call's bits (see the module
    docstring); None where the caller makes the whole call. To be called on one BLAS thread.
    ``exact``: every value of the product is exact in its type (any cut gives its bits)."""
    layouts = _cuttable(a, b, exact) if a.dtype.kind == "f" and a.dtype.itemsize >= 4 else None
    if layouts is None:
        return None
    la, lb = layouts
    (m, _k), n = a.shape, b.shape[1]
    parts = _parallel.threads()

    def trial() -> tuple | None:
        cuts = _even_cuts(m, n, parts) if exact else _cuts(m, n, parts)
        return _kept(a, b, (la, lb), cuts, exact) if cuts else None

    cut = _cut_for((a.shape, b.shape, a.dtype, la, lb, parts, exact), trial)
    return None if cut is None else _run(a, b, cut)


def split_narrow_product(a: np.ndarray, b: np.ndarray, wide: np.dtype, out_dtype: np.dtype) -> np.ndarray | None:
    """``split_product(a.astype(wide), b.astype(wide))`` rounded into ``out_dtype``, for 2-D
    operands of one float type narrower than ``wide`` (f32 or f64: bf16, f16, the f8 types),
    where that product of the widened operands is cut (the cut kept for its kind, found by the
    same trial, :func:`split_product`); None where it is not.

    The operand the cut divides (the left one's rows, or the right one's columns) is widened
    piece by piece, each piece its own rows or columns into one wide array of the layout
    ``astype`` gives, and each piece rounds its block of the result into ``out_dtype``; the
    other operand is widened whole first. Each piece's product is then the same call on the
    same values as that piece of the widened operands' cut, and widening and rounding are
    element by element, so the result is the same bit for bit; the conversions run on the
    cores with the products, each on a block its piece has just read or written (a bf16
    model's weights are otherwise widened on one thread before every product: 14 ms of
    bert_base_bf16's run, and its results rounded after it: 7 ms)."""
    wide, out_dtype = np.dtype(wide), np.dtype(out_dtype)
    narrower = wide.kind == "f" and wide.itemsize >= 4 and a.dtype.itemsize < wide.itemsize
    layouts = _cuttable(a, b, False) if narrower else None
    if layouts is None:
        return None
    la, lb = layouts
    (m, _k), n = a.shape, b.shape[1]
    parts = _parallel.threads()

    def trial() -> tuple | None:
        cuts = _cuts(m, n, parts)
        return _kept_on_trial(a.shape, b.shape, wide, (la, lb), cuts) if cuts else None

    cut = _cut_for((a.shape, b.shape, wide, la, lb, parts, False), trial)
    return None if cut is None else _run_narrow(a, b, wide, out_dtype, cut)


def _run_narrow(a: np.ndarray, b: np.ndarray, wide: np.dtype, out_dtype: np.dtype, cut: tuple) -> np.ndarray:
    """:func:`_run` of the widened operands, rounded into ``out_dtype``, each piece widening the
    part of the operand it cuts and rounding its block (see :func:`split_narrow_product`)."""
    axis, ranges = cut
    res = np.empty((a.shape[0], b.shape[1]), out_dtype)
    if axis == "rows":
        wa, wb = np.empty_like(a, dtype=wide), b.astype(wide)
        out = np.empty(res.shape, wide)

        def piece(r0: int, r1: int) -> None:
            wa[r0:r1] = a[r0:r1]
            np.dot(wa[r0:r1], wb, out=out[r0:r1])
            res[r0:r1] = out[r0:r1]
    else:
        wa, wb = a.astype(wide), np.empty_like(b, dtype=wide)

        def piece(c0: int, c1: int) -> None:
            wb[:, c0:c1] = b[:, c0:c1]
            res[:, c0:c1] = np.dot(wa, wb[:, c0:c1])

    _parallel.run([lambda r=r: piece(*r) for r in ranges], record=False)
    return res


FEW_ROWS = 32  # the most rows of a product run in column blocks (see the module docstring)
LEAST_PACKED = 1 << 19  # the least right operand (bytes) so run
WIDTHS = (64, 128, 256)  # the blocks' widths tried (the last block may be narrower)


def _columns(a: np.ndarray, b: np.ndarray, width: int) -> np.ndarray:
    out = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
    for j in range(0, b.shape[1], width):
        out[:, j:j + width] = np.dot(a, b[:, j:j + width])
    return out


def _fastest_width(ashape: tuple, bshape: tuple, dtype: np.dtype, layouts: tuple) -> int | None:
    """The width of :data:`WIDTHS` whose column blocks give the whole call's bits on trial
    operands of these shapes and type in ``layouts``, in the least time and at most
    :data:`FASTER` of the whole call's; None if none does."""
    ta, tb, bits, took = _whole_on_trial(ashape, bshape, dtype, layouts)
    best, best_took = None, FASTER * took
    for width in WIDTHS:
        if width >= bshape[1]:
            break
        blocks, width_took = _timed(lambda: _columns(ta, tb, width))
        if width_took <= best_took and np.array_equal(blocks.view(np.uint8), bits):
            best, best_took = width, width_took
    return best


def blocked_product(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """``np.dot(a, b)`` of 2-D f32 or f64 operands of one type, at most :data:`FEW_ROWS` rows and
    a right operand of at least :data:`LEAST_PACKED` bytes, computed as blocks of columns one
    after the other where a trial of this kind of product kept a width (see the module
    docstring); None where the caller makes the whole call. To be called on one BLAS thread."""
    if a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype or a.dtype.kind != "f" or a.dtype.itemsize < 4:
        return None
    (m, k), n = a.shape, b.shape[1]
    if not 0 < m <= FEW_ROWS or k < MIN_K or b.nbytes < LEAST_PACKED or n <= WIDTHS[0] or a.size + b.size > MOST_TRIED:
        return None
    la, lb = _layout(a), _layout(b)
    if la is None or lb is None:
        return None
    width = _remembered(_widths, (a.shape, b.shape, a.dtype, la, lb),
                        lambda: _fastest_width(a.shape, b.shape, a.dtype, (la, lb)))
    return None if width is None else _columns(a, b, width)
