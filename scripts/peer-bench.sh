#!/usr/bin/env bash
# Peer benchmark: our NSA layer against fla's Triton parallel_nsa and dense SDPA,
# same GPU, same run (selection: block 64, top 16). Part of scripts/gpu-check.sh
# (SKIP_PEER_BENCH=1 leaves it out); runs alone as
#   OUT=peer-out bash scripts/peer-bench.sh
# with BUILD (default build-gpu) built with -DNSA_CUDA=ON -DNSA_BUILD_BENCHMARKS=ON.
#
# fla comes from a wheel in .whl/ (the GPU machine has no network); bring it with
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform any -d .whl fla-core==0.6.0
# Without .whl/fla_core*.whl the stage is skipped (exit 0, says so).
#
# Knobs: PEER_SEQ_LENS (comma list, default 8192,16384,32768,65536); PEER_SHAPES
# (comma list of paper_kernel,m7c_125m); PEER_REPS (timed calls per fla/SDPA row, 10);
# PEER_BENCH_REPS (our bench's repetitions, 5); PEER_PY_TIMEOUT_S (900); PEER_BENCH_TIMEOUT_S (600).
# Writes $OUT/peer-table.md (the combined table), $OUT/peer.json (its rows and
# speedups); the inputs and logs go to $OUT/work/peer/.
# Exit: 0 done or skipped, 4 a step failed (the log it names says why) or fla's
# run timed out (the table then holds the rows it timed, marked incomplete).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-peer-bench-out}
BUILD=${BUILD:-build-gpu}
SEQ_LENS=${PEER_SEQ_LENS:-8192,16384,32768,65536}
SHAPES=${PEER_SHAPES:-paper_kernel,m7c_125m}
DIR="$OUT/work/peer"
mkdir -p "$DIR"

wheels=(.whl/fla_core*.whl)
if [ ! -f "${wheels[0]}" ]; then
  echo "peer bench skipped: no .whl/fla_core*.whl (see the download command at the top of $0)"
  exit 0
fi
bench="$BUILD/nsa/cuda/nsa_cuda_bench"
[ -x "$bench" ] || { echo "peer bench: $bench not built (-DNSA_CUDA=ON -DNSA_BUILD_BENCHMARKS=ON)"; exit 4; }

site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "${wheels[@]}" > "$DIR/pip.log" 2>&1 \
  || { echo "peer bench: installing ${wheels[*]} failed ($DIR/pip.log)"; exit 4; }

PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" timeout "${PEER_PY_TIMEOUT_S:-900}" \
  python3 benchmarks/peer/fla_nsa_bench.py --json "$DIR/fla.json" --markdown "$DIR/fla.md" \
  --shapes "$SHAPES" --seq-lens "$SEQ_LENS" --reps "${PEER_REPS:-10}" > "$DIR/fla.log" 2>&1
rc=$?
# A timeout (rc 124) keeps what fla's script timed: it rewrites fla.json after
# every row. The table is made from those rows and says it is incomplete; the
# script still exits 4 at the end.
incomplete=0
if [ $rc = 124 ] && [ -f "$DIR/fla.json" ]; then
  incomplete=1
  echo "peer bench: fla_nsa_bench.py stopped at its timeout (PEER_PY_TIMEOUT_S=${PEER_PY_TIMEOUT_S:-900}); the table keeps the rows it timed ($DIR/fla.log)"
elif [ $rc != 0 ]; then
  echo "peer bench: fla_nsa_bench.py rc=$rc ($DIR/fla.log)"; tail -5 "$DIR/fla.log"; exit 4
fi

# The same shapes and lengths in our bench: the layer (v:2), its window branch
# (for the like-with-like column) and SDPA.
ids=$(echo "$SHAPES" | sed 's/paper_kernel/0/; s/m7c_125m/1/' | tr -d ',')
lens=$(echo "$SEQ_LENS" | tr ',' '|')
filter="BM_(DenseSdpa(Fwd|Bwd)/shape:[$ids]/S:($lens)/|(LayerAttention(Fwd|FwdBwd)|Window(Fwd|Bwd))/shape:[$ids]/S:($lens)/v:2)"
timeout "${PEER_BENCH_TIMEOUT_S:-600}" "$bench" --benchmark_filter="$filter" \
  --benchmark_repetitions="${PEER_BENCH_REPS:-5}" --benchmark_min_time=0.2 \
  --benchmark_format=json --benchmark_out="$DIR/ours.json" > "$DIR/ours.txt" 2>&1
rc=$?
[ $rc = 0 ] || { echo "peer bench: nsa_cuda_bench rc=$rc ($DIR/ours.txt)"; tail -5 "$DIR/ours.txt"; exit 4; }

python3 benchmarks/peer/peer_table.py "$DIR/fla.json" "$DIR/ours.json" \
  --markdown "$OUT/peer-table.md" --json "$OUT/peer.json" || { echo "peer bench: peer_table.py failed"; exit 4; }
echo "peer bench: table in $OUT/peer-table.md"
[ $incomplete = 0 ] || { echo "peer bench: incomplete (fla's run timed out)"; exit 4; }
