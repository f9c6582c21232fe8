#!/usr/bin/python3
"""Gathers the parity results (WORK_DIR/results/*.json) into WORK_DIR/summary.md and .json.

    summary.py WORK_DIR

Runs as the ctest test `parity.summary` after every parity test (a fixture cleanup), and
prints the markdown table: for each test and batch, the relative error of each algorithm,
the top-5 verdict, and the test's time; the "model file" column tells the zoo YAML runs from
the ONNX exports' (parity.py --onnx). Each test writes its own file (tests run in parallel),
so a test that was not run this time keeps its previous result; the `finished` column says when
each was produced. It always exits 0: it reports, the parity tests themselves pass or fail.
"""

import glob
import json
import os
import sys


def load_results(work_dir):
    results = []
    for path in sorted(glob.glob(os.path.join(work_dir, "results", "*.json"))):
        with open(path) as f:
            results.append(json.load(f))
    return results


def cell(run):
    """One table cell: relative error, top-5 verdict, and FAIL when it failed."""
    if "relative_error" not in run:
        return "**FAIL** (no output)"
    text = f"{run['relative_error']:.1e}"
    if run["top5"] != "exact":
        text += f" top5 {run['top5']}"
    return text if run["passed"] else f"**FAIL** {text}"


def model_file(result):
    """What the test ran: the zoo YAML, or torch's ONNX export (opset, static or symbolic dims)."""
    if result.get("onnx_opset") is None:
        return "yaml"
    dynamic = result.get("onnx_dynamic") or []
    kind = f"dynamic {','.join(dynamic)}" if dynamic else "static"
    return f"onnx {result['onnx_opset']} {kind}"


def exactness_table(results, algorithms):
    """Distance to the exact (float64) logits, worst over batches: torch's and the engine's."""
    lines = ["Distance to the exact (float64) logits, max over batches: PyTorch's own float32 "
             "result and the engine's per algorithm.", "",
             "| test | torch float32 | " + " | ".join(algorithms) + " |",
             "|" + "---|" * (len(algorithms) + 2)]
    for result in results:
        worst = {}
        for run in result["runs"]:
            if "engine_float32_error" in run:
                worst[run["algorithm"]] = max(worst.get(run["algorithm"], 0.0),
                                              run["engine_float32_error"])
        cells = [f"{worst[a]:.1e}" if a in worst else "" for a in algorithms]
        lines.append("| " + " | ".join([result["test"], f"{result['torch_float32_error']:.1e}"]
                                       + cells) + " |")
    return lines


def markdown(results):
    algorithms = sorted({a for r in results for a in r["algorithms"]})
    failed = [r for r in results if not r["passed"]]
    total = sum(r["total_seconds"] for r in results)
    lines = [f"{len(results)} tests, {len(failed)} failed; sum of test times {total:.0f} s "
             "(ctest -j runs them side by side, so the wall time is less).", ""]
    for result in failed:
        lines.append(f"- **{result['test']}** failed: "
                     + "; ".join(f"{run['shape']} {run['algorithm']}: {run['problem']}"
                                 for run in result["runs"] if not run["passed"]))
        if not result["runs"]:
            lines[-1] += "nothing ran"
        if result["diagnosis"]:
            lines.append(f"  - {result['diagnosis']}")
    lines += ["" if failed else None,
              "Cells: max |engine - torch| / max |torch| of the logits (pass: <= 1e-4); the "
              "top-5 classes are identical unless marked. Input sensitivity: how much torch's "
              "logits for two different images differ, relative to their size (required: "
              ">= 0.01; see tests/parity/compare.py).", ""]
    head = ["test", "model file", "input"] + algorithms + ["input sensitivity", "test time", "finished"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for result in results:
        for shape in dict.fromkeys(run["shape"] for run in result["runs"]):
            by_algorithm = {run["algorithm"]: run for run in result["runs"]
                            if run["shape"] == shape}
            cells = [cell(by_algorithm[a]) if a in by_algorithm else "" for a in algorithms]
            sensitivity = result.get("input_sensitivity")
            row = [result["test"], model_file(result), shape] + cells
            lines.append("| " + " | ".join(row + [
                "" if sensitivity is None else f"{sensitivity:.2f}",
                f"{result['total_seconds']:.1f} s", result["finished"]]) + " |")
    lines += [""] + exactness_table(results, algorithms)
    return "\n".join(line for line in lines if line is not None) + "\n"


def main(argv):
    if len(argv) != 1:
        print(__doc__)
        return 2
    work_dir = argv[0]
    results = load_results(work_dir)
    if not results:
        print(f"no parity results in {work_dir}/results (were the parity tests skipped?)")
        return 0
    text = "# winfer vs PyTorch: parity results\n\n" + markdown(results)
    with open(os.path.join(work_dir, "summary.md"), "w") as f:
        f.write(text)
    with open(os.path.join(work_dir, "summary.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(text)
    print(f"written: {work_dir}/summary.md and summary.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
