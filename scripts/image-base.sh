#!/usr/bin/env bash
# Makes the base of the container image: a Debian root file system of Essential packages only
# (`mmdebstrap --variant=minbase`), without documentation, manual pages or translations, imported as a local image.
# No image is pulled from anywhere. Prints the image's name:
#
#   scripts/image-base.sh        # localhost/mixtape-base:bookworm-<hash of this script>
#
# The tarball is kept in $MIXTAPE_IMAGE_CACHE (by default ~/.cache/mixtape/image) and the image is imported from it
# only when missing, so a second run takes a second. A change to this script gives a new name, so a new base.
# Needs root (or a user namespace mmdebstrap can use), mmdebstrap and podman.
set -euo pipefail
cd "$(dirname "$0")/.."

suite=bookworm
hash="$(sha256sum scripts/image-base.sh | cut -c1-12)"
image="localhost/mixtape-base:$suite-$hash"
cache="${MIXTAPE_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mixtape/image}"
tarball="$cache/base-$suite-$hash.tar"

if podman image exists "$image"; then
  echo "$image"
  exit 0
fi

if [[ ! -s "$tarball" ]]; then
  mkdir -p "$cache"
  work="$(mktemp "$cache/.base-$suite.XXXXXX.tar")"
  trap 'rm -f "$work"' EXIT
  # Debian's own mirrors for the stable suite (with its updates and security), as mmdebstrap picks them.
  # SOURCE_DATE_EPOCH makes the same packages give the same bytes.
  SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-0}" mmdebstrap --quiet --variant=minbase --format=tar \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*' \
    "$suite" "$work" >&2
  mv "$work" "$tarball"
  trap - EXIT
fi

podman import --quiet --message "Debian $suite minbase for Mixtape" "$tarball" "$image" >/dev/null
echo "$image"
