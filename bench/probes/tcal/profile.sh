#!/usr/bin/env bash
# Where the tensor cores' aligned body loses time against the aligned kernel of the same knobs:
# `gemvtune run` of one shape (4096x4096, M = 8) with ld = ldx = 4096 (aligned), 4099 (every row
# offset) and the al config forced on aligned rows (no realignment, the al loop's structure
# alone), then ncu's speed of light, warp states and scheduler statistics of each kernel.
# OUT=$OUT bench/probes/tcal/profile.sh  (carry build-gpu/h)
set -u
B=${BUILD:-build-gpu/h}
G=$B/cli/gemvtune
M=${M:-8}
TC=${TC:-tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_m$M}
AL=${AL:-tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_al_m$M}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
runs=("--config $TC --ld 4096 --ldx 4096" "--config $TC --ld 4099 --ldx 4099" "--config $AL --ld 4096 --ldx 4096" "--config $AL --ld 4104 --ldx 4099")
for r in "${runs[@]}"; do
  echo "== run $r"
  $G run --shape 4096x4096 --batch $M $r 2>&1 | tail -4
done
if command -v ncu > /dev/null; then
  i=0
  for r in "${runs[@]:0:3}"; do
    i=$((i + 1))
    ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
      --section MemoryWorkloadAnalysis -k regex:gemv_tc --launch-skip 30 -c 1 $G run --shape 4096x4096 --batch $M $r > "$OUT/ncu_$i.txt" 2>&1
    echo "== ncu $r"; grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Stall|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth" "$OUT/ncu_$i.txt" | head -30
  done
fi
