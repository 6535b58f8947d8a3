#!/bin/bash
export PATH=/root/.cache/mixtape/node/24.21.0-x64/bin:$PATH
cd /work/main
OUT=/tmp/ab/gather; mkdir -p $OUT
for r in 1 2; do
  for t in nogather gather; do
    root=(); [ $t = nogather ] && root=(--root /tmp/mx-nogather)
    echo "=== round $r $t $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    npm run bench -- --dialect sqlite --playlists 10000 --only create,edit --connections 16,64 --duration 4 --warmup 2 --users 32 --skip-build "${root[@]}" --out $OUT/$r-$t.json 2>&1 | tee $OUT/$r-$t.log | grep -E "^(create|edit) "
  done
done
