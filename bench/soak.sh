#!/usr/bin/env bash
# Soak: does a long run leak? Runs a kestrel command and samples its resident memory (VmRSS), open
# file descriptors and threads from /proc, then prints the growth from the end of the warm-up to the
# end of the run (the goal: under 2%, and no descriptor or thread more).
#   bench/soak.sh train [EPOCHS]    kestrel train on the built-in demo data (400 + 100 images, 256 px),
#                                   sampled at every epoch's end; warm-up: the first 5 epochs
#   bench/soak.sh val [ROUNDS]      kestrel val of a yolov5n checkpoint over the demo data's val images,
#                                   the images repeated ROUNDS times (50), sampled every second; warm-up:
#                                   the first half (val's rect batches are sorted by aspect ratio, so
#                                   each batch shape, and the buffers LibTorch keeps for it, first
#                                   appears anywhere in the run; with 50 rounds every shape is met in
#                                   the first half)
#   bench/soak.sh detect [ROUNDS]   kestrel detect over the same images (20 rounds), sampled every
#                                   second; warm-up: the first fifth
# The val and detect modes use the last.pt of the newest runs/soak/train* run (run train first).
# Prints one row per sample and the growth line; exits 1 when the growth passes the goal.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE="${1:-train}"
K="$PWD/build/kestrel"
OUT="${SOAK_DIR:-$PWD/runs/soak}"
mkdir -p "$OUT"
export OMP_WAIT_POLICY=PASSIVE

sample() {  # pid -> "rss_mb fds threads"
  local rss threads fds
  rss=$(awk '/^VmRSS:/ {print $2 / 1024}' "/proc/$1/status" 2>/dev/null) || return 1
  threads=$(awk '/^Threads:/ {print $2}' "/proc/$1/status")
  fds=$(ls "/proc/$1/fd" 2>/dev/null | wc -l)
  echo "$rss $fds $threads"
}

report() {  # table file, warm-up rows to skip
  awk -v skip="$2" '
    NR > skip && !first { r0 = $2; f0 = $3; t0 = $4; first = 1 }
    { r = $2; f = $3; t = $4; n = NR }
    END {
      if (!first) { print "too few samples for a verdict"; exit 1 }
      g = 100 * (r - r0) / r0
      printf "growth after the warm-up (%d samples): RSS %.1f -> %.1f MB (%+.2f%%), fds %d -> %d, threads %d -> %d\n", n - skip, r0, r, g, f0, f, t0, t
      ok = g < 2 && f <= f0 && t <= t0
      print ok ? "flat: within the goal (RSS growth < 2%, no descriptor or thread more)" : "GROWING: past the goal"
      exit ok ? 0 : 1
    }' "$1"
}

case "$MODE" in
  train)
    epochs="${2:-200}"
    table="$OUT/train_samples.txt"
    : > "$table"
    echo "epoch rss_mb fds threads"
    # The run's own lines go to a log; each "epoch N:" line triggers a sample of the process.
    coproc TRAIN { exec "$K" train --epochs "$epochs" --close-mosaic 0 --no-progress --noplots --project "$OUT" --name train 2>&1; }
    pid=$TRAIN_PID
    while IFS= read -r line <&"${TRAIN[0]}"; do
      echo "$line" >> "$OUT/train.log"
      if [[ "$line" =~ ^epoch\ ([0-9]+): ]]; then
        s=$(sample "$pid") || break
        echo "${BASH_REMATCH[1]} $s" | tee -a "$table"
      fi
    done
    wait "$pid"
    report "$table" 5
    ;;
  val | detect)
    rounds="${2:-$([ "$MODE" = val ] && echo 50 || echo 20)}"
    weights=$(ls -td "$OUT"/train*/weights/last.pt 2>/dev/null | head -1)
    [ -n "$weights" ] || { echo "no $OUT/train*/weights/last.pt: run bench/soak.sh train first" >&2; exit 2; }
    demo="${XDG_CACHE_HOME:-$HOME/.cache}/kestrel/demo-v1"
    many="$OUT/many"
    rm -rf "$many" && mkdir -p "$many/images" "$many/labels"
    for r in $(seq -w 1 "$rounds"); do
      for f in "$demo"/images/val/*; do
        b=$(basename "$f")
        ln -s "$f" "$many/images/r${r}_$b"
        l="$demo/labels/val/${b%.*}.txt"
        [ -f "$l" ] && ln -s "$l" "$many/labels/r${r}_${b%.*}.txt"
      done
    done
    printf 'path: %s\ntrain: images\nval: images\nnc: 4\nnames: [circle, rectangle, triangle, cross]\n' "$many" > "$many/data.yaml"
    if [ "$MODE" = val ]; then
      "$K" val --weights "$weights" --data "$many/data.yaml" --img 256 --project "$OUT" --name val > "$OUT/val.log" 2>&1 &
    else
      "$K" detect --weights "$weights" --source "$many/images" --img 256 --project "$OUT" --name detect > "$OUT/detect.log" 2>&1 &
    fi
    pid=$!
    table="$OUT/${MODE}_samples.txt"
    : > "$table"
    echo "second rss_mb fds threads"
    t=0
    while s=$(sample "$pid"); do
      echo "$t $s" | tee -a "$table"
      sleep 1
      t=$((t + 1))
    done
    wait "$pid"
    samples=$(wc -l < "$table")
    if [ "$MODE" = val ]; then report "$table" $((samples / 2)); else report "$table" $((samples / 5)); fi
    ;;
  *) echo "usage: $0 train [EPOCHS] | val [ROUNDS] | detect [ROUNDS]" >&2; exit 2 ;;
esac
