#!/usr/bin/env bash
# package.sh builds the release files into dist/ (`make package`):
#   printgate_<version>_linux_amd64, _linux_arm64, _windows_amd64.exe  binaries
#   printgate_<debversion>_amd64.deb, _arm64.deb                        Debian packages
#   printgate_<version>_windows_amd64.zip                               exe, README.txt, install.ps1
#   SHA256SUMS
# Binaries: CGO off, -trimpath, the version from git as in the Makefile.
# The .deb is built by nfpm run as a Go tool at a pinned version, so go.mod
# stays free of it. Environment: VERSION (default: git describe), DIST
# (default dist), TARGETS (default "linux/amd64 linux/arm64 windows/amd64";
# each linux target gets a .deb, windows/amd64 the zip), NFPM (the nfpm
# module@version).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
DIST=${DIST:-dist}
TARGETS=${TARGETS:-linux/amd64 linux/arm64 windows/amd64}
NFPM=${NFPM:-github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2}
LDFLAGS="-s -w -X printgate/cmd/printgate/internal/version.Version=${VERSION}"

# debVersion turns a git description into a Debian version, which must
# start with a digit: v1.2.3-4-gabc → 1.2.3+4.gabc, abc1234 → 0.0.0+git.abc1234.
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

rm -rf "$DIST"
mkdir -p "$DIST"

build() { # GOOS GOARCH OUT
	echo "== build $1/$2 ($VERSION)"
	CGO_ENABLED=0 GOOS=$1 GOARCH=$2 "$GO" build -trimpath -ldflags "$LDFLAGS" -o "$3" ./cmd/printgate
}
for t in $TARGETS; do
	os=${t%/*} arch=${t#*/}
	ext=""
	[ "$os" = windows ] && ext=.exe
	build "$os" "$arch" "$DIST/printgate_${VERSION}_${os}_${arch}${ext}"
done

for t in $TARGETS; do
	[ "${t%/*}" = linux ] || continue
	arch=${t#*/}
	echo "== deb $arch ($DEBVERSION)"
	PG_ARCH=$arch PG_VERSION=$DEBVERSION PG_BIN="$DIST/printgate_${VERSION}_linux_${arch}" \
		"$GO" run "$NFPM" pkg --config installer/nfpm.yaml --packager deb --target "$DIST/printgate_${DEBVERSION}_${arch}.deb"
done

if [[ " $TARGETS " == *" windows/amd64 "* ]]; then
	echo "== windows zip"
	zipdir=$(mktemp -d)
	trap 'rm -rf "$zipdir"' EXIT
	mkdir -p "$zipdir/printgate"
	cp "$DIST/printgate_${VERSION}_windows_amd64.exe" "$zipdir/printgate/printgate.exe"
	# Windows tools read CRLF text best.
	sed 's/$/\r/' installer/windows/README.txt >"$zipdir/printgate/README.txt"
	sed 's/$/\r/' installer/windows/install.ps1 >"$zipdir/printgate/install.ps1"
	zipfile="$PWD/$DIST/printgate_${VERSION}_windows_amd64.zip"
	if command -v zip >/dev/null 2>&1; then
		(cd "$zipdir" && zip -q -r "$zipfile" printgate)
	elif command -v python3 >/dev/null 2>&1; then
		(cd "$zipdir" && python3 -m zipfile -c "$zipfile" printgate)
	else
		echo "package.sh: need zip or python3 to write the Windows zip" >&2
		exit 1
	fi
fi

echo "== SHA256SUMS"
(cd "$DIST" && sha256sum -- printgate_* >SHA256SUMS)
ls -l "$DIST"
