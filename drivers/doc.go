// Package drivers moves bytes between printgate and receipt printers: raw TCP
// (port 9100), serial ports, USB printers (Linux usblp, Windows USBPRINT) and
// Windows spooler queues. Every transport hides behind the small Conn
// interface so a printer lane can write a job, read status answers with a
// deadline and close, whatever the cable. Errors are *Error values that say
// what the user should check and whether retrying can help.
//
// The package also finds printers: serial ports and USB printers attached to
// this machine, and hosts answering on the raw printing port in a small
// subnet. ESC/POS encoding lives in drivers/escpos; this package knows nothing
// about the bytes it carries.
package drivers
