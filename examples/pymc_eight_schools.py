"""Sample PyMC's eight-schools model with graphjit compiling its log-density and gradient, and plot the posterior.

    python examples/pymc_eight_schools.py                  # writes pymc_eight_schools.png (needs matplotlib)
    python examples/pymc_eight_schools.py --draws 200 --compare --out /tmp/schools.png

Needs PyMC (``pip install graphjit[pytensor]``). ``import graphjit.pytensor`` registers the PyTensor mode
"GRAPHJIT"; PyMC takes it through ``compile_kwargs``. ``--compare`` samples with PyTensor's default mode too
and prints both wall-clock times and posterior means.
"""

from __future__ import annotations

import argparse
import time
from typing import Optional, Sequence

import numpy as np
import pymc as pm

import graphjit.pytensor  # noqa: F401  (registers the "GRAPHJIT" mode)

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def model() -> pm.Model:
    """The non-centred eight-schools model."""
    with pm.Model() as schools:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta_t = pm.Normal("theta_t", 0.0, 1.0, shape=8)
        pm.Deterministic("theta", mu + tau * theta_t)
        pm.Normal("obs", mu + tau * theta_t, SIGMA, observed=Y)
    return schools


def sample(mode: Optional[str], draws: int, chains: int, seed: int = 1) -> tuple:
    """(posterior, seconds) of one pm.sample run with the given PyTensor mode (None: PyTensor's default)."""
    start = time.perf_counter()
    with model():
        idata = pm.sample(draws=draws, tune=draws, chains=chains, cores=1, random_seed=seed,
                          progressbar=False, compile_kwargs={"mode": mode} if mode else {})
    return idata.posterior, time.perf_counter() - start


def plot(posterior, path: str) -> None:
    """Histograms of mu and tau, and each school's theta as a mean with its 94% interval."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, name in zip(axes[:2], ("mu", "tau")):
        ax.hist(posterior[name].values.ravel(), bins=60, color="tab:blue", alpha=0.8)
        ax.set_title(f"posterior of {name}")
    theta = posterior["theta"].values.reshape(-1, 8)
    low, high = np.percentile(theta, [3, 97], axis=0)
    axes[2].errorbar(theta.mean(axis=0), np.arange(8), xerr=[theta.mean(axis=0) - low, high - theta.mean(axis=0)],
                     fmt="o", color="tab:blue")
    axes[2].scatter(Y, np.arange(8), marker="x", color="tab:red", label="observed y")
    axes[2].set_yticks(np.arange(8), [f"school {j}" for j in range(8)])
    axes[2].set_title("theta: mean and 94% interval")
    axes[2].legend()
    fig.suptitle("eight schools, sampled by PyMC with mode='GRAPHJIT'")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: Optional[Sequence[str]] = None) -> dict:
    """Sample, print the posterior means (and the comparison), write the plot; returns the numbers printed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000, help="tuning steps and draws per chain")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--compare", action="store_true", help="sample with PyTensor's default mode as well")
    parser.add_argument("--out", default="pymc_eight_schools.png")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    posterior, seconds = sample("GRAPHJIT", args.draws, args.chains)
    result = {"graphjit_s": seconds, "mu": float(posterior["mu"].mean()), "tau": float(posterior["tau"].mean())}
    print(f"GRAPHJIT: {seconds:.2f} s, posterior mean mu {result['mu']:.2f}, tau {result['tau']:.2f}")
    if args.compare:
        ref, ref_seconds = sample(None, args.draws, args.chains)
        result.update(default_s=ref_seconds, default_mu=float(ref["mu"].mean()))
        print(f"default : {ref_seconds:.2f} s, posterior mean mu {result['default_mu']:.2f}, "
              f"tau {float(ref['tau'].mean()):.2f}  (GRAPHJIT {ref_seconds / seconds:.2f}x faster)")
    if not args.no_plot:
        plot(posterior, args.out)
        print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
