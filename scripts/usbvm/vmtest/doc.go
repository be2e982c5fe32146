// Package vmtest holds the checks of make test-usb: the real
// printgate binary against a USB printer on the real Linux USB stack, inside
// the VM that scripts/usbvm/test-usb.sh builds and boots. The host side is
// usblp (/dev/usb/lp0) on dummy_hcd; the printer is the project's emulator
// (drivers/printertest) on the gadget side (/dev/g_printer0), in this test
// process, so a check switches its faults directly. Outside the VM the
// tests skip.
package vmtest
