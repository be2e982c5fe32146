// Package escpos speaks ESC/POS, the command language of receipt printers,
// for printgate's drivers and lanes. It has four parts:
//
//   - the encoder (Encoder and the status query builders): byte-exact
//     commands with argument checks, so invalid input becomes an error instead
//     of garbage on paper;
//   - the ticket renderer (ParseDocument, Render, Preview, Profile): turns the
//     ticket document of PROTOCOL.md §4 into bytes for one printer profile
//     (paper width, code page, GB18030 for Chinese printers), wrapping text by
//     display columns and stripping control bytes from every piece of
//     document text so an order note can never open the cash drawer or cut
//     the paper. Preview draws the same layout as text, so what a manager sees
//     is what the printer prints;
//   - status decoding: the answers to DLE EOT, GS r, GS I and GS ( H turned
//     into printer states (online, cover open, paper end, error);
//   - the session and completion barrier: after a job, ask the printer for the
//     strongest proof it can give (printed, consumed or delivered, see
//     docs/ESCPOS.md §2) and report exactly that, never more. Device probes the
//     printer again when what it learned may be stale and says when the
//     proof weakens (DeviceOptions.OnDowngrade), so the gate never weakens
//     silently.
//
// Helpers for the agent's intake and start-up: CheckDocument (text the
// printer's encoding cannot print), CompareProfiles (what a backup printer
// cannot do) and JobTimeout (a job's time bound on a serial line).
//
// Nothing here opens connections by itself; transports live elsewhere in
// drivers and hand this package an io.ReadWriter.
package escpos
