#!/usr/bin/env bash
# The GPU check: prepared on this machine, run whole in one call of the device tool (one H100/H200,
# 16 cores, torch 2.11.0+cu130 in /opt/torch/.venv, no OpenCV C++, no network, 64 MiB carried).
#
#   bash scripts/device_check.sh --dry-run   here: builds the bundle, prints what would travel and its
#                                            size, then runs the device part on this CPU end to end
#                                            (small sizes), writing device_bundle/out/device_check.json
#   bash scripts/device_check.sh --prepare   here: builds the bundle only
#   device tool: run(command="bash scripts/device_check.sh --on-device", carry=["device_bundle"],
#                    timeout_s=540)          there: writes $OUT/device_check.json (+ logs)
#
# The bundle (device_bundle/, git-ignored): the kestrel binary and the GPU test binaries built here
# against the same torch 2.11.0 (cu130) the device has; the shared libraries the device lacks, with
# those the check never calls replaced by stubs (scripts/device_bundle.py: OpenCV's GDAL/FFmpeg chain
# is ~217 MB); coco128 (from ../shared); YOLOv5 v7.0's source and the reference timing launcher
# (../shared/tools/yolov5-reference) for train.py on the same data and GPU.
# On the device, in under 8 minutes:
#   1. GPU tests: CPU vs CUDA forward/backward, loss, NMS, the fp16 scaler, a one-rank NCCL group, the
#      side-stream transfer path and the CUDA event clock (tests/device);
#   2. kestrel bench step, yolov5s@640 batch 32, fp32 / fp16 / bf16 channels-last, and fp16 NCHW; and
#      yolov8s, fp32 / fp16 (the DFL loss and task-aligned assigner under autocast);
#   3. training: yolov5s@640 from scratch on coco128 repeated 16x (2048 images), batch 64, 2 epochs,
#      --amp auto: img/s, GPU utilisation, data-wait share (report.json); then yolov8s, 1 epoch;
#   4. YOLOv5 v7.0 train.py on the same data, GPU and settings (epoch times from the launcher);
# and one JSON summary of all of it.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE="${1:---dry-run}"
BUNDLE=device_bundle
LIMIT_MIB=64

prepare() {
  source scripts/torch_env.sh
  [ -x build/kestrel ] || bash scripts/build.sh
  rm -rf "$BUNDLE" && mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/data" "$BUNDLE/tools"
  local bins=(build/kestrel build/device_batch_upload build/device_stage_events build/device_cuda_parity)
  cp "${bins[@]}" "$BUNDLE/bin/"
  strip "$BUNDLE"/bin/*
  python3 scripts/device_bundle.py "$BUNDLE/lib" "${bins[@]}" > "$BUNDLE/libraries.txt"
  [ -d ../shared/data/coco128 ] || { echo "device_check: ../shared/data/coco128 is needed for the training benchmark" >&2; exit 1; }
  cp -r ../shared/data/coco128 "$BUNDLE/data/"
  cp ../shared/tools/yolov5-reference/yolo_launch.py "$BUNDLE/tools/" 2>/dev/null || true
  # YOLOv5 v7.0: a git directory from the search tool's fetch (YOLOV5_GIT), or an unpacked tree (YOLOV5_DIR).
  if [ -n "${YOLOV5_GIT:-}" ]; then
    mkdir -p "$BUNDLE/yolov5" && git --git-dir="$YOLOV5_GIT" archive v7.0 | tar -x -C "$BUNDLE/yolov5"
  elif [ -n "${YOLOV5_DIR:-}" ]; then
    cp -r "$YOLOV5_DIR" "$BUNDLE/yolov5"
  else
    echo "device_check: no YOLOv5 source (set YOLOV5_GIT or YOLOV5_DIR): the device run skips train.py" >&2
  fi
  rm -rf "$BUNDLE/yolov5/.git" "$BUNDLE/yolov5/data/images" 2>/dev/null || true
  echo "== what travels (the working tree's tracked files + $BUNDLE) =="
  cat "$BUNDLE/libraries.txt"
  du -sh "$BUNDLE"/* | sed 's/^/  /'
  local tree bundle total
  tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  bundle=$(du -sb "$BUNDLE" | cut -f1)
  total=$(( (tree + bundle) / 1048576 ))
  echo "tracked files $(( tree / 1048576 )) MiB + bundle $(( bundle / 1048576 )) MiB = $total MiB of the $LIMIT_MIB MiB the device tool carries"
  [ "$total" -lt "$LIMIT_MIB" ] || { echo "device_check: over the limit" >&2; exit 1; }
}

# Runs the check where it is (the device, or this CPU for --dry-run) and writes $OUT/device_check.json.
run_check() {
  local small="$1"
  OUT="${OUT:-$BUNDLE/out}"
  mkdir -p "$OUT"
  local torch_py=/opt/torch/.venv/bin/python
  [ -x "$torch_py" ] || { source scripts/torch_env.sh; torch_py="$KESTREL_TORCH_VENV/bin/python"; }
  local torch_lib
  torch_lib=$("$torch_py" -c 'import os, torch; print(os.path.dirname(torch.__file__) + "/lib")')
  export LD_LIBRARY_PATH="$PWD/$BUNDLE/lib:$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export OMP_WAIT_POLICY=PASSIVE
  local K="$PWD/$BUNDLE/bin/kestrel" device=0 cfg=yolov5s.yaml v8cfg=yolov8s.yaml img=640 batch=64 bench_batch=32 copies=16 epochs=2 steps=20
  if [ "$small" = 1 ]; then device=cpu cfg=yolov5n.yaml v8cfg=yolov8n.yaml img=128 batch=8 bench_batch=4 copies=1 epochs=1 steps=2; fi
  "$K" doctor > "$OUT/doctor.txt" 2>&1 || true

  echo "== 1. GPU tests"
  for t in device_batch_upload device_stage_events device_cuda_parity; do
    "$BUNDLE/bin/$t" --gtest_output="json:$OUT/$t.json" > "$OUT/$t.log" 2>&1 || echo "$t FAILED (see $t.log)"
    tail -1 "$OUT/$t.log"
  done

  echo "== 2. bench step"
  local amps="off bf16"; [ "$device" = cpu ] || amps="off fp16 bf16"
  # shellcheck disable=SC2086
  "$K" bench step --cfg "$cfg" --img "$img" --batch "$bench_batch" --amp $amps --steps "$steps" --warmup 3 --device "$device" \
    > "$OUT/bench_step.txt" 2>&1 || echo "bench step FAILED"
  # Channels-last (what training runs) against NCHW, in the precision GPU training uses.
  local amp_layout=fp16; [ "$device" = cpu ] && amp_layout=bf16
  "$K" bench step --cfg "$cfg" --img "$img" --batch "$bench_batch" --amp "$amp_layout" --steps "$steps" --warmup 3 \
    --device "$device" --layout nchw 2>&1 | sed 's/^\(fp16\|bf16\):/nchw \1:/' >> "$OUT/bench_step.txt" || echo "bench step --layout nchw FAILED"
  local v8amps="off fp16"; [ "$device" = cpu ] && v8amps="off"
  # shellcheck disable=SC2086
  "$K" bench step --cfg "$v8cfg" --img "$img" --batch "$bench_batch" --amp $v8amps --steps "$steps" --warmup 3 --device "$device" \
    2>&1 | sed "s/^/$v8cfg /" >> "$OUT/bench_step.txt" || echo "bench step $v8cfg FAILED"
  cat "$OUT/bench_step.txt"

  echo "== 3. training benchmark"
  local data="$PWD/$BUNDLE/work/coco128x$copies"
  rm -rf "$data" && mkdir -p "$data/images/train" "$data/labels/train"
  local src="$PWD/$BUNDLE/data/coco128"
  for c in $(seq -w 1 "$copies"); do
    for f in "$src"/images/train2017/*.jpg; do
      b=$(basename "$f" .jpg)
      ln -s "$f" "$data/images/train/c${c}_$b.jpg"
      [ -f "$src/labels/train2017/$b.txt" ] && ln -s "$src/labels/train2017/$b.txt" "$data/labels/train/c${c}_$b.txt"
    done
  done
  printf 'path: %s\ntrain: images/train\nval: %s/images/train2017\nnc: 80\nnames: [%s]\n' "$data" "$src" \
    "$(seq -s, 0 79)" > "$data/data.yaml"
  local workers=8; [ "$small" = 1 ] && workers=2
  "$K" train --data "$data/data.yaml" --cfg "$cfg" --weights '' --img "$img" --batch "$batch" --epochs "$epochs" \
    --workers "$workers" --device "$device" --noval --noplots --project "$PWD/$BUNDLE/work/runs" --name kestrel \
    > "$OUT/kestrel_train.txt" 2>&1 || echo "kestrel train FAILED"
  grep -E "^epoch |GPU per step|Time per step|Verdict" "$OUT/kestrel_train.txt" || true
  cp "$PWD/$BUNDLE/work/runs/kestrel/report.json" "$OUT/kestrel_report.json" 2>/dev/null || true
  "$K" train --data "$data/data.yaml" --cfg "$v8cfg" --weights '' --img "$img" --batch "$batch" --epochs 1 \
    --workers "$workers" --device "$device" --noval --noplots --project "$PWD/$BUNDLE/work/runs" --name kestrel_v8 \
    > "$OUT/kestrel_train_v8.txt" 2>&1 || echo "kestrel train $v8cfg FAILED"
  grep -E "^epoch |GPU per step|Verdict|--amp auto|optimizer:" "$OUT/kestrel_train_v8.txt" || true

  echo "== 4. YOLOv5 v7.0 train.py"
  if [ -f "$BUNDLE/yolov5/train.py" ] && "$torch_py" -c 'import cv2, yaml, pandas, tqdm' 2>/dev/null; then
    local y5="$PWD/$BUNDLE/yolov5" ydev=0; [ "$device" = cpu ] && ydev=cpu
    (cd "$y5" && YOLOv5_AUTOINSTALL=false YOLO_TIMING_JSON="$OUT/yolov5_timing.json" \
      "$torch_py" "$PWD/../tools/yolo_launch.py" train.py --data "$data/data.yaml" --cfg "models/$cfg" --weights '' \
      --img "$img" --batch "$batch" --epochs "$epochs" --workers "$workers" --device "$ydev" --noval --noplots \
      --project "$PWD/../work/runs" --name yolov5 > "$OUT/yolov5_train.txt" 2>&1) || echo "YOLOv5 train.py FAILED"
  else
    echo "skipped: no YOLOv5 source in the bundle, or its Python dependencies are missing here" | tee "$OUT/yolov5_train.txt"
  fi

  "$torch_py" - "$OUT" "$cfg" "$img" "$batch" "$copies" <<'PY'
import json, os, re, sys
out, cfg, img, batch, copies = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def read(name):
    p = os.path.join(out, name)
    return open(p).read() if os.path.exists(p) else ""
summary = {"model": cfg, "img": img, "batch": batch, "images_per_epoch": 128 * copies, "tests": {}}
for t in ("device_batch_upload", "device_stage_events", "device_cuda_parity"):
    try:
        j = json.load(open(os.path.join(out, t + ".json")))
        summary["tests"][t] = {"tests": j["tests"], "failures": j["failures"], "disabled": j.get("disabled", 0),
                               "skipped": sum(1 for s in j["testsuites"] for c in s["testsuite"] if c.get("result") == "SKIPPED")}
    except Exception as e:
        summary["tests"][t] = {"error": str(e)}
summary["bench_step"] = [l for l in read("bench_step.txt").splitlines() if re.search(r"ms|img/s", l)]
train = read("kestrel_train.txt")
epochs = [float(m) for m in re.findall(r"^epoch \d+: ([\d.]+) s train", train, re.M)]
summary["kestrel"] = {"epoch_seconds": epochs, "lines": [l for l in train.splitlines() if re.match(r"(epoch |  GPU per step|GPU per step|Time per step|Verdict|--amp)", l)]}
if epochs:
    summary["kestrel"]["images_per_s_last_epoch"] = 128 * copies / epochs[-1]
v8 = read("kestrel_train_v8.txt")
v8_epochs = [float(m) for m in re.findall(r"^epoch \d+: ([\d.]+) s train", v8, re.M)]
summary["kestrel_v8"] = {"epoch_seconds": v8_epochs,
                         "lines": [l for l in v8.splitlines() if re.match(r"(epoch |  GPU per step|GPU per step|Verdict|--amp|optimizer:)", l)]}
if v8_epochs:
    summary["kestrel_v8"]["images_per_s"] = 128 * copies / v8_epochs[-1]
try:
    r = json.load(open(os.path.join(out, "kestrel_report.json")))
    summary["kestrel"]["data_wait_share"] = r["share"]["data"]
    gpu = [s["gpu_util"] for s in r["samples"] if s.get("gpu_util") is not None]
    summary["kestrel"]["gpu_util_mean"] = sum(gpu) / len(gpu) if gpu else None
except Exception as e:
    summary["kestrel"]["report_error"] = str(e)
try:
    y = json.load(open(os.path.join(out, "yolov5_timing.json")))
    summary["yolov5"] = y
except Exception:
    summary["yolov5"] = {"note": read("yolov5_train.txt").strip()[-400:]}
json.dump(summary, open(os.path.join(out, "device_check.json"), "w"), indent=1)
print(json.dumps(summary, indent=1)[:3000])
PY
}

case "$MODE" in
  --prepare) prepare ;;
  --dry-run) prepare && run_check 1 ;;
  --on-device) run_check 0 ;;
  *) echo "usage: $0 [--dry-run | --prepare | --on-device]" >&2; exit 2 ;;
esac
