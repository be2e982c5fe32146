#!/usr/bin/env bash
# overlay.sh OUTDIR writes OUTDIR/overlay.json for `go test -overlay`: the
# Windows test binaries run under Wine get a copy of the installed Go's
# internal/syscall/windows/at_windows.go in which Deleteat also takes Go's
# own fallback (the older delete call) when the POSIX-semantics delete
# answers STATUS_NOT_IMPLEMENTED. Wine 8 answers that, so os.RemoveAll, and
# with it every t.TempDir cleanup, fails there with "Invalid function.";
# Windows itself answers STATUS_INVALID_INFO_CLASS, which Go already
# handles. The copy is made from the Go in use at test time (no Go source
# is committed) and the patch fails loudly if that Go's file changed.
# Only test binaries get it: printgate.exe runs unmodified, with its own
# fallback where it removes a tree (cmd/printgate's demo dir).
set -euo pipefail
out=$1
src="$(${GO:-go} env GOROOT)/src/internal/syscall/windows/at_windows.go"
mkdir -p "$out"
dst="$out/at_windows.go"
anchor='STATUS_NOT_SUPPORTED:     // the file system'
if ! grep -qF "$anchor" "$src"; then
	echo "overlay.sh: $src no longer has the line the Wine patch goes after ('$anchor'); update scripts/wine/overlay.sh for this Go" >&2
	exit 1
fi
sed "s|^\(\t*\)$anchor|\1NTStatus(0xC0000002), // STATUS_NOT_IMPLEMENTED: Wine (printgate's scripts/wine/overlay.sh)\n\1$anchor|" "$src" >"$dst"
grep -q 'STATUS_NOT_IMPLEMENTED: Wine' "$dst"
printf '{"Replace":{"%s":"%s"}}\n' "$src" "$dst" >"$out/overlay.json"
