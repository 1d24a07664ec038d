"""Process grid, collectives, channels, streams and the interpreter ops.

Hand-computed cases for every process group strategy, the official
interpret programs of these ops (skipped when the suite is absent), and the
deadlock cases: programs whose processes never meet end quickly with an
error naming the op, its location and the missing process.
"""

from __future__ import annotations

import io
import time

import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform import process_grid as pg
from stablehlo_conform.engine import Engine, run_spmd
from stablehlo_conform.errors import ConformError, UnsupportedOp
from stablehlo_conform.kernels.registry import Registry, load_all

from kernel_util import assert_suite_file_passes


def _add(op, a, b):
    return (np.asarray(np.add(a, b), dtype=op.result_dtype(0)),)


def _max(op, a, b):
    return (np.asarray(np.maximum(a, b), dtype=op.result_dtype(0)),)


def _cmp(op, a, b):
    d = op.attr("comparison_direction")
    f = {"LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
         "EQ": np.equal, "NE": np.not_equal}[str(d)]
    return (np.asarray(f(a, b)),)


def _iota(op):
    ty = op.result_type(0)
    dim = int(op.attr("iota_dimension"))
    shape = [1] * len(ty.shape)
    shape[dim] = ty.shape[dim]
    return (np.broadcast_to(np.arange(ty.shape[dim]).reshape(shape), ty.shape).astype(ty.dtype),)


def _registry() -> Registry:
    """The package's kernels, plus plain versions of the few element-wise
    ops these programs use where the package has none."""
    base = load_all()
    extra = {"stablehlo.add": _add, "stablehlo.maximum": _max, "stablehlo.compare": _cmp,
             "stablehlo.iota": _iota}
    return Registry({k: v for k, v in extra.items() if k not in base}, parent=base)


REG = _registry()


def _engine(text: str, **kw) -> Engine:
    (mod,) = frontend.load_text(text)
    return Engine(mod, REG, **kw)


def _run_checks(text: str, fname: str = "main", **kw) -> Engine:
    eng = _engine(text, **kw)
    eng.call(fname, ())
    bad = [(msg, loc) for ok, msg, loc in eng.checks if not ok]
    assert eng.checks and not bad, bad
    return eng


# process groups (spec.md#collective-ops examples) ------------------------------
def test_process_group_strategies_match_the_spec_examples():
    g = pg.ProcessGrid(4, 2)
    assert g.cross_replica([[0, 1], [2, 3]]) == [
        [(0, 0), (1, 0)], [(0, 1), (1, 1)], [(2, 0), (3, 0)], [(2, 1), (3, 1)]]
    assert g.cross_replica_and_partition([[0, 1], [2, 3]]) == [
        [(0, 0), (1, 0), (0, 1), (1, 1)], [(2, 0), (3, 0), (2, 1), (3, 1)]]
    assert g.flattened_ids([[0, 1, 2, 3], [4, 5, 6, 7]]) == [
        [(0, 0), (0, 1), (1, 0), (1, 1)], [(2, 0), (2, 1), (3, 0), (3, 1)]]
    g2 = pg.ProcessGrid(4, 2)
    assert g2.cross_partition([[0, 1]]) == [
        [(0, 0), (0, 1)], [(1, 0), (1, 1)], [(2, 0), (2, 1)], [(3, 0), (3, 1)]]
    with pytest.raises(ConformError, match="outside"):
        g.process_groups("cross_replica", [[0, 7]])


# hand-computed collectives ----------------------------------------------------
ALL_REDUCE_MAX_2X2 = """
func.func @prog(%x: tensor<3xf32>, %y: tensor<2xf32>) -> (tensor<3xf32>, tensor<2xf32>) {
  %r:2 = "stablehlo.all_reduce"(%x, %y) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
  }) {
    replica_groups = dense<[[0, 3], [1, 2]]> : tensor<2x2xi64>,
    channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>,
    use_global_device_ids
  } : (tensor<3xf32>, tensor<2xf32>) -> (tensor<3xf32>, tensor<2xf32>)
  func.return %r#0, %r#1 : tensor<3xf32>, tensor<2xf32>
}
"""


def _parallel(text: str, programs: list[list[str]], args: dict, **grid_kw):
    """Run ``programs`` as a grid with the Python API; results per process."""
    (mod,) = frontend.load_text(text)
    parent = Engine(mod, REG)
    grid = pg.ProcessGrid(len(programs), len(programs[0]), **grid_kw)

    def job(pid):
        def run(info):
            return pg.child_engine(parent, info).call(programs[pid[0]][pid[1]], args[pid])
        return run

    return grid.run({pid: job(pid) for pid in grid.process_ids()}), parent


def test_all_to_all_cross_partition_variadic_by_hand():
    text = """
func.func @a2a(%x: tensor<2x4xi32>, %y: tensor<2x2xi8>) -> (tensor<4x2xi32>, tensor<4x1xi8>) {
  %r:2 = "stablehlo.all_to_all"(%x, %y) {
    split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 2 : i64,
    replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>,
    channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>
  } : (tensor<2x4xi32>, tensor<2x2xi8>) -> (tensor<4x2xi32>, tensor<4x1xi8>)
  func.return %r#0, %r#1 : tensor<4x2xi32>, tensor<4x1xi8>
}
"""
    x0 = np.arange(8, dtype=np.int32).reshape(2, 4)
    x1 = x0 + 100
    y0 = np.array([[1, 2], [3, 4]], np.int8)
    y1 = np.array([[5, 6], [7, 8]], np.int8)
    res, _ = _parallel(text, [["a2a", "a2a"]], {(0, 0): (x0, y0), (0, 1): (x1, y1)})
    # group order is [partition 1, partition 0]: partition 0 is receiver index 1
    np.testing.assert_array_equal(res[(0, 0)][0], np.concatenate([x1[:, 2:], x0[:, 2:]], 0))
    np.testing.assert_array_equal(res[(0, 1)][0], np.concatenate([x1[:, :2], x0[:, :2]], 0))
    np.testing.assert_array_equal(res[(0, 0)][1], [[6], [8], [2], [4]])
    np.testing.assert_array_equal(res[(0, 1)][1], [[5], [7], [1], [3]])


def test_all_reduce_flattened_ids_variadic_max():
    base = {(0, 0): 1, (0, 1): 2, (1, 0): 3, (1, 1): 4}
    args = {pid: (np.array([v, -v, 10 * v], np.int32), np.array([v, 0.5], np.float32))
            for pid, v in base.items()}
    text = ALL_REDUCE_MAX_2X2
    args = {pid: (a.astype(np.float32), b) for pid, (a, b) in args.items()}
    res, _ = _parallel(text, [["prog", "prog"], ["prog", "prog"]], args)
    # flattened ids [[0, 3], [1, 2]]: (0,0)+(1,1) and (0,1)+(1,0)
    np.testing.assert_array_equal(res[(0, 0)][0], [4, -1, 40])
    np.testing.assert_array_equal(res[(1, 1)][0], [4, -1, 40])
    np.testing.assert_array_equal(res[(0, 1)][0], [3, -2, 30])
    np.testing.assert_array_equal(res[(1, 0)][1], [3, 0.5])


def test_reduce_scatter_and_all_gather_cross_replica_and_partition():
    text = """
func.func @rs(%x: tensor<4xi64>) -> (tensor<1xi64>, tensor<8xi64>) {
  %r = "stablehlo.reduce_scatter"(%x) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %s = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %s : tensor<i64>
  }) {
    scatter_dimension = 0 : i64,
    replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
    channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>
  } : (tensor<4xi64>) -> tensor<1xi64>
  %g = "stablehlo.all_gather"(%x) {
    all_gather_dim = 0 : i64,
    replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>
  } : (tensor<4xi64>) -> tensor<8xi64>
  func.return %r, %g : tensor<1xi64>, tensor<8xi64>
}
"""
    vals = {(0, 0): [1, 2, 3, 4], (0, 1): [10, 20, 30, 40], (1, 0): [100, 200, 300, 400],
            (1, 1): [1000, 2000, 3000, 4000]}
    args = {pid: (np.array(v, np.int64),) for pid, v in vals.items()}
    res, _ = _parallel(text, [["rs", "rs"], ["rs", "rs"]], args)
    # one group of all four: order (0,0), (1,0), (0,1), (1,1); sum = [1111, 2222, 3333, 4444]
    assert res[(0, 0)][0].tolist() == [1111]
    assert res[(1, 0)][0].tolist() == [2222]
    assert res[(0, 1)][0].tolist() == [3333]
    assert res[(1, 1)][0].tolist() == [4444]
    # all_gather without a channel: cross_replica groups [(1,p), (0,p)]
    assert res[(0, 0)][1].tolist() == vals[(1, 0)] + vals[(0, 0)]
    assert res[(1, 1)][1].tolist() == vals[(1, 1)] + vals[(0, 1)]


def test_collective_permute_cross_partition_and_zeros():
    text = """
func.func @cp(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = "stablehlo.collective_permute"(%x) {
    source_target_pairs = dense<[[0, 2], [2, 1]]> : tensor<2x2xi64>,
    channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>
  } : (tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
"""
    args = {(r, p): (np.array([r, p], np.float32) + 0.5,) for r in range(2) for p in range(4)}
    res, _ = _parallel(text, [["cp"] * 4, ["cp"] * 4], args)
    for r in range(2):
        assert res[(r, 2)][0].tolist() == [r + 0.5, 0.5]
        assert res[(r, 1)][0].tolist() == [r + 0.5, 2.5]
        assert res[(r, 0)][0].tolist() == [0, 0]
        assert res[(r, 3)][0].tolist() == [0, 0]


def test_send_recv_with_source_target_pairs_and_outfeed():
    text = """
func.func @p(%x: tensor<2xi32>, %t: !stablehlo.token) -> (tensor<2xi32>, !stablehlo.token) {
  %s = "stablehlo.send"(%x, %t) {
    channel_handle = #stablehlo.channel_handle<handle = 4, type = 1>, is_host_transfer = false,
    source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>
  } : (tensor<2xi32>, !stablehlo.token) -> !stablehlo.token
  %r:2 = "stablehlo.recv"(%s) {
    channel_handle = #stablehlo.channel_handle<handle = 4, type = 1>, is_host_transfer = false,
    source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>
  } : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
  %o = "stablehlo.outfeed"(%r#0, %r#1) : (tensor<2xi32>, !stablehlo.token) -> !stablehlo.token
  func.return %r#0, %o : tensor<2xi32>, !stablehlo.token
}
"""
    from stablehlo_conform.types import TOKEN

    args = {(r, 0): (np.array([r, 7], np.int32), TOKEN) for r in range(3)}
    res, parent = _parallel(text, [["p"], ["p"], ["p"]], args)
    assert res[(0, 0)][0].tolist() == [0, 0]
    assert res[(1, 0)][0].tolist() == [0, 7]
    assert res[(2, 0)][0].tolist() == [1, 7]
    out = {pid: v[0].tolist() for pid, v in parent.state["outfeed"]}
    assert out == {(0, 0): [0, 0], (1, 0): [0, 7], (2, 0): [1, 7]}


def test_replica_and_partition_id_outside_run_parallel_use_module_grid():
    text = """
module attributes {mhlo.num_replicas = 1 : i32, mhlo.num_partitions = 1 : i32} {
  func.func @main() {
    %r = stablehlo.replica_id : tensor<ui32>
    %p = stablehlo.partition_id : tensor<ui32>
    check.expect_eq_const %r, dense<0> : tensor<ui32>
    check.expect_eq_const %p, dense<0> : tensor<ui32>
    %x = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
    %s = "stablehlo.all_reduce"(%x) ({
      ^bb0(%a: tensor<i32>, %b: tensor<i32>):
        %y = stablehlo.add %a, %b : tensor<i32>
        stablehlo.return %y : tensor<i32>
    }) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2xi32>) -> tensor<2xi32>
    check.expect_eq_const %s, dense<[1, 2]> : tensor<2xi32>
    func.return
  }
}
"""
    _run_checks(text)


def test_probe_records_iterations_and_writes_probe_dir(tmp_path):
    text = """
func.func @main() {
  %a = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xbf16>
  %b = interpreter.probe %a, probe_id = "p/0" : tensor<2xbf16>
  %c = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  %d = interpreter.probe %c, probe_id = "flag" : tensor<2xi1>
  %e = interpreter.probe %c, probe_id = "flag" : tensor<2xi1>
  check.expect_serialized_eq %b, probe_id = "p/0" : tensor<2xbf16>
  check.expect_serialized_eq %e, probe_id = "flag", iter = 1 : tensor<2xi1>
  func.return
}
"""
    eng = _run_checks(text, probe_dir=str(tmp_path))
    assert len(eng.state["probes"]["flag"]) == 2
    lines = (tmp_path / "index.csv").read_text().splitlines()
    assert lines[0].startswith("p/0,tensor<2xbf16>,")
    assert lines[1].startswith("flag,tensor<2xi1>,")
    assert np.load(lines[1].split(",")[2]).tolist() == [True, False]
    bits = np.load(lines[0].split(",")[2])
    assert bits.dtype == np.uint16 and bits.tolist() == [0x3FC0, 0xC000]


def test_print_formats_like_the_reference_interpreter():
    text = """
func.func @main() {
  %a = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi8>
  %b = stablehlo.constant dense<1.0> : tensor<f16>
  %c = stablehlo.constant dense<> : tensor<2x0xi8>
  interpreter.print %a : tensor<2x2xi8>
  interpreter.print %b : tensor<f16>
  interpreter.print %c : tensor<2x0xi8>
  func.return
}
"""
    sink = io.StringIO()
    _engine(text, io=sink).call("main", ())
    assert sink.getvalue() == (
        "%0 = tensor<2x2xi8> {\n  [\n    [1, 2],\n    [3, 4]\n  ]\n}\n"
        "%1 = tensor<f16> {1.000000e+00}\n"
        "%2 = tensor<2x0xi8> {\n  [\n    [],\n    []\n  ]\n}\n")


# the official interpret programs ------------------------------------------------
SUITE_FILES = ["all_gather", "all_reduce", "all_to_all", "reduce_scatter", "collective_broadcast",
               "collective_permute", "collective_reduce", "send_recv", "infeed", "outfeed",
               "after_all", "replica_id", "partition_id", "probe", "printing",
               "tuple_and_get_tuple_element"]


@pytest.mark.parametrize("name", SUITE_FILES)
def test_official_interpret_programs(interpret, name):
    assert_suite_file_passes(interpret / f"{name}.mlir",
                             lambda mod: Engine(mod, REG, io=io.StringIO(), deadline=time.monotonic() + 10),
                             every_test_checks=False)


def test_printing_inside_run_parallel_is_not_interleaved(interpret):
    path = interpret / "printing.mlir"
    if not path.exists():
        pytest.skip("printing.mlir is absent")
    mod = frontend.load_file(path, split=True)[-1]
    sink = io.StringIO()
    Engine(mod, REG, io=sink).call("main", ())
    assert sink.getvalue() == "%0 = tensor<2xi32> {\n  [0, 1]\n}\n" * 2


# deadlocks and failures ---------------------------------------------------------
def _all_reduce_against(other: str) -> str:
    """A module whose main runs two processes on [1, 2]: process (0, 0) an
    all_reduce over both (its op on line 4), process (1, 0) the func
    ``@other`` given as text."""
    return """
module @pair {
  func.func @reduce(%x: tensor<2xi64>) -> tensor<2xi64> {
    %r = "stablehlo.all_reduce"(%x) ({
      ^bb0(%a: tensor<i64>, %b: tensor<i64>):
        %s = stablehlo.add %a, %b : tensor<i64>
        stablehlo.return %s : tensor<i64>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<2xi64>
    func.return %r : tensor<2xi64>
  }""" + other + """
  func.func @main() {
    %x = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
    %r:2 = "interpreter.run_parallel"(%x, %x) {programs = [[@reduce], [@other]]}
      : (tensor<2xi64>, tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>)
    func.return
  }
}
"""


MISMATCHED_OPS = _all_reduce_against("""
  func.func @other(%x: tensor<2xi64>) -> tensor<2xi64> {
    %r = "stablehlo.all_gather"(%x) {
      all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    } : (tensor<2xi64>) -> tensor<4xi64>
    %s = "stablehlo.slice"(%r) {start_indices = array<i64: 0>, limit_indices = array<i64: 2>,
                                strides = array<i64: 1>} : (tensor<4xi64>) -> tensor<2xi64>
    func.return %s : tensor<2xi64>
  }""")

MISMATCHED_GROUPS = _all_reduce_against("""
  func.func @other(%x: tensor<2xi64>) -> tensor<2xi64> {
    func.return %x : tensor<2xi64>
  }""")

RECV_WITHOUT_SEND = """
module @lonely {
  func.func @recv(%t: !stablehlo.token) -> (tensor<2xi64>, !stablehlo.token) {
    %r:2 = "stablehlo.recv"(%t) {
      channel_handle = #stablehlo.channel_handle<handle = 9, type = 3>, is_host_transfer = true
    } : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
    func.return %r#0, %r#1 : tensor<2xi64>, !stablehlo.token
  }
  func.func @other(%t: !stablehlo.token) -> (tensor<2xi64>, !stablehlo.token) {
    %x = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
    %s = "stablehlo.send"(%x, %t) {
      channel_handle = #stablehlo.channel_handle<handle = 8, type = 2>, is_host_transfer = true
    } : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
    func.return %x, %s : tensor<2xi64>, !stablehlo.token
  }
  func.func @main() {
    %t = stablehlo.after_all : !stablehlo.token
    %r:4 = "interpreter.run_parallel"(%t, %t) {programs = [[@recv, @other]]}
      : (!stablehlo.token, !stablehlo.token) -> (tensor<2xi64>, !stablehlo.token, tensor<2xi64>, !stablehlo.token)
    func.return
  }
}
"""


def _fails_fast(text: str, timeout: float = 5.0):
    eng = _engine(text, deadline=time.monotonic() + 60)
    t0 = time.monotonic()
    with pytest.raises(ConformError) as ei:
        eng.call("main", ())
    assert time.monotonic() - t0 < timeout
    return str(ei.value), ei.value


def test_mismatched_collectives_end_with_a_clear_error():
    msg, err = _fails_fast(MISMATCHED_OPS)
    assert isinstance(err, pg.CollectiveMismatch)
    assert "stablehlo.all_reduce" in msg and "stablehlo.all_gather" in msg
    assert "process (0, 0)" in msg and "process (1, 0)" in msg


def test_process_that_never_arrives_is_named():
    msg, err = _fails_fast(MISMATCHED_GROUPS)
    assert isinstance(err, pg.DeadlockError)
    assert "stablehlo.all_reduce at" in msg and ":4:" in msg  # the op's location
    assert "in process (0, 0)" in msg
    assert "process (1, 0) never arrived (it finished without reaching it)" in msg


def test_recv_without_send_ends_with_a_clear_error():
    msg, err = _fails_fast(RECV_WITHOUT_SEND)
    assert isinstance(err, pg.DeadlockError)
    assert "stablehlo.recv (channel 9) at" in msg and "in process (0, 0)" in msg
    assert "nothing was sent on channel 9" in msg
    assert "(process (0, 1) finished)" in msg


def test_recv_in_a_single_process_program_does_not_hang():
    text = """
func.func @main() {
  %t = stablehlo.after_all : !stablehlo.token
  %r:2 = "stablehlo.recv"(%t) {
    channel_handle = #stablehlo.channel_handle<handle = 1, type = 3>, is_host_transfer = true
  } : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
  func.return
}
"""
    msg, err = _fails_fast(text)
    assert isinstance(err, pg.DeadlockError) and "it is the only process" in msg


def test_collective_with_processes_that_are_not_running():
    text = """
module attributes {mhlo.num_replicas = 2 : i32} {
  func.func @main() {
    %x = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
    %r = "stablehlo.all_gather"(%x) {
      all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    } : (tensor<2xi64>) -> tensor<4xi64>
    func.return
  }
}
"""
    msg, err = _fails_fast(text)
    assert "process (1, 0) never arrived (it is not running)" in msg


BUSY = _all_reduce_against("""
  func.func @other(%x: tensor<2xi64>) -> tensor<2xi64> {
    %zero = stablehlo.constant dense<0> : tensor<i64>
    %r = stablehlo.while(%i = %zero) : tensor<i64>
      cond {
        %c = stablehlo.compare GE, %i, %zero : (tensor<i64>, tensor<i64>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      } do {
        stablehlo.return %i : tensor<i64>
      }
    func.return %x : tensor<2xi64>
  }""")


def test_wait_times_out_and_stops_the_busy_process(monkeypatch):
    monkeypatch.setattr(pg, "DEFAULT_TIMEOUT", 0.5)
    eng = _engine(BUSY)
    t0 = time.monotonic()
    with pytest.raises(pg.RendezvousTimeout) as ei:
        eng.call("main", ())
    assert time.monotonic() - t0 < 5
    msg = str(ei.value)
    assert "stablehlo.all_reduce at" in msg and "in process (0, 0)" in msg
    assert "process (1, 0) never arrived (it is still running)" in msg


def test_wait_uses_the_engine_deadline():
    eng = _engine(BUSY, deadline=time.monotonic() + 0.5)
    t0 = time.monotonic()
    with pytest.raises(ConformError):
        eng.call("main", ())
    assert time.monotonic() - t0 < 5


def test_a_failing_process_releases_the_others():
    text = MISMATCHED_GROUPS.replace("func.return %x : tensor<2xi64>",
                                     "%y = stablehlo.negate %x : tensor<2xi64>\n"
                                     "    func.return %y : tensor<2xi64>")

    def boom(op, x):
        time.sleep(0.2)
        raise op.unsupported("deliberately missing")

    (mod,) = frontend.load_text(text)
    eng = Engine(mod, Registry({"stablehlo.negate": boom}, parent=REG), deadline=time.monotonic() + 60)
    t0 = time.monotonic()
    with pytest.raises(UnsupportedOp, match="deliberately missing"):
        eng.call("main", ())
    assert time.monotonic() - t0 < 5


def test_top_level_infeed_and_outfeed_use_the_engine_io():
    text = """
func.func @main() {
  %t = stablehlo.after_all : !stablehlo.token
  %a:3 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xi32>, tensor<f32>, !stablehlo.token)
  %b:2 = "stablehlo.infeed"(%a#2) : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
  %s = stablehlo.add %a#0, %b#0 : tensor<2xi32>
  %o = "stablehlo.outfeed"(%s, %a#1, %b#1) : (tensor<2xi32>, tensor<f32>, !stablehlo.token) -> !stablehlo.token
  check.expect_eq_const %s, dense<[11, 22]> : tensor<2xi32>
  func.return
}
"""

    class IO:
        infeed = [(np.array([1, 2], np.int32), np.array(0.5, np.float32)), np.array([10, 20], np.int32)]
        outfeed: list = []

    _run_checks(text, io=IO())
    ((s, f),) = IO.outfeed
    assert s.tolist() == [11, 22] and float(f) == 0.5
    # an exhausted infeed is an error, not a hang
    eng = _engine(text)
    with pytest.raises(ConformError, match="infeed of process \\(0, 0\\) is empty"):
        eng.call("main", ())


def test_run_spmd_runs_every_process_of_the_module_grid():
    text = """
module attributes {mhlo.num_replicas = 2 : i32, mhlo.num_partitions = 2 : i32} {
  func.func @main(%x: tensor<i32>) -> (tensor<ui32>, tensor<ui32>, tensor<i32>) {
    %r = stablehlo.replica_id : tensor<ui32>
    %p = stablehlo.partition_id : tensor<ui32>
    %s = "stablehlo.all_reduce"(%x) ({
      ^bb0(%a: tensor<i32>, %b: tensor<i32>):
        %y = stablehlo.add %a, %b : tensor<i32>
        stablehlo.return %y : tensor<i32>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<i32>) -> tensor<i32>
    func.return %r, %p, %s : tensor<ui32>, tensor<ui32>, tensor<i32>
  }
}
"""
    (mod,) = frontend.load_text(text)
    out = run_spmd(mod, "main", (np.array(3, np.int32),), registry=REG)
    assert sorted(out) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for (r, p), (rid, pid, s) in out.items():
        assert (int(rid), int(pid), int(s)) == (r, p, 6)
        assert s.shape == () and rid.dtype == np.uint32


def test_print_names_values_as_the_mlir_printer_does():
    text = """
func.func @main() {
  %t = stablehlo.constant dense<true> : tensor<i1>
  %a = stablehlo.constant dense<1> : tensor<i8>
  %z = "stablehlo.if"(%t) ({
    %q = stablehlo.constant dense<5> : tensor<i8>
    interpreter.print %q : tensor<i8>
    stablehlo.return %q : tensor<i8>
  }, {
    stablehlo.return %a : tensor<i8>
  }) : (tensor<i1>) -> tensor<i8>
  %r:2 = "stablehlo.optimization_barrier"(%a, %z) : (tensor<i8>, tensor<i8>) -> (tensor<i8>, tensor<i8>)
  interpreter.print %r#1 : tensor<i8>
  func.return
}
"""
    sink = io.StringIO()
    _engine(text, io=sink).call("main", ())
    # printed by the bindings as %0, %1, %2 = if, %3:2 = barrier, then %4 inside the if
    assert sink.getvalue() == "%4 = tensor<i8> {5}\n%3#1 = tensor<i8> {5}\n"
