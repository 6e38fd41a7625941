"""Write a seeded synthetic corpus of AOE training result files, indented as AOE writes them.

Defaults: 200 files x 3 reports x 2,000 operators (about 0.6 GB). Operator names come from one model's
pool, as when the same training script is tuned again and again, so the bank they imply stays bounded.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

OP_TYPES = ["MatMulV2", "BatchMatMulV2", "SoftmaxV2", "Conv2D", "LayerNorm", "Add", "Mul", "stridedsliced", "FastGelu"]
MODES = ["Format", "Schedule", "Impl"]


def operator(rng: random.Random, pool: int) -> dict:  # type: ignore[type-arg]
    index = rng.randrange(pool)
    before = round(rng.uniform(2, 600), 3)
    after = round(before / rng.uniform(1.0, 2.4), 3)
    op_type = OP_TYPES[index % len(OP_TYPES)]
    return {
        "op_name": f"model/layer_{index % 48}/{op_type}_{index}",
        "op_type": [op_type, "Relu"] if index % 17 == 0 else op_type,
        "tune_performance": {
            MODES[index % 3]: {
                "performance_after_tune(us)": after,
                "performance_before_tune(us)": before,
                "performance_improvement": f"{(before / after - 1) * 100:.2f}%",
                "update_mode": rng.choice(["add", "update"]),
            }
        },
    }


def write_corpus(directory: Path, files: int, reports: int, operators: int, pool: int, seed: int) -> int:
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    total = 0
    for number in range(files):
        day = 1 + number % 28
        document = {}
        for report in range(reports):
            key = f"report_202603{day:02d}{10 + report:02d}{number % 60:02d}00{report:03d}_{40000 + number * 10 + report}"
            document[key] = [
                {"basic": {"tuning_name": f"合成模型_graph_{report}", "tuning_time(s)": rng.randint(10, 4000)}},
                {
                    "OPAT": {
                        "opat_tuning_result": "tuning successful",
                        "repo_modified_operators": [operator(rng, pool) for _ in range(operators)],
                        "repo_summary": {
                            "repo_add_num": operators,
                            "repo_hit_num": 10,
                            "repo_reserved_num": 10,
                            "repo_unsatisfied_num": 3,
                            "repo_update_num": 0,
                            "total_num": operators + 13,
                        },  # fmt: skip
                    }
                },
            ]
        path = directory / f"aoe_result_opat_202603{day:02d}120000{number % 1000:03d}_{30000 + number}.json"
        text = json.dumps(document, indent=4, ensure_ascii=False)
        path.write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--reports", type=int, default=3)
    parser.add_argument("--operators", type=int, default=2000)
    parser.add_argument("--pool", type=int, default=6000, help="distinct operator names in the model")
    parser.add_argument("--seed", type=int, default=20261121)
    args = parser.parse_args()
    size = write_corpus(args.directory, args.files, args.reports, args.operators, args.pool, args.seed)
    print(f"wrote {args.files} files, {size / 1e6:.0f} MB, to {args.directory}")


if __name__ == "__main__":
    main()
