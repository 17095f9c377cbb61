"""Issue 12 item 1: threaded MML blocks give the single-thread bits; the exp-based
``softplus_sigmoid`` is accurate to a few ulps on [-800, 800]."""

import numpy as np
import pytest

from evalcert.errors import InputError
from evalcert.irt import Rasch, TwoPL
from evalcert.irt import base
from evalcert.irt.estimation import louis
from evalcert.irt.estimation import mml_estep
from evalcert.irt.base import map_blocks, resolve_threads, softplus_sigmoid
from evalcert.irt.estimation.louis import observed_information

from .conftest import simulate


@pytest.fixture
def small_blocks(monkeypatch):
    """Many small blocks and no minimum work, so small data really run on several threads."""
    monkeypatch.setattr(base, "THREAD_MIN_WORK", 0)
    monkeypatch.setattr(mml_estep, "_BLOCK", 7 * 64)         # ~64 cells per E-step block
    monkeypatch.setattr(mml_estep, "_LONG", 30)              # rows of 30+ cells alone (_row)
    monkeypatch.setattr(mml_estep, "_THREAD_CHUNK", 3000)    # complete data: a few items
    monkeypatch.setattr(louis, "_CELLS", 97)
    monkeypatch.setattr(louis, "FULL_LIMIT", 0)              # SEs by the (threaded) item
    monkeypatch.setattr(louis, "WOODBURY_FLOPS", 0)          # blocks, as at 300 x 20,000


def _missing(seed=3, n_models=80, n_items=50, missing=0.4):
    Y, *_ = simulate(n_models, n_items, seed=seed, slopes=True)
    Y[np.random.default_rng(seed).random(Y.shape) < missing] = np.nan
    return Y


def _same_bits(x, y):
    return np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True)


@pytest.mark.parametrize("make", [
    lambda n: TwoPL(method="mml", n_threads=n),
    lambda n: TwoPL(method="mml", slope_prior=0.0, n_threads=n),
])
@pytest.mark.parametrize("complete", [False, True])
def test_threaded_fit_is_bit_identical(small_blocks, make, complete):
    Y = simulate(80, 50, seed=4, slopes=True)[0] if complete else _missing()
    fits = [make(n).fit(Y) for n in (1, 3)]
    for attr in ("abilities_", "difficulties_", "discriminations_", "difficulties_se_",
                 "discriminations_se_", "loglik_"):
        assert _same_bits(getattr(fits[0], attr), getattr(fits[1], attr)), attr
    assert fits[0].result_.n_iter == fits[1].result_.n_iter


def test_estep_and_information_threaded_bits(small_blocks):
    Y = _missing(seed=5)
    O = ~np.isnan(Y)
    Yo = np.where(O, Y, 0.0)
    steps = [mml_estep._AdaptiveEStep(Yo, O.astype(float), 7, n_threads=n) for n in (1, 2, 4)]
    assert [s.threads for s in steps] == [1, 2, 4] and len(steps[0].blocks) > 4
    rng = np.random.default_rng(0)
    a, d = rng.lognormal(0, 0.3, Y.shape[1]), rng.normal(size=Y.shape[1])
    mu, sd = steps[0].start(a, d)
    outs = [s(a, d, mu, sd) for s in steps]
    for key in outs[0]:
        assert all(_same_bits(outs[0][key], o[key]) for o in outs[1:]), key
    infos = [observed_information(Yo, O, a, d, mu, sd, common_slope=False, n_quad=7,
                                  n_threads=n) for n in (1, 3)]
    assert not infos[0]["full"]                  # the item-block path (forced above)
    for key in ("var_a", "var_d", "cov_ad"):
        assert _same_bits(infos[0][key], infos[1][key]), key


def test_threaded_estep_matches_a_reference_sum(small_blocks):
    """Blocks reduced in order are the same sums as one pass (to rounding), not just stable."""
    Y = _missing(seed=6)
    O = ~np.isnan(Y)
    Yo = np.where(O, Y, 0.0)
    rng = np.random.default_rng(1)
    a, d = rng.lognormal(0, 0.3, Y.shape[1]), rng.normal(size=Y.shape[1])
    one = mml_estep._AdaptiveEStep(Yo, O.astype(float), 7, n_threads=1)
    mu, sd = one.start(a, d)
    many = one(a, d, mu, sd)
    base.THREAD_MIN_WORK = 2_000_000             # restored by monkeypatch; one block now
    mml_estep._BLOCK = 1 << 30
    mml_estep._LONG = 1 << 30                    # (both restored by monkeypatch)
    whole = mml_estep._AdaptiveEStep(Yo, O.astype(float), 7, n_threads=1)
    assert len(whole.blocks) == 1
    ref = whole(a, d, mu, sd)
    for key in ref:
        np.testing.assert_allclose(many[key], ref[key], rtol=1e-12, atol=1e-12, err_msg=key)


def test_rasch_mml_threads_default_is_bit_identical(small_blocks):
    """Rasch (n_threads not exposed) runs on every CPU: same bits as the forced single thread."""
    Y = _missing(seed=7)
    auto = Rasch(method="mml").fit(Y)
    base.THREAD_MIN_WORK = 10 ** 18              # restored by monkeypatch: one thread
    single = Rasch(method="mml").fit(Y)
    assert _same_bits(auto.difficulties_, single.difficulties_)
    assert _same_bits(auto.difficulties_se_, single.difficulties_se_)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_n_threads_refused_before_work(bad):
    with pytest.raises(InputError, match="n_threads"):
        TwoPL(method="mml", n_threads=bad).fit(_missing())
    with pytest.raises(InputError, match="n_threads"):
        resolve_threads(bad, 4, 1e9)


def test_resolve_threads_and_map_order():
    assert resolve_threads(8, n_blocks=3, work=1e9) == 3
    assert resolve_threads(8, n_blocks=3, work=10) == 1          # small work: one thread
    assert resolve_threads(None, n_blocks=1, work=1e9) == 1
    assert 1 <= resolve_threads(None, n_blocks=64, work=1e9) <= 64
    assert map_blocks(lambda k: k * k, list(range(50)), 4) == [k * k for k in range(50)]


def test_map_blocks_reraises_and_stops_taking_blocks():
    """A block's error reaches the caller; blocks after it are not started."""
    import threading
    import time
    started = []
    lock = threading.Lock()

    def fn(k):
        with lock:
            started.append(k)
        if k == 3:
            raise ValueError("block 3")
        time.sleep(0.002)
        return k

    with pytest.raises(ValueError, match="block 3"):
        map_blocks(fn, list(range(200)), 2)
    assert 3 in started and len(started) < 100          # all 200 start when nothing stops them


def test_softplus_sigmoid_accurate_to_ulps_over_the_whole_range():
    """Against 50-digit mpmath on [-800, 800]. The old expit route clipped at +-700
    (softplus(800) came out 700) and lost sigma's relative precision in the far tails."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    rng = np.random.default_rng(0)
    eta = np.concatenate([np.linspace(-800, 800, 1601), rng.uniform(-40, 40, 400),
                          rng.normal(scale=1e-3, size=50),
                          [0.0, -0.0, 1e-300, -1e-300, 5e-324, 36.7, -36.7, 708.5, -708.5,
                           -745.0, 745.0, 709.9, -709.9]])
    softplus, p = softplus_sigmoid(eta)
    ref = np.array([(float(mpmath.log1p(mpmath.exp(mpmath.mpf(x)))),
                     float(1 / (1 + mpmath.exp(-mpmath.mpf(x))))) for x in eta])
    for got, want in ((softplus, ref[:, 0]), (p, ref[:, 1])):
        assert np.all(np.isfinite(got))
        normal = np.abs(want) >= np.finfo(float).tiny
        rel = np.abs(got[normal] - want[normal]) / np.abs(want[normal])
        assert rel.max() <= 4 * np.finfo(float).eps
        assert np.all(np.abs(got[~normal] - want[~normal]) <= 4 * 5e-324)   # subnormal tails
    assert softplus_sigmoid(np.array([800.0]))[0][0] == 800.0


def test_softplus_sigmoid_shapes_and_no_warnings():
    eta = np.random.default_rng(2).normal(scale=300, size=(7, 11))
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        softplus, p = softplus_sigmoid(eta)
    assert softplus.shape == p.shape == eta.shape
    assert np.all((p >= 0) & (p <= 1)) and np.all(softplus >= 0)
