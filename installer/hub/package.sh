#!/usr/bin/env bash
# package.sh builds the hub's release files into dist/ (`make package-hub`),
# beside the agent's from scripts/package.sh (it does not empty dist/):
#   printgate-hub_<version>_linux_amd64, _linux_arm64   binaries
#   printgate-hub_<debversion>_amd64.deb, _arm64.deb    Debian packages
#   SHA256SUMS                                          rewritten over every printgate file in dist/
# Binaries: CGO off, -trimpath. The .deb is built by nfpm run as a Go tool at
# the pinned version of scripts/package.sh. Environment: VERSION (default:
# git describe), DIST (default dist), TARGETS (default "linux/amd64
# linux/arm64"; other systems are skipped: the hub runs on Linux), NFPM.
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
DIST=${DIST:-dist}
TARGETS=${TARGETS:-linux/amd64 linux/arm64}
NFPM=${NFPM:-github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2}

# debVersion as in scripts/package.sh: v1.2.3-4-gabc → 1.2.3+4.gabc,
# abc1234 → 0.0.0+git.abc1234.
debVersion() {
	local v=$1
	v=${v#v}
	if [[ $v =~ ^[0-9]+\.[0-9]+ ]]; then
		echo "${v//-/+}" | sed 's/+\([0-9]*\)+g/+\1.g/; s/+dirty/.dirty/'
	else
		echo "0.0.0+git.${v//-/.}"
	fi
}
DEBVERSION=$(debVersion "$VERSION")

mkdir -p "$DIST"
for t in $TARGETS; do
	os=${t%/*} arch=${t#*/}
	[ "$os" = linux ] || continue
	bin="$DIST/printgate-hub_${VERSION}_linux_${arch}"
	echo "== build printgate-hub linux/$arch ($VERSION)"
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch "$GO" build -trimpath -ldflags "-s -w" -o "$bin" ./cmd/printgate-hub
	echo "== deb printgate-hub $arch ($DEBVERSION)"
	PG_ARCH=$arch PG_VERSION=$DEBVERSION PG_BIN="$bin" \
		"$GO" run "$NFPM" pkg --config installer/hub/nfpm.yaml --packager deb --target "$DIST/printgate-hub_${DEBVERSION}_${arch}.deb"
done

echo "== SHA256SUMS"
(cd "$DIST" && shopt -s nullglob && sha256sum -- printgate_* printgate-hub_* >SHA256SUMS)
ls -l "$DIST"
