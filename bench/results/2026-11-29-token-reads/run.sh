#!/bin/bash
# Before (1f92425: the scenario, no kept tokens) and head (eb3a554) in turn, two rounds, one dialect ($1).
export PATH=/root/.cache/mixtape/node/24.21.0-x64/bin:$PATH
d=$1; out=/tmp/h-tok/bench/results/2026-11-29-token-reads
for round in 1 2; do
  for tree in before head; do
    if [ $tree = before ]; then dir=/tmp/h-tok-before; else dir=/tmp/h-tok; fi
    cd $dir
    echo "== $d round $round $tree $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $out/log
    timeout 700 npm run bench -- --dialect $d --playlists 10000 --only get,get-token --connections 16 --duration 4 \
      --warmup 2 --users 32 --skip-build --out $out/$d-$round-$tree.json > $out/$d-$round-$tree.txt 2>&1
    echo "rc $?" >> $out/log
  done
done
