#!/bin/bash
export PATH=/root/.cache/mixtape/node/24.21.0-x64/bin:$PATH
d=sqlite; round=2
for tree in before head; do
  if [ $tree = before ]; then dir=/tmp/mx-before; n=10050; else dir=/work/main; n=10060; fi
  cd $dir
  echo "== $d round $round $tree $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> /tmp/ab2/log
  timeout 700 npm run bench -- --dialect $d --playlists $n --only get,list,search,create,edit,merge --connections 16 --duration 4 --warmup 2 --users 32 --skip-build > /tmp/ab2/$d-$round-$tree.txt 2>&1
  echo "rc $?" >> /tmp/ab2/log
done
echo done >> /tmp/ab2/log
