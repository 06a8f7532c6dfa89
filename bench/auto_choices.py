#!/usr/bin/env python3
"""Do Kestrel's `auto` choices choose right? Each `auto` runs against its alternatives, measured by
the training steps themselves (`kestrel profile`, warm-up steps left out), on coco128 and DeepPCB at
320 and 640 px:

  --amp auto         vs --amp off / bf16 (resident batch: compute alone; each run twice, the mean),
                     yolov5n and yolov5s; also how far the probe's printed figures are from those
                     steps, and the run's own check of its choice (its steps against the probe)
  --workers auto     vs each fixed count up to the cores (the loader running), yolov5n
  --cache auto       vs none / ram / disk, yolov5n
  --batch-size -1    vs 8 / 16 / 32 / 64 in images/s, yolov5n

A choice is right when its steps are within 5% of the best alternative's (images/s for the batch).
Prints a row per case and a summary per lever: how often it chose right, and by how much it missed.

  bench/auto_choices.py [--levers amp,workers,cache,batch] [--data coco128,deeppcb] [--img 320,640]
Needs ../shared/data (the datasets) and build/kestrel.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KESTREL = os.path.join(ROOT, "build", "kestrel")
SHARED = os.environ.get("KESTREL_SHARED_DIR", os.path.join(os.path.dirname(ROOT), "shared"))
DATASETS = {"coco128": "data/coco128/coco128.yaml", "deeppcb": "data/deeppcb/deeppcb.yaml"}
RIGHT_WITHIN = 0.05
WARMUP, STEPS = 2, 6


def profile(args, log):
    """Runs `kestrel profile ARGS`; returns its output (also appended to the log)."""
    cmd = [KESTREL, "profile", "--no-progress", "--exist-ok", "--project", log + ".runs", "--warmup-steps", str(WARMUP)] + args
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n" + out.stdout + out.stderr + "\n")
    if out.returncode != 0:
        sys.exit(f"kestrel profile failed ({out.returncode}): {' '.join(cmd)}\n{out.stderr[-2000:]}")
    return out.stdout


def step_figures(text):
    """(ms per step, ms of forward+loss+backward) from the run's "Time per step" line."""
    line = [l for l in text.splitlines() if l.startswith("Time per step:")][-1]
    ms = float(re.search(r"\(([\d.]+) ms/step\)", line).group(1))
    share = sum(float(m) for m in re.findall(r"(?:forward|loss|backward) ([\d.]+)%", line))
    return ms, ms * share / 100


def verdict(auto_cost, costs):
    """(right?, the miss: how much more the auto choice cost than the best alternative)."""
    best = min(costs.values())
    miss = auto_cost / best - 1
    return miss <= RIGHT_WITHIN, miss


class Tally:
    def __init__(self):
        self.rows = {}

    def add(self, lever, right, miss):
        self.rows.setdefault(lever, []).append((right, miss))

    def summary(self):
        print("\n==== how often each auto chose right (within %d%% of the best alternative)" % (100 * RIGHT_WITHIN))
        for lever, rows in self.rows.items():
            n_right = sum(r for r, _ in rows)
            worst = max(m for _, m in rows)
            print(f"{lever:14s} right in {n_right} of {len(rows)}; worst miss {100 * worst:+.1f}%")


def bench_amp(base, tally, log, errors, check_errors):
    out = profile(base + ["--resident", "--amp", "auto", "--steps", str(STEPS + 8)], log)
    probe = re.search(r"fp32 ([\d.]+) ms ±[\d.]+%, bf16 ([\d.]+) ms ±[\d.]+% -> (\w+)", out)
    check = [l for l in out.splitlines() if l.startswith("--amp auto check")]
    chosen = probe.group(3)
    # Each precision run twice, alternating, in processes of its own: a process's steps can sit 10-30% off
    # another's on this shared machine (yolov5s fp32 at 640: 4016 and 5197 ms), so the mean of two is the figure.
    runs = {"fp32": [], "bf16": []}
    for _ in range(2):
        for name, flag in (("fp32", "off"), ("bf16", "bf16")):
            runs[name].append(step_figures(profile(base + ["--resident", "--amp", flag, "--steps", str(STEPS)], log)))
    fixed = {k: tuple(sum(x) / len(v) for x in zip(*v)) for k, v in runs.items()}
    switched = re.search(r"switched to (\w+)", " ".join(check))
    final = switched.group(1) if switched else chosen
    right, miss = verdict(fixed[final][1], {k: v[1] for k, v in fixed.items()})
    tally.add("--amp auto", right, miss)
    err = {"fp32": float(probe.group(1)) / fixed["fp32"][1] - 1, "bf16": float(probe.group(2)) / fixed["bf16"][1] - 1}
    errors.extend(err.values())
    print(f"  amp: probe fp32 {probe.group(1)} bf16 {probe.group(2)} ms -> {chosen}"
          f"{' (check switched to ' + final + ')' if switched else ''}; steps fwd+loss+bwd fp32 {fixed['fp32'][1]:.0f} "
          f"bf16 {fixed['bf16'][1]:.0f} ms (runs: fp32 {'/'.join('%.0f' % r[1] for r in runs['fp32'])}, "
          f"bf16 {'/'.join('%.0f' % r[1] for r in runs['bf16'])}); probe error fp32 {100 * err['fp32']:+.1f}% bf16 {100 * err['bf16']:+.1f}%; "
          f"{'right' if right else 'WRONG'} ({100 * miss:+.1f}%)")
    for line in check:
        print("    " + line)
        m = re.search(r"\(probe [\d.]+ ms, ([+-][\d.]+)%", line)
        if m:
            check_errors.append(float(m.group(1)) / 100)


def chosen_workers(out):
    return re.search(r"--workers auto: .* -> (\d+)", out).group(1)


def chosen_cache(out):
    return "ram" if re.search(r"--cache auto: caching images in RAM", out) else "none"


def bench_fixed_choice(lever, flag, base, alternatives, tally, log, chosen_in, steps):
    """A lever whose auto resolves to one of `alternatives`: ms/step of each, and of the auto run."""
    out = profile(base + [flag, "auto", "--steps", str(steps)], log)
    chosen = chosen_in(out)
    switched = re.search(r"--workers auto check: .*switched to (\d+) workers", out)
    if switched:
        chosen = switched.group(1)
    costs = {alt: step_figures(profile(base + [flag, alt, "--steps", str(steps)], log))[0] for alt in alternatives}
    auto_ms = step_figures(out)[0]
    right, miss = verdict(costs.get(chosen, auto_ms), costs)
    tally.add(lever, right, miss)
    listed = ", ".join(f"{k} {v:.0f}" for k, v in costs.items())
    print(f"  {lever}: chose {chosen} ({auto_ms:.0f} ms/step in its own run); ms/step {listed}; "
          f"{'right' if right else 'WRONG'} ({100 * miss:+.1f}%)")


def bench_batch(base, tally, log):
    out = profile(base + ["--batch-size", "-1", "--steps", str(STEPS)], log)
    chosen = int(re.search(r"-> batch (\d+)", out).group(1)) if re.search(r"-> batch (\d+)", out) else None
    ips = {}
    for b in (8, 16, 32, 64):
        ms = step_figures(profile(base + ["--batch-size", str(b), "--steps", str(STEPS)], log))[0]
        ips[b] = b * 1000 / ms
    if chosen not in ips:
        ms = step_figures(out)[0]
        ips[chosen] = chosen * 1000 / ms
    right, miss = verdict(1 / ips[chosen], {k: 1 / v for k, v in ips.items()})
    tally.add("--batch-size -1", right, miss)
    listed = ", ".join(f"{k}: {v:.1f}" for k, v in sorted(ips.items()))
    print(f"  batch: AutoBatch chose {chosen}; img/s {listed}; {'right' if right else 'WRONG'} ({100 * miss:+.1f}%)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levers", default="amp,workers,cache,batch")
    ap.add_argument("--data", default="coco128,deeppcb")
    ap.add_argument("--img", default="320,640")
    ap.add_argument("--models", default="yolov5n,yolov5s", help="models for --amp (the other levers use the first)")
    a = ap.parse_args()
    if not os.path.exists(KESTREL):
        sys.exit(f"{KESTREL} is missing: run scripts/build.sh")
    levers = a.levers.split(",")
    tally, errors, check_errors = Tally(), [], []
    log = os.path.join(tempfile.mkdtemp(prefix="kestrel-auto-"), "auto_choices.log")
    print(f"kestrel profile runs logged to {log}; {WARMUP} warm-up steps left out of each")
    for data in a.data.split(","):
        yaml = os.path.join(SHARED, DATASETS[data])
        if not os.path.exists(yaml):
            print(f"skipping {data}: {yaml} is missing")
            continue
        for img in a.img.split(","):
            models = a.models.split(",")
            for model in models:
                unbatched = ["--data", yaml, "--cfg", model + ".yaml", "--img", img]
                base = unbatched + ["--batch-size", "16"]
                print(f"\n{data}, {model}, {img} px, batch 16")
                if "amp" in levers:
                    bench_amp(base, tally, log, errors, check_errors)
                if model != models[0]:
                    continue
                fast = base + ["--amp", "bf16"]  # the other levers' runs skip the precision probe
                if "workers" in levers:
                    counts = [str(w) for w in range(1, min(os.cpu_count(), 16) + 1)]
                    bench_fixed_choice("--workers auto", "--workers", fast, counts, tally, log, chosen_workers, STEPS + 10)
                if "cache" in levers:
                    bench_fixed_choice("--cache auto", "--cache", fast, ["none", "ram", "disk"], tally, log, chosen_cache, STEPS + 10)
                if "batch" in levers:
                    bench_batch(unbatched + ["--amp", "bf16"], tally, log)
    tally.summary()
    if errors:
        within = sum(abs(e) <= 0.15 for e in errors)
        print(f"--amp auto probe vs the fixed runs' steps: {within} of {len(errors)} figures within 15%, "
              f"worst {100 * max(errors, key=abs):+.1f}%")
    if check_errors:
        print(f"--amp auto probe vs the steps of its own run (the run's check): worst {100 * max(check_errors, key=abs):+.1f}% "
              f"over {len(check_errors)} runs")


if __name__ == "__main__":
    main()
