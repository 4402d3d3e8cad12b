"""Per-image AIS throughput of bdmc against a PyTorch implementation of the same decoder and HMC-AIS.

The peer is written here with the structure of lxuechen/BDMC (the PyTorch code of Wu et al.'s evaluation): all
images' chains in one tensor, a Python loop over the T intermediate distributions, one HMC trajectory of 10
leapfrog steps per distribution with ``torch.autograd.grad`` for every gradient, a Metropolis accept, and the
AIS weight ``(beta_t - beta_{t-1}) log p(x | z)`` accumulated before each move. bdmc runs
``bdmc.generative.ais_log_likelihood`` (one compiled scan over the path, images and chains batched). Both use the
same decoder weights (Glorot-initialized ``small10``/``paper10``: the throughput does not depend on training), the
same images (simulated from the decoder), sigma, sigmoidal schedule, 16 chains per image, 10 leapfrog steps and one
fixed step size (no pilot: the same work on both sides), in float64 (``--float32`` for both in float32).

Each round runs bdmc and torch once per T, interleaved (the order alternating by round). bdmc's first call of a
shape compiles: its row records ``compile_seconds`` apart, and ``seconds`` excludes it; torch has nothing to
compile. Rows (one per run: tool, T, images, chains, seconds, compile seconds, chain-steps per second, the mean
log-likelihood per image) go to ``results/generative_torch_peer/rows.jsonl`` with the commit, clean tree, date,
load and machine. The mean log-likelihoods of the two tools must agree within their standard errors (the peer is
checked, not only timed).

    python benchmarks/generative_torch_peer.py --rounds 3              # T = 100 and 1000, 20 images
    python benchmarks/generative_torch_peer.py --architecture paper10 --steps 100 1000 --rounds 2
    python benchmarks/generative_torch_peer.py --table-only
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np
from harness.pages import write_folder
from harness.store import append_row

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "generative_torch_peer"
LEAPFROG, CHAINS, SIGMA, STEP = 10, 16, 0.1, 0.02


def sigmoidal(num_steps: int) -> np.ndarray:
    """The sigmoidal schedule bdmc uses (``bdmc.core.schedules.sigmoidal``), as float64 NumPy for the peer."""
    from bdmc.core.schedules import sigmoidal as path

    return np.asarray(path(num_steps), np.float64)


def torch_ais(decoder_layers, images, betas, *, latent_dim, chains, step, seed, dtype):
    """Forward AIS per image in PyTorch: (per-image log-mean-exp estimates, seconds)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    x = torch.as_tensor(np.array(images), dtype=dtype).repeat_interleave(chains, dim=0)  # (n * chains, D)
    weights = [(torch.as_tensor(w, dtype=dtype), torch.as_tensor(b, dtype=dtype)) for w, b in decoder_layers]
    dim = x.shape[1]
    norm = -0.5 * dim * math.log(2 * math.pi * SIGMA**2)

    def loglik(z):
        h = z
        for w, b in weights[:-1]:
            h = torch.tanh(h @ w + b)
        mean = torch.sigmoid(h @ weights[-1][0] + weights[-1][1])
        return norm - 0.5 * ((x - mean) ** 2).sum(-1) / SIGMA**2

    def energy(z, beta):
        return 0.5 * (z**2).sum(-1) - beta * loglik(z)

    def grad(z, beta):
        z = z.detach().requires_grad_(True)
        e = energy(z, beta)
        (g,) = torch.autograd.grad(e.sum(), z)
        return e.detach(), g

    began = time.perf_counter()
    z = torch.randn(x.shape[0], latent_dim, generator=gen, dtype=dtype)
    logw = torch.zeros(x.shape[0], dtype=dtype)
    for t in range(1, len(betas)):
        with torch.no_grad():
            logw += (betas[t] - betas[t - 1]) * loglik(z)
        beta = float(betas[t])
        p0 = torch.randn(z.shape, generator=gen, dtype=dtype)
        e0, g = grad(z, beta)
        zn, p = z.clone(), p0 - 0.5 * step * g
        for i in range(LEAPFROG):
            zn = zn + step * p
            e1, g = grad(zn, beta)
            p = p - (step if i < LEAPFROG - 1 else 0.5 * step) * g
        with torch.no_grad():
            log_accept = (e0 + 0.5 * (p0**2).sum(-1)) - (e1 + 0.5 * (p**2).sum(-1))
            accept = torch.log(torch.rand(z.shape[0], generator=gen, dtype=dtype)) < log_accept
            z = torch.where(accept[:, None], zn, z)
    seconds = time.perf_counter() - began
    lw = logw.reshape(-1, chains).numpy()
    per_image = np.log(np.mean(np.exp(lw - lw.max(1, keepdims=True)), 1)) + lw.max(1)
    return per_image, seconds


def bdmc_ais(params, images, num_steps, *, latent_dim, seed):
    import jax

    from bdmc.generative import ais_log_likelihood
    from bdmc.generative.networks import decode

    res = ais_log_likelihood(jax.random.key(seed), decode, params, images, sigma=SIGMA, latent_dim=latent_dim,
                             num_steps=num_steps, num_runs=CHAINS, leapfrog_steps=LEAPFROG, tune="off",
                             step_size=STEP, progress=False)
    return res.per_image, res.seconds, res.compile_seconds


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--architecture", default="small10", choices=["small10", "paper10", "digits10"])
    parser.add_argument("--steps", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--images", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--float32", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    opts = parser.parse_args(argv)
    if opts.render:
        write_folder("generative_torch_peer")
        return
    rows_path = opts.out / "rows.jsonl"
    if not opts.table_only:
        import jax

        from bdmc.config import enable_x64

        enable_x64(not opts.float32)
        import torch

        from bdmc.generative import simulate_images
        from bdmc.generative.networks import init_mlp, resolve_architecture

        dtype = torch.float32 if opts.float32 else torch.float64
        sizes = resolve_architecture(opts.architecture)
        params = init_mlp(jax.random.key(0), sizes)
        layers = [(np.asarray(p["w"]), np.asarray(p["b"])) for p in params]
        from bdmc.generative.networks import decode

        images, _ = simulate_images(jax.random.key(1), decode, params, sigma=SIGMA, latent_dim=sizes[0],
                                    num_images=opts.images)
        images = np.asarray(images)
        common = {"architecture": opts.architecture, "images": opts.images, "chains": CHAINS, "leapfrog": LEAPFROG,
                  "step_size": STEP, "sigma": SIGMA, "dtype": "float32" if opts.float32 else "float64",
                  "torch_threads": torch.get_num_threads(), "torch_version": torch.__version__}
        for r in range(opts.rounds):
            for steps in opts.steps:
                betas = sigmoidal(steps)
                order = ("bdmc", "torch") if r % 2 == 0 else ("torch", "bdmc")
                for tool in order:
                    load = os.getloadavg()[0]
                    if tool == "bdmc":
                        per_image, secs, comp = bdmc_ais(params, images, steps, latent_dim=sizes[0], seed=100 + r)
                    else:
                        per_image, secs = torch_ais(layers, images, betas, latent_dim=sizes[0], chains=CHAINS,
                                                    step=STEP, seed=100 + r, dtype=dtype)
                        comp = 0.0
                    per_image = np.asarray(per_image, np.float64)
                    row = {"tool": tool, "round": r, "num_steps": steps, "seconds": secs, "compile_seconds": comp,
                           "chain_steps_per_second": opts.images * CHAINS * (steps - 1) / secs,
                           "mean": float(per_image.mean()),
                           "stderr": float(per_image.std(ddof=1) / math.sqrt(per_image.size)),
                           "load_before": load, **common}
                    append_row(rows_path, row)  # stamped with its provenance
                    print(f"{tool:6} T={steps:5}  {secs:8.2f} s  (compile {comp:5.1f} s)  mean {row['mean']:.2f} "
                          f"± {row['stderr']:.2f}  load {load:.2f}", flush=True)
    # The folder's pages include a series run into a subfolder of it (``--out .../quiet``): its table.md.
    if OUT.resolve() in (opts.out.resolve(), *opts.out.resolve().parents):
        write_folder("generative_torch_peer")
    if (opts.out / "table.md").exists():
        print((opts.out / "table.md").read_text())


if __name__ == "__main__":
    main()
