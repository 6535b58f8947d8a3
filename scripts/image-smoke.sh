#!/usr/bin/env bash
# The smoke test of the container image: builds it from the committed files (scripts/image-build.sh), prints its size
# as an OCI archive (compressed layers) and fails past 150 MB, then runs it as an operator would:
#
#   1. SQLite on a volume, root file system read-only, port 8080 published on a free port of 127.0.0.1: /readyz, the
#      image's own HEALTHCHECK, a user created with the CLI inside the container (`mixtape user add --password-stdin`),
#      a playlist created and read over HTTP, its cover drawn;
#   2. the container stopped (SIGTERM, with MIXTAPE_DRAIN_DELAY_SECONDS=2: /readyz turns 503 while the playlist is
#      still served, then it must exit 0) and a new one started on the same volume: the user signs in and the
#      playlist reads the same;
#   3. PostgreSQL: a private database on the machine's server (127.0.0.1:5432, role postgres, trust), `mixtape migrate`
#      as a one-off container, then the service on it, a playlist created and read, and the row seen with psql.
#
# Everything it makes is removed on exit, passed or failed: containers, the volume, the images the build added, the
# database, the temporary folder. It makes no network and no firewall rule: the published port goes through
# slirp4netns (user mode), PostgreSQL is reached on the host's network; the firewall rules are compared before and after.
# Every wait is bounded. Kept for the next run, as the suite keeps its Node.js releases: the base tarball, Node.js and
# npm in ~/.cache/mixtape, and npm's download cache in buildah's cache mount (/var/tmp/buildah-cache).
#
#   scripts/image-smoke.sh            # needs root, mmdebstrap, buildah, podman, runc, psql, node and npm on PATH
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
run="$(date +%s)-$$"
image="localhost/mixtape-smoke:$run"
volume="mixtape-smoke-$run"
database="mixtape_image_${run//-/_}"
pg_admin="postgresql://postgres@127.0.0.1:5432/postgres"
pg_url="postgres://postgres@127.0.0.1:5432/$database"
max_bytes=$((150 * 1000 * 1000))
work="$(mktemp -d /tmp/mixtape-image-smoke.XXXXXX)"
containers=()
auth='X-Smoke-Test: no credential yet'
database_made=false
passed=false

# This machine's podman: runc (crun refuses the cgroup set-up), cgroupfs, and explicit limits (the defaults are
# refused). nofile follows the shell's hard limit, which the service's connection caps must stay below.
nofile="$(ulimit -Hn)"
if [[ "$nofile" == unlimited || "$nofile" -gt 65536 ]]; then nofile=65536; fi
pm() { podman --runtime runc --cgroup-manager cgroupfs "$@"; }
# The HEALTHCHECK is run on demand (`podman healthcheck run`): its timer would need systemd.
run_flags=(--ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096 --health-interval disable)

step() { printf '\n--- %s (%d s)\n' "$1" $((SECONDS - started)); }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
seconds_since() { local ms=$(($(now_ms) - $1)); printf '%d.%02d' $((ms / 1000)) $((ms % 1000 / 10)); }
fail() {
  echo "image-smoke: FAILED: $*" >&2
  exit 1
}
# Runs a podman command with its stderr kept apart (podman 4.3 complains on every start and stop that there is no
# systemd for health-check timers); shows it only when the command fails.
quietly() {
  "$@" >/dev/null 2>"$work/podman.err" || fail "$*: $(cat "$work/podman.err")"
}
firewall() { { iptables -S && iptables -t nat -S && ip6tables -S && ip6tables -t nat -S; } 2>/dev/null || true; }

images_before="$(podman images --all --quiet --no-trunc | sort -u)"
volumes_before="$(podman volume ls --quiet | sort -u)"
builders_before="$(buildah containers --quiet --notruncate | sort -u)"
firewall_before="$(firewall)"

cleanup() {
  local status=$?
  set +e
  for c in "${containers[@]}"; do
    if [[ "$passed" != true ]]; then
      echo "--- log of $c" >&2
      pm logs --tail 40 "$c" >&2
    fi
    pm rm --force --volumes --time 0 "$c" >/dev/null 2>&1
  done
  # The named volume, and the anonymous ones the image's VOLUME gave the containers that had no other.
  pm volume rm --force "$volume" >/dev/null 2>&1
  comm -13 <(echo "$volumes_before") <(podman volume ls --quiet | sort -u) | xargs -r podman volume rm --force >/dev/null 2>&1
  pm rmi --force "$image" >/dev/null 2>&1
  # The images and build containers this run added (intermediate layers included), and nothing older.
  comm -13 <(echo "$builders_before") <(buildah containers --quiet --notruncate | sort -u) | xargs -r buildah rm >/dev/null 2>&1
  comm -13 <(echo "$images_before") <(podman images --all --quiet --no-trunc | sort -u) | xargs -r podman rmi --force >/dev/null 2>&1
  if [[ "$database_made" == true ]]; then
    psql "$pg_admin" -qAtc "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null
  fi
  rm -rf "$work"
  if [[ "$(firewall)" != "$firewall_before" ]]; then
    echo "image-smoke: the firewall rules differ from before the run" >&2
    status=1
  fi
  exit "$status"
}
trap cleanup EXIT

free_port() { node -e "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })"; }

# Waits up to 30 s (at most 120 tries) for URL to answer 200; prints the seconds since SINCE (now_ms).
wait_ready() {
  local url="$1" since="$2"
  for _ in $(seq 1 120); do
    if curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null; then
      seconds_since "$since"
      return 0
    fi
    (($(now_ms) - since < 30000)) || break
    sleep 0.25
  done
  fail "$url did not answer 200 within 30 s"
}

# api METHOD URL [BODY]: the body on stdout; fails on anything but 200.
api() {
  local out code
  out="$work/answer"
  code="$(curl -sS --max-time 10 -o "$out" -w '%{http_code}' -X "$1" "$2" -H "$auth" -H 'Content-Type: application/json' ${3:+-d "$3"})"
  [[ "$code" == 200 ]] || fail "$1 $2 answered $code: $(head -c 300 "$out")"
  cat "$out"
}

# Creates a playlist of three catalog songs on the service at BASE and checks it reads back the same; prints its id.
create_and_read() {
  local base="$1" songs created id
  songs="$(api GET "$base/v3/song?limit=3" | grep -o '"id":[0-9]*' | cut -d: -f2 | paste -sd, -)"
  [[ "$songs" =~ ^[0-9]+,[0-9]+,[0-9]+$ ]] || fail "the demo catalog gave no three songs: $songs"
  created="$(api POST "$base/v3/playlist" "{\"name\": \"Smoke $run\", \"songIds\": [$songs]}")"
  id="$(printf '%s' "$created" | grep -o '^{"id":[0-9]*' | cut -d: -f2)"
  [[ -n "$id" ]] || fail "no id in the create's answer: $created"
  [[ "$(api GET "$base/v3/playlist/$id")" == "$created" ]] || fail "playlist $id does not read back as created"
  echo "$id"
}

step "build $image"
build_started=$SECONDS
scripts/image-build.sh "$image" >/dev/null
echo "built in $((SECONDS - build_started)) s"

step "size"
pm save --quiet --format oci-archive -o "$work/image.tar" "$image"
bytes="$(stat -c %s "$work/image.tar")"
rm -f "$work/image.tar"
printf 'image size: %d bytes as an OCI archive (compressed layers), %d.%d MB (limit %d MB)\n' \
  "$bytes" $((bytes / 1000000)) $((bytes % 1000000 / 100000)) $((max_bytes / 1000000))
((bytes <= max_bytes)) || fail "the image is over $((max_bytes / 1000000)) MB"

step "SQLite on a volume, read-only root file system"
pm volume create "$volume" >/dev/null
port="$(free_port)"
base="http://127.0.0.1:$port"
since="$(now_ms)"
containers+=("$volume-a")
quietly pm run --detach --name "$volume-a" "${run_flags[@]}" --read-only --volume "$volume:/data" \
  -e MIXTAPE_DRAIN_DELAY_SECONDS=2 --network slirp4netns --publish "127.0.0.1:$port:8080" "$image"
echo "/readyz 200 after $(wait_ready "$base/readyz" "$since") s"
api GET "$base/healthz" >/dev/null
pm healthcheck run "$volume-a" 2>/dev/null || fail "the image's HEALTHCHECK failed"
echo "the image's HEALTHCHECK passes"
[[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/v3/playlist")" == 401 ]] || fail "no credential did not answer 401"

printf 'smoke-password\n' | pm exec --interactive "$volume-a" mixtape user add smoke --password-stdin
auth="Authorization: Basic $(printf 'smoke:smoke-password' | base64)"
id="$(create_and_read "$base")"
saved="$(api GET "$base/v3/playlist/$id")"
echo "playlist $id created and read: ${saved:0:120}…"
api GET "$base/v3/playlist/$id/image?size=256" >"$work/cover.png"
cover="$(head -c 8 "$work/cover.png" | od -An -tx1 | tr -d ' \n')"
[[ "$cover" == 89504e470d0a1a0a ]] || fail "the cover is not a PNG (first bytes $cover)"
echo "its cover is a PNG of $(stat -c %s "$work/cover.png") bytes"

step "stop (SIGTERM, a drain delay of 2 s), then a new container on the same volume"
stop_started="$(now_ms)"
pm stop --time 30 "$volume-a" >/dev/null 2>"$work/stop.err" &
stopper=$!
drained=false
for _ in $(seq 1 40); do
  if [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$base/readyz")" == 503 ]]; then
    drained=true
    break
  fi
  sleep 0.05
done
[[ "$drained" == true ]] || fail "/readyz did not turn 503 after SIGTERM"
[[ "$(api GET "$base/v3/playlist/$id")" == "$saved" ]] || fail "playlist $id read otherwise during the drain"
echo "draining: /readyz 503 after $(seconds_since "$stop_started") s, playlist $id still served"
wait "$stopper" || fail "podman stop: $(cat "$work/stop.err")"
exit_code="$(pm inspect "$volume-a" --format '{{.State.ExitCode}}')"
echo "stopped in $(seconds_since "$stop_started") s, exit code $exit_code"
[[ "$exit_code" == 0 ]] || fail "the service exited $exit_code on SIGTERM"
since="$(now_ms)"
containers+=("$volume-b")
quietly pm run --detach --name "$volume-b" "${run_flags[@]}" --read-only --volume "$volume:/data" \
  --network slirp4netns --publish "127.0.0.1:$port:8080" "$image"
echo "/readyz 200 after $(wait_ready "$base/readyz" "$since") s"
[[ "$(api GET "$base/v3/playlist/$id")" == "$saved" ]] || fail "playlist $id reads otherwise after the restart"
echo "playlist $id reads the same from the volume"
quietly pm rm --force --volumes --time 0 "$volume-b"

step "PostgreSQL: database $database"
pg_isready -h 127.0.0.1 -p 5432 -q || fail "no PostgreSQL on 127.0.0.1:5432"
psql "$pg_admin" -qAtc "CREATE DATABASE $database"
database_made=true
pm run --rm "${run_flags[@]}" --read-only --network host -e "DATABASE_URL=$pg_url" \
  "$image" migrate 2>"$work/podman.err" || fail "mixtape migrate: $(cat "$work/podman.err")"
port="$(free_port)"
base="http://127.0.0.1:$port"
since="$(now_ms)"
containers+=("$volume-pg")
quietly pm run --detach --name "$volume-pg" "${run_flags[@]}" --read-only --network host \
  -e "DATABASE_URL=$pg_url" -e HOST=127.0.0.1 -e "PORT=$port" -e MIXTAPE_BOOTSTRAP_USER=smoke:smoke-password \
  "$image"
echo "/readyz 200 after $(wait_ready "$base/readyz" "$since") s"
pm healthcheck run "$volume-pg" 2>/dev/null || fail "the image's HEALTHCHECK failed on PostgreSQL"
id="$(create_and_read "$base")"
rows="$(psql "postgresql://postgres@127.0.0.1:5432/$database" -qAtc "SELECT count(*) FROM playlists WHERE id = $id")"
[[ "$rows" == 1 ]] || fail "playlist $id is not in $database"
echo "playlist $id created, read, and in PostgreSQL"
quietly pm stop --time 30 "$volume-pg"
exit_code="$(pm inspect "$volume-pg" --format '{{.State.ExitCode}}')"
[[ "$exit_code" == 0 ]] || fail "the service exited $exit_code on SIGTERM"

passed=true
printf '\n--- image smoke test passed in %d s\n' $((SECONDS - started))
