#!/usr/bin/env bash
# make bench-slowpc (docs/BENCHMARKS.md "Slow store PC"): the
# real printgate on a ten-year-old store PC, in the VM of make test-usb.
# It boots that VM (scripts/usbvm/test-usb.sh with USBVM_BENCH=1) with the
# spool on a fresh ext4 virtual disk, in two settings:
#   slow: 1 vCPU, 512 MiB, the disk throttled by qemu like an HDD
#         (100 IOPS in all, 2 MiB/s of writes);
#   fast: 2 vCPUs, 2048 MiB, the same disk unthrottled;
# each BENCH_RUNS times (default 2; the machine is shared, figures are
# noisy), and runs scripts/usbvm/vmtest's TestSlowPC in it: accept p50/p99 at
# 10 and 100 tasks/s, a 1,000-ticket burst, 8 printers at one ticket a
# second, and a restart with 20,000 spooled. It prints one table (a column
# per run) and keeps each run's console in .usbvm/slowpc-<setting>-<run>.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${USBVM_DIR:-$PWD/.usbvm}
RUNS=${BENCH_RUNS:-2}
SETTINGS=${BENCH_SETTINGS:-slow fast}
mkdir -p "$OUT"
cols=()
for run in $(seq 1 "$RUNS"); do
	for s in $SETTINGS; do
		case $s in
		slow) smp=1 mem=512 throttle="throttling.iops-total=100,throttling.bps-write=2097152" ;;
		fast) smp=2 mem=2048 throttle="" ;;
		*) echo "BENCH_SETTINGS: $s is not slow or fast" >&2; exit 2 ;;
		esac
		echo "== bench-slowpc: $s, run $run ($smp vCPU, $mem MiB, disk ${throttle:-unthrottled}); load $(cut -d' ' -f1-3 /proc/loadavg)"
		USBVM_BENCH=1 USBVM_SMP=$smp USBVM_MEM=$mem USBVM_DISK_THROTTLE=$throttle \
			USBVM_TIMEOUT=${USBVM_TIMEOUT:-2400} ./scripts/usbvm/test-usb.sh || echo "== $s run $run failed (console in $OUT/slowpc-$s-$run.log)"
		cp "$OUT/console.log" "$OUT/slowpc-$s-$run.log"
		cols+=("$s-$run")
	done
done
# One table: a row per figure, a column per run.
{
	printf '| figure |'
	for c in "${cols[@]}"; do printf ' %s |' "$c"; done
	printf '\n| --- |'
	for c in "${cols[@]}"; do printf ' --- |'; done
	printf '\n'
	names=$(for c in "${cols[@]}"; do sed -n 's/^SLOWPC \([^ ]*\) .*/\1/p' "$OUT/slowpc-$c.log"; done | awk '!seen[$0]++')
	for n in $names; do
		printf '| %s |' "$n"
		for c in "${cols[@]}"; do
			v=$(awk -v n="$n" '$1 == "SLOWPC" && $2 == n {print $3 " " $4; exit}' "$OUT/slowpc-$c.log")
			printf ' %s |' "${v:-–}"
		done
		printf '\n'
	done
} | tee "$OUT/slowpc.md"
