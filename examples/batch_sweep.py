"""Sweep pcp->batch on the sim engine with the Python API; print a DataFrame.

python3 examples/batch_sweep.py [--machine skylake-ex] [--csv out.csv]
"""

from __future__ import annotations

import argparse

import pandas as pd

import pcplab


def main() -> None:
    """Run page_fault1 at three batches; print throughput and rmqueue_bulk p99."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machine", default="haswell-desktop")
    parser.add_argument("--duration", type=float, default=0.5)
    parser.add_argument("--csv", help="also write the table to this CSV file")
    args = parser.parse_args()
    rows = []
    for batch in (31, 63, 127):
        result = pcplab.run(
            {
                "engine": "sim",
                "machine": args.machine,
                "workload": "page_fault1",
                "batch": batch,
                "duration_s": args.duration,
                "warmup_s": 0.1,
            }
        )
        metrics = result.to_dataframe().set_index(["section", "name"])
        rows.append(
            {
                "batch": batch,
                "pages_per_s": result["throughput"]["pages_per_s"],
                "zone_lock_pct": result["contention"]["zone_lock_pct"],
                "rmqueue_bulk_p99_ns": metrics.loc[
                    ("latency_ns", "rmqueue_bulk"), "p99"
                ],
            }
        )
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    if args.csv:
        table.to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
