// Package printertest is an in-process ESC/POS receipt printer for tests and
// demos: it listens on 127.0.0.1 (or a Linux pty, for serial code), decodes
// the byte stream into paper (tickets split at cuts, text decoded from the
// code page or GB18030, QR and barcode contents, images, drawer kicks),
// answers status queries like a chosen model (Epson, a Chinese clone, or a
// one-way printer), and injects the faults real printers have: offline,
// paper out, cover open, a stalled or dropped link, slow printing and power
// cycles, switched by method calls or a seeded random schedule.
//
// It follows docs/ESCPOS.md §1: real-time commands (DLE EOT) are answered the moment
// they arrive, even inside other data; in-order commands (GS r, GS ( H, GS I)
// only when processing reaches them and only while the printer is running,
// so a printer stopped at paper end keeps the job buffered and answers after
// the paper returns. Like a real printer it does not see connection
// boundaries: a command cut off by a dropped connection takes its missing
// arguments from the next connection's bytes, until a power cycle. ESC = n
// with bit 0 clear disables it as it does an Epson: until ESC = n with bit 0
// set it prints, cuts and answers nothing in order (DLE EOT is still
// answered), so a test sees a job that left the printer disabled.
package printertest
