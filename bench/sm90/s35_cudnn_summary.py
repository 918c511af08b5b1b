# s35_cudnn_summary.py - the session-35 table (bench/results/2026-12-07-h100-s35-cudnn.*) from its four
# bench/run.py JSONs (three default runs, one with FA4JIT_SM90_BWD_PERSIST=1); run from the repository root.
import json, statistics, sys
sys.path.insert(0, "bench")
import pngplot
R = "bench/results/2026-12-07-h100-s35"
runs = [("default1", "default, 22:16 UTC"), ("default2", "default, 22:17 UTC"), ("default3", "default, 22:18 UTC"),
        ("persist", "FA4JIT_SM90_BWD_PERSIST=1, 22:14 UTC")]
rows, out = [], {"device": "NVIDIA H100 80GB HBM3", "date": "2026-12-07", "commit": "7f51cea",
                 "shape": "B8 H16 S4096 D128 bf16", "source": [f"{R}-run-{n}.json" for n, _ in runs], "runs": []}
for n, label in runs:
    d = json.load(open(f"{R}-run-{n}.json"))
    for c in d["cases"]:
        res = c["results"]
        ours, cud, flex = res["fa4jit-sm90"], res["cudnn"], res.get("flex", {})
        rec = {"run": n, "label": label, "case": c["id"], "fa4jit": [ours["fwd_tflops"], ours["fwdbwd_tflops"]],
               "cudnn": [cud["fwd_tflops"], cud["fwdbwd_tflops"]],
               "flex": [flex.get("fwd_tflops"), flex.get("fwdbwd_tflops")],
               "status": ours.get("status"), "bwd_status": ours.get("bwd_status"),
               "err_grads": ours.get("err_grads")}
        out["runs"].append(rec)
json.dump(out, open(f"{R}-cudnn.json", "w"), indent=1)
md = ["# fa4jit vs cuDNN (SDPA), bench/run.py, H100 80GB HBM3, B8 H16 S4096 D128 bf16, 2026-12-07 (commit 7f51cea)", "",
      "TFLOP/s forward / forward+backward, each run with cuDNN and FlexAttention in the same process; "
      "ratios fa4jit / cuDNN. Three default runs back to back on one warm machine, and one with the "
      "opt-in persistent backward main. Sources: " + ", ".join(f"`{s.split('/')[-1]}`" for s in out["source"]), "",
      "| run | case | fa4jit | cuDNN | ratio fwd / f+b | FlexAttention | checked |", "|---|---|---|---|---|---|---|"]
for r in out["runs"]:
    f = r["flex"]
    md.append(f"| {r['label']} | {r['case']} | {r['fa4jit'][0]:.0f} / {r['fa4jit'][1]:.0f} | {r['cudnn'][0]:.0f} / "
              f"{r['cudnn'][1]:.0f} | {r['fa4jit'][0]/r['cudnn'][0]:.3f} / {r['fa4jit'][1]/r['cudnn'][1]:.3f} | "
              f"{f[0]:.0f} / {f[1]:.0f} | {r['status']} / {r['bwd_status']} |")
md += ["", f"![f+b TFLOP/s]({R.split('/')[-1]}-cudnn.png)", ""]
open(f"{R}-cudnn.md", "w").write("\n".join(md))
cats = [f"{r['case'].split('_')[0]} {r['run']}" for r in out["runs"]]
pngplot.grouped_bars(f"{R}-cudnn.png", [(None, "fa4jit vs cuDNN f+b, H100, B8 H16 S4096 D128", "f+b TFLOP/s", cats,
    [("fa4jit", "#1f77b4", [r["fa4jit"][1] for r in out["runs"]], [f"{r['fa4jit'][1]:.0f}" for r in out["runs"]]),
     ("cuDNN", "#7f7f7f", [r["cudnn"][1] for r in out["runs"]], [f"{r['cudnn'][1]:.0f}" for r in out["runs"]])], False, None)])
