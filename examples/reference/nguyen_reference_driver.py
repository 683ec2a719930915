"""Driver for the reference implementation of Nguyen, Trippe & Broderick (2022),
``tinnguyen96/partition-coupling``: run in *its* environment, outside pymc-partitions,
to produce the JSON that ``examples/nguyen_side_by_side.py`` reads.

This file contains none of the reference's code; it imports its modules.

Set-up (once; Python 3.11, the reference pins numpy < 1.24)::

    git clone https://github.com/tinnguyen96/partition-coupling /tmp/partition-coupling
    python3.11 -m venv /tmp/refenv
    /tmp/refenv/bin/pip install "numpy<1.24" "scipy<1.12" "POT==0.9.4" "pandas<2.1" \
        "matplotlib<3.8" python-igraph lifelines seaborn scikit-learn tqdm

Run (each writes ``reference_<dataset>_<pairs>.json`` in the current directory)::

    /tmp/refenv/bin/python examples/reference/nguyen_reference_driver.py \
        /tmp/partition-coupling synthetic 100
    /tmp/refenv/bin/python examples/reference/nguyen_reference_driver.py \
        /tmp/partition-coupling gene 400

What it runs, with the reference's own classes and settings:

- data: its ``data/synthetic_N=300.csv`` with "model B" (CRP alpha = 0.1, sd0 = 2,
  sd1 = 0.5; the settings of its synthetic examples), or its ``data/gene.csv`` with
  its GENE configuration (``results/gene/configs/coupledConfig.json``: alpha = 1,
  sd0 = 0.5, sd1 = 1.3);
- ``DPMMSingleGibbs``: ``N_SINGLE`` sweeps from one block, timed (process time) for
  the seconds per single sweep;
- ``DPMMCoupledGibbs`` with ``"OT=1e-5"`` and the Hamming metric, both chains at one
  block (``initType: allSame``), pair i seeded by ``SeedSequence(12345).spawn(P)[i]``,
  run until the chains meet (``estimate(1, 2)``); recorded: the meeting time, the pair's
  process time, and its number of coupled sweeps; seconds per coupled sweep =
  total process time / total coupled sweeps. h is its LCP (top 10 proportions), as in
  its examples.
"""

import json
import re
import sys
import time

import numpy as np


def main():
    repo, dataset, n_pairs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    n_single = int(sys.argv[4]) if len(sys.argv) > 4 else 50
    sys.path.insert(0, f"{repo}/modules")
    import interesting_functions
    import samplerLib

    if dataset == "synthetic":
        lines = open(f"{repo}/data/synthetic_N=300.csv").read().splitlines()
        points = re.findall(r"\[([^\]]*)\]", lines[2])
        data = np.array([[float(v) for v in p.split()] for p in points])
        sd0, sd1, alpha = 2.0, 0.5, 0.1
    elif dataset == "gene":
        data = np.loadtxt(f"{repo}/data/gene.csv", delimiter=",", skiprows=1)
        sd0, sd1, alpha = 0.5, 1.3, 1.0
    else:
        raise SystemExit("dataset must be 'synthetic' or 'gene'")
    d = data.shape[1]

    def init():
        return {"sd1": np.full(d, sd1), "sd0": np.full(d, sd0), "alpha": alpha,
                "initZ": None, "initType": "allSame"}

    common = {"data": data, "sampleNonPartitionList": [], "fastAssignment": False,
              "hyperPriorDict": {"sd1OverSd0": -1, "separateSd": False}}
    h = {"hFunction": lambda labels, clusts: interesting_functions.LCP(clusts, k=10),
         "nHColumns": 10}

    single = samplerLib.DPMMSingleGibbs(np.inf, h, np.random.default_rng(1), initDict=init(),
                                        **common)
    t0 = time.process_time()
    single.sampleNSteps(n_single)
    single_seconds = (time.process_time() - t0) / n_single
    print("seconds per single sweep", single_seconds, flush=True)

    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(12345).spawn(n_pairs)]
    taus, seconds, coupled_sweeps = [], [], []
    for i in range(n_pairs):
        pair = samplerLib.DPMMCoupledGibbs(
            np.inf, h, streams[i], initDict=init(),
            couplingDict={"GibbsCoupling": "OT=1e-5", "metric": "Hamming"}, **common)
        t0 = time.process_time()
        _, info, _ = pair.estimate(1, 2)
        seconds.append(time.process_time() - t0)
        taus.append(info["tau"])
        coupled_sweeps.append(info["nStep"] - info["nXstep"])
        print(i, info["tau"], round(seconds[-1], 2), flush=True)
    out = {"dataset": dataset, "n": int(data.shape[0]), "pairs": n_pairs,
           "single_sweep_seconds": single_seconds,
           "coupled_sweep_seconds": float(np.sum(seconds) / max(1, np.sum(coupled_sweeps))),
           "meeting_times": taus, "pair_seconds": seconds, "coupled_sweeps": coupled_sweeps}
    path = f"reference_{dataset}_{n_pairs}.json"
    with open(path, "w") as f:
        json.dump(out, f)
    print("wrote", path)


if __name__ == "__main__":
    main()
