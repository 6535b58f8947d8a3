#!/bin/bash
export PATH=/root/.cache/mixtape/node/24.21.0-x64/bin:$PATH
for d in sqlite postgres; do
  for round in 1 2; do
    for tree in before head; do
      if [ $tree = before ]; then dir=/tmp/mx-before; n=10030; else dir=/work/main; n=10040; fi
      cd $dir
      echo "== $d round $round $tree $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> /tmp/ab/log
      timeout 900 npm run bench -- --dialect $d --playlists $n --only get,list,search,create,edit,merge --connections 16 --duration 4 --warmup 2 --users 32 --skip-build > /tmp/ab/$d-$round-$tree.txt 2>&1
      echo "rc $?" >> /tmp/ab/log
    done
  done
done
echo done >> /tmp/ab/log
