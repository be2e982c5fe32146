#!/bin/busybox sh
# /init of the USB test VM (scripts/usbvm/test-usb.sh): loads the USB
# modules, makes a configfs printer gadget on dummy_hcd's UDC (so usblp binds
# /dev/usb/lp0 on the host side and f_printer makes /dev/g_printer0 on the
# gadget side), runs the checks, prints every line on the serial console and
# powers off. The host reads "USBVM-EXIT <code>" to know the run finished.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /tmp /run && mount -t tmpfs tmpfs /tmp
# The agent and the checks talk over loopback only (-nic none: no network).
ip link set lo up
echo "USBVM-BOOT kernel $(uname -r), $(nproc) cpu"
finish() {
	echo "USBVM-EXIT $1"
	sync
	poweroff -f
}
for m in usb-common usbcore udc-core dummy_hcd configfs libcomposite usb_f_printer usblp; do
	modprobe "$m" || { echo "USBVM-FAIL modprobe $m"; finish 3; }
done
mount -t configfs none /sys/kernel/config || { echo "USBVM-FAIL mount configfs"; finish 3; }
g=/sys/kernel/config/usb_gadget/pg
mkdir -p $g/strings/0x409 $g/configs/c.1/strings/0x409 $g/functions/printer.usb0
echo 0x04b8 > $g/idVendor
echo 0x0e15 > $g/idProduct
echo 0x0100 > $g/bcdDevice
echo EPSON > $g/strings/0x409/manufacturer
echo "TM-T20II" > $g/strings/0x409/product
echo USBVM0001 > $g/strings/0x409/serialnumber
echo printer > $g/configs/c.1/strings/0x409/configuration
# f_printer drops the last 2 characters of the id (a length bug in the
# gadget function): the two trailing spaces are what it drops.
printf 'MFG:EPSON;CMD:ESC/POS;MDL:TM-T20II;CLS:PRINTER;DES:EPSON TM-T20II;  ' > $g/functions/printer.usb0/pnp_string
# More requests than the default 10: the emulator answers a burst of
# status queries at once after a stall.
echo 32 > $g/functions/printer.usb0/q_len
ln -s $g/functions/printer.usb0 $g/configs/c.1/
echo dummy_udc.0 > $g/UDC || { echo "USBVM-FAIL bind dummy_udc.0"; finish 3; }
i=0
while [ ! -e /dev/usb/lp0 ] || [ ! -e /dev/g_printer0 ]; do
	i=$((i + 1))
	[ $i -gt 100 ] && { echo "USBVM-FAIL no /dev/usb/lp0 or /dev/g_printer0 10 s after binding"; finish 3; }
	sleep 0.1
done
echo "USBVM-READY $(cat /sys/class/usbmisc/lp0/device/ieee1284_id 2>/dev/null)"
cd /tmp
if [ -n "$USBVM_BENCH" ]; then
	# make bench-slowpc: the spool on the virtual disk (/dev/vda, ext4).
	# ext4 asks for crc32c through the crypto API at mount, which would
	# need /sbin/modprobe: load it first.
	for m in virtio_pci virtio_blk crc32c_generic ext4; do
		modprobe "$m" || { echo "USBVM-FAIL modprobe $m"; finish 3; }
	done
	i=0
	while [ ! -b /dev/vda ]; do
		i=$((i + 1))
		[ $i -gt 100 ] && { echo "USBVM-FAIL no /dev/vda 10 s after loading virtio_blk"; finish 3; }
		sleep 0.1
	done
	mkdir -p /spool && mount -t ext4 /dev/vda /spool || { echo "USBVM-FAIL mount /dev/vda: $(dmesg | tail -3)"; finish 3; }
	echo "USBVM-DISK $(grep ' /spool ' /proc/mounts)"
	USBVM_GUEST=1 USBVM_SPOOL=/spool PRINTGATE_BIN=/bin/printgate /bin/vmtest.test -test.v -test.run '^TestSlowPC$' -test.timeout "${USBVM_TEST_TIMEOUT:-1200s}" 2>&1
	rc=$?
	umount /spool
	finish $rc
fi
USBVM_CABLE=${USBVM_CABLE:-port} USBVM_GADGET=$g PRINTGATE_BIN=/bin/printgate /bin/vmtest.test -test.v -test.run '^TestUSB$' -test.timeout "${USBVM_TEST_TIMEOUT:-240s}" 2>&1
finish $?
