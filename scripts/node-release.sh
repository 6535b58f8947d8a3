#!/usr/bin/env bash
# Fetches a Node.js release from the npm registry (the package node-linux-<arch>@VERSION, which carries the node
# binary and its headers) into a cache folder, once, and prints the folder whose bin/ to put first on PATH:
#
#   export PATH="$(scripts/node-release.sh 24.21.0)/bin:$PATH"
#
# npm is the machine's own: its `#!/usr/bin/env node` runs it on the release first on PATH.
# The cache is $MIXTAPE_NODE_CACHE, by default ~/.cache/mixtape/node; a release already there is not fetched again.
set -euo pipefail

version="${1:?usage: scripts/node-release.sh VERSION (for example 24.21.0)}"
version="${version#v}"
if [[ ! "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "node-release: '$version' is not a release number such as 24.21.0" >&2
  exit 2
fi

case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *)
    echo "node-release: no node-linux package for $(uname -m)" >&2
    exit 2
    ;;
esac

cache="${MIXTAPE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mixtape/node}"
target="$cache/$version-$arch"
if [[ -x "$target/bin/node" ]]; then
  echo "$target"
  exit 0
fi

mkdir -p "$cache"
work="$(mktemp -d "$cache/.fetch-$version.XXXXXX")"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "node-linux-$arch@$version" >/dev/null)
mkdir "$work/node"
tar -xzf "$work/node-linux-$arch-$version.tgz" -C "$work/node" --strip-components=1
if [[ "$("$work/node/bin/node" --version)" != "v$version" ]]; then
  echo "node-release: node-linux-$arch@$version does not hold Node.js $version" >&2
  exit 1
fi
# Another run may have fetched the same release meanwhile: keep whichever landed first.
mv -T "$work/node" "$target" 2>/dev/null || true
echo "$target"
