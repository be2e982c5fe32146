#!/usr/bin/env bash
# make test-usb (README "USB, tested in a VM"): runs printgate
# against the real Linux USB stack with no hardware. It builds a VM from
# Debian packages only: Debian's kernel (linux-image-amd64's versioned image,
# fetched with apt-get download and unpacked, never installed) and its USB
# modules (dummy_hcd, the printer gadget function, usblp), an initramfs with
# busybox, the statically built printgate and the checks of
# scripts/usbvm/vmtest (which run the project's printer emulator on the
# gadget side, /dev/g_printer0). It boots the VM under qemu (KVM when it
# works, TCG otherwise), reads the checks' PASS/FAIL lines back over the
# serial console and exits non-zero when one failed or the VM did not
# finish within USBVM_TIMEOUT seconds. The cable-pull checks pull the cable
# from the host side, the hub port switched off and on (USBVM_CABLE=port, the
# default; authorized de-authorizes the device instead, udc unbinds the
# gadget, which Debian 6.1's f_printer does not survive, off skips them).
# USBVM_BENCH=1 (scripts/usbvm/bench-slowpc.sh) adds an ext4 disk for the
# spool and runs the slow-PC benchmark instead of the checks. It skips (exit
# 0, with the reason) where qemu cannot run and cannot be installed.
#
# Build outputs go to .usbvm/ (git-ignored): the unpacked kernel package,
# the initramfs and the console log (.usbvm/console.log).
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
OUT=${USBVM_DIR:-$PWD/.usbvm}
TIMEOUT=${USBVM_TIMEOUT:-300}
start=$(date +%s)
mkdir -p "$OUT"

skip() { echo "SKIP make test-usb: $*"; exit 0; }
SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

missing=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || missing+=(qemu-system-x86)
command -v cpio >/dev/null 2>&1 || missing+=(cpio)
command -v depmod >/dev/null 2>&1 || [ -x /usr/sbin/depmod ] || [ -x /sbin/depmod ] || missing+=(kmod)
if [ -n "${USBVM_BENCH:-}" ] && ! command -v mkfs.ext4 >/dev/null 2>&1 && [ ! -x /usr/sbin/mkfs.ext4 ] && [ ! -x /sbin/mkfs.ext4 ]; then
	missing+=(e2fsprogs)
fi
# Only a static busybox runs in an initramfs with no libc.
if ! dpkg-query -W -f '${Status}' busybox-static 2>/dev/null | grep -q 'ok installed'; then
	missing+=(busybox-static)
fi
if [ ${#missing[@]} -gt 0 ]; then
	command -v apt-get >/dev/null 2>&1 || skip "needs ${missing[*]} and this is not a Debian/Ubuntu machine (no apt-get)"
	echo "== install ${missing[*]}"
	$SUDO apt-get update -qq || skip "apt-get update failed: cannot install ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null ||
		skip "apt-get install ${missing[*]} failed"
fi
PATH=$PATH:/usr/sbin:/sbin

# The kernel: linux-image-amd64 names the versioned package to fetch.
kpkg=${USBVM_KERNEL_PKG:-$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -1)}
[ -n "$kpkg" ] || skip "apt-cache knows no linux-image-amd64 (run apt-get update?)"
kver=${kpkg#linux-image-}
kroot=$OUT/kernel-$kver
if [ ! -f "$kroot/boot/vmlinuz-$kver" ]; then
	echo "== fetch $kpkg (apt-get download, unpacked with dpkg-deb -x, not installed)"
	rm -rf "$kroot" "$OUT"/deb && mkdir -p "$OUT/deb"
	(cd "$OUT/deb" && apt-get download -qq "$kpkg") || skip "apt-get download $kpkg failed"
	dpkg-deb -x "$OUT"/deb/"$kpkg"_*.deb "$kroot"
	rm -rf "$OUT/deb"
fi
moddir=lib/modules/$kver
[ -d "$kroot/$moddir" ] || moddir=usr/lib/modules/$kver
depmod -b "$kroot" "$kver" 2>/dev/null || depmod -b "$kroot/usr" "$kver"

echo "== build printgate and the checks (CGO_ENABLED=0, static)"
rootfs=$OUT/rootfs
rm -rf "$rootfs" && mkdir -p "$rootfs"/{bin,proc,sys,dev,tmp,etc,lib/modules/$kver}
CGO_ENABLED=0 $GO build -trimpath -o "$rootfs/bin/printgate" ./cmd/printgate
CGO_ENABLED=0 $GO test -c -trimpath -o "$rootfs/bin/vmtest.test" ./scripts/usbvm/vmtest
cp /bin/busybox "$rootfs/bin/busybox"
cp scripts/usbvm/init.sh "$rootfs/init" && chmod 755 "$rootfs/init"

# The modules and what they depend on, as modprobe resolves them in the
# unpacked tree, then depmod -b over the initramfs' own tree.
base=$kroot
[ -d "$kroot/lib/modules/$kver" ] || base=$kroot/usr
# make bench-slowpc (USBVM_BENCH=1) adds the virtual disk's modules.
mods="usb-common usbcore udc-core dummy_hcd configfs libcomposite usb_f_printer usblp"
[ -n "${USBVM_BENCH:-}" ] && mods="$mods virtio_pci virtio_blk crc32c_generic ext4"
for m in $mods; do
	modprobe -d "$base" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | sort -u | while read -r ko; do
	rel=${ko#"$base"/}
	mkdir -p "$rootfs/$(dirname "$rel")"
	cp "$ko" "$rootfs/$rel"
done
cp "$base/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$rootfs/lib/modules/$kver/" 2>/dev/null || true
depmod -b "$rootfs" "$kver"
(cd "$rootfs" && find . | cpio -o -H newc --quiet | gzip -1) > "$OUT/initramfs.gz"
echo "== initramfs $(du -h "$OUT/initramfs.gz" | cut -f1), kernel $kver (built in $(($(date +%s) - start)) s)"

log=$OUT/console.log
# The benchmark's spool disk: a fresh ext4 image made here (mkfs.ext4 on a
# file needs no root; the inode tables and journal written now, so the VM's
# throttled disk does no background init), throttled by qemu like an HDD
# when USBVM_DISK_THROTTLE says so (bench-slowpc.sh).
disk=()
if [ -n "${USBVM_BENCH:-}" ]; then
	rm -f "$OUT/spool.img"
	truncate -s 4G "$OUT/spool.img"
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$OUT/spool.img"
	disk=(-drive "file=$OUT/spool.img,format=raw,if=virtio,cache=writeback${USBVM_DISK_THROTTLE:+,$USBVM_DISK_THROTTLE}")
fi
# boot ACCEL LIMIT runs the VM with its serial console on stdout, into
# $log, for at most LIMIT seconds; with KVM it gives up after 30 s with no
# "USBVM-BOOT" line (a /dev/kvm that cannot run this kernel fails at once
# or hangs), so TCG can take over.
boot() {
	local accel=$1 limit=$2 cpu=max
	[ "$accel" = kvm ] && cpu=host
	: >"$log"
	rm -f "$OUT/qemu.pid"
	(timeout --kill-after=10 "$limit" qemu-system-x86_64 \
		-machine q35,accel="$accel" -cpu "$cpu" -smp "${USBVM_SMP:-1}" -m "${USBVM_MEM:-1024}" \
		-kernel "$kroot/boot/vmlinuz-$kver" -initrd "$OUT/initramfs.gz" \
		-append "console=ttyS0 panic=-1 quiet loglevel=3 USBVM_TEST_TIMEOUT=$((limit - 30))s USBVM_CABLE=${USBVM_CABLE:-port} USBVM_BENCH=${USBVM_BENCH:-} SLOWPC_FILL=${SLOWPC_FILL:-} SLOWPC_ONLY=${SLOWPC_ONLY:-}" \
		"${disk[@]}" \
		-pidfile "$OUT/qemu.pid" -nographic -no-reboot -nic none -serial stdio -monitor none </dev/null 2>&1 |
		stdbuf -oL tr -d '\r' >"$log") 2>/dev/null &
	local pid=$! t0 seen=""
	t0=$(date +%s)
	tail -n +1 -f "$log" --pid=$pid | grep --line-buffered -E '^(USBVM-|SLOWPC|=== RUN|--- |PASS|FAIL|ok|panic|    |qemu)' &
	while kill -0 $pid 2>/dev/null; do
		if [ -z "$seen" ] && grep -q '^USBVM-BOOT' "$log"; then seen=1; fi
		# A kernel BUG leaves locks held: nothing after it is worth waiting for.
		if grep -q 'kernel BUG at\|BUG: soft lockup' "$log"; then
			echo "== the VM's kernel hit a BUG (console in $log):"
			grep -A3 'kernel BUG at\|BUG: soft lockup' "$log" | head -4
			grep -m3 'printer_write\|printer_read\|usblp' "$log" || true
			[ -s "$OUT/qemu.pid" ] && kill "$(cat "$OUT/qemu.pid")" 2>/dev/null || true
			break
		fi
		if [ "$accel" = kvm ] && [ -z "$seen" ] && [ $(($(date +%s) - t0)) -ge 30 ]; then
			echo "== KVM: no boot line within 30 s; stopping it"
			[ -s "$OUT/qemu.pid" ] && kill "$(cat "$OUT/qemu.pid")" 2>/dev/null || true
		fi
		sleep 1
	done
	wait $pid 2>/dev/null || true
	sleep 0.5
}
boot_start=$(date +%s)
accel=tcg
if [ -w /dev/kvm ] && [ -z "${USBVM_NO_KVM:-}" ]; then
	echo "== boot qemu with KVM (at most $TIMEOUT s)"
	boot kvm "$TIMEOUT"
	if grep -q '^USBVM-BOOT' "$log"; then
		accel=kvm
	else
		echo "== KVM cannot run this kernel here ($(grep -m1 -i 'error\|fail' "$log" || echo 'no output')): TCG instead"
	fi
fi
if [ "$accel" = tcg ]; then
	echo "== boot qemu under TCG (${USBVM_SMP:-1} vCPU, ${USBVM_MEM:-1024} MiB; at most $TIMEOUT s)"
	boot tcg "$TIMEOUT"
fi
rc=0
boot=$boot_start
took=$(($(date +%s) - boot))
code=$(sed -n 's/^USBVM-EXIT \([0-9]*\).*/\1/p' "$log" | tail -1)
if [ -z "$code" ]; then
	echo "FAIL make test-usb: the VM did not finish within $TIMEOUT s (it ran $took s; console in $log)"
	exit 1
fi
passes=$(grep -cE '^ +--- PASS' "$log" || true)
fails=$(grep -cE '^ +--- FAIL' "$log" || true)
echo "== make test-usb: $passes passed, $fails failed; VM $took s (accel $accel), all $(($(date +%s) - start)) s"
[ "$code" = 0 ] || { echo "FAIL make test-usb (checks exit $code; console in $log)"; exit 1; }
echo "PASS make test-usb"
