"""Repeated runs as statistics: mean, spread, %change and Welch's t-test.

Means and spreads come from the standard library's statistics module (a
handful of runs needs no arrays); the t-test from scipy.stats, imported
only when a comparison asks for it, so the command line starts quickly.

A figure of several seeds (sim) or repeats (native, host) is a Sample; two
Samples give a %change and whether Welch's t-test (unequal variances, as
mmtests' compare-kernels uses) finds the difference significant.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

# Two-sided significance level of the t-test (mmtests' default).
ALPHA = 0.05


@dataclass(frozen=True)
class Sample:
    """The values one metric took over n runs (NaN: did not occur)."""

    values: tuple[float, ...]

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Sample:
        """Return a Sample; None (a metric the run did not have) becomes NaN."""
        return cls(tuple(math.nan if v is None else float(v) for v in values))

    @property
    def measured(self) -> list[float]:
        """The values of the runs that measured the metric."""
        return [v for v in self.values if not math.isnan(v)]

    @property
    def n(self) -> int:
        """Runs that measured the metric."""
        return len(self.measured)

    @property
    def mean(self) -> float:
        """Arithmetic mean (mmtests' Amean), NaN when no run measured it."""
        return statistics.fmean(self.measured) if self.n else math.nan

    @property
    def hmean(self) -> float:
        """Harmonic mean (mmtests' Hmean, for rates); NaN unless all > 0."""
        vals = self.measured
        if not vals or min(vals) <= 0:
            return math.nan
        return statistics.harmonic_mean(vals)

    @property
    def std(self) -> float:
        """Sample standard deviation (n - 1), 0 for one run."""
        if self.n < 2:
            return 0.0 if self.n else math.nan
        return statistics.stdev(self.measured)

    @property
    def pct_std(self) -> float:
        """Standard deviation as a % of the mean (LKP's ±%stddev)."""
        mean = self.mean
        return 100.0 * self.std / abs(mean) if mean else math.nan


def change_pct(base: float, new: float) -> float:
    """Return new against base in %, NaN where base is 0 or missing."""
    if not base or math.isnan(base) or math.isnan(new):
        return math.nan
    return 100.0 * (new - base) / abs(base)


def welch_p(base: Sample, new: Sample) -> float:
    """Return the two-sided p of Welch's t-test; NaN below two runs a side.

    Two constant samples that differ (a deterministic model, one seed
    repeated) have no spread to test: p is 0 if the means differ, else 1.
    """
    return welch_p_of_means((base.mean, base.std, base.n), (new.mean, new.std, new.n))


def welch_p_of_means(
    base: tuple[float, float, int], new: tuple[float, float, int]
) -> float:
    """Return welch_p from each side's (mean, sample stddev, runs) alone.

    The same test as welch_p where the runs were merged already (the rows of
    `reproduce --seeds`): NaN below two runs a side; no spread on either
    side gives 0 if the means differ, else 1.
    """
    from scipy import stats as scipy_stats  # loaded when a test is wanted

    (m1, s1, n1), (m2, s2, n2) = base, new
    if n1 < 2 or n2 < 2:
        return math.nan
    if s1 == 0 and s2 == 0:
        return 0.0 if m1 != m2 else 1.0
    # Runs that agree to the last digit (a maximum the seeds share) make scipy
    # warn of precision loss in the variance; p is extreme either way, and
    # the warning would land in the middle of a table on stderr.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = scipy_stats.ttest_ind_from_stats(
            m1, s1, n1, m2, s2, n2, equal_var=False
        )
    return float(result.pvalue)


def significant(base: Sample, new: Sample, alpha: float = ALPHA) -> bool:
    """Whether Welch's t-test rejects equal means at ALPHA."""
    p = welch_p(base, new)
    return not math.isnan(p) and p < alpha
