// Writes the published code-page data printgate's decoder tables are checked
// against (drivers/escpos/decode/testdata/codepages): for each printer
// maker's ESC t numbering the encoder knows (epson, xprinter), which table
// each number selects, and for every such table the character each byte
// 0x80..0xFF prints. The source is @point-of-sale/codepage-encoder, the
// tables @point-of-sale/receipt-printer-encoder (pinned in package.json)
// encodes with; the numbering is read back from the ESC t bytes the encoder
// sends, through its public API only.
import { writeFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ReceiptPrinterEncoder from '@point-of-sale/receipt-printer-encoder';
import CodepageEncoder from '@point-of-sale/codepage-encoder';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', '..', 'drivers', 'escpos', 'decode', 'testdata', 'codepages');
mkdirSync(out, { recursive: true });

const vendors = ['epson', 'xprinter'];
const tables = new Set();
const lines = ['# vendor ESC-t-number table (from @point-of-sale/receipt-printer-encoder)'];
for (const vendor of vendors) {
  for (const cp of CodepageEncoder.getEncodings()) {
    let bytes;
    try {
      const e = new ReceiptPrinterEncoder({ language: 'esc-pos', codepageMapping: vendor });
      bytes = e.codepage(cp).text('A').encode();
    } catch {
      continue; // not in this maker's numbering
    }
    // ESC t n, or none when cp is the power-on table 0.
    let n = 0;
    for (let i = 0; i + 2 < bytes.length; i++) {
      if (bytes[i] === 0x1b && bytes[i + 1] === 0x74) n = bytes[i + 2];
    }
    lines.push(`${vendor} ${n} ${cp}`);
    tables.add(cp);
  }
}
writeFileSync(join(out, 'numbering.txt'), lines.join('\n') + '\n');

// One file per table: "0xNN U+XXXX" for each byte that prints something,
// "0xNN -" for a byte the table leaves undefined.
for (const cp of tables) {
  const points = CodepageEncoder.getCodepoints(cp, true);
  const rows = [`# ${cp}: ${CodepageEncoder.getEncoding(cp).name} (@point-of-sale/codepage-encoder)`];
  for (let b = 0x80; b <= 0xff; b++) {
    const u = points[b];
    const hex = b.toString(16).toUpperCase().padStart(2, '0');
    rows.push(u === undefined || u === null ? `0x${hex} -` : `0x${hex} U+${u.toString(16).toUpperCase().padStart(4, '0')}`);
  }
  writeFileSync(join(out, cp.replace('/', '_') + '.txt'), rows.join('\n') + '\n');
}
const pkg = JSON.parse(readFileSync(join(here, 'node_modules', '@point-of-sale', 'codepage-encoder', 'package.json')));
writeFileSync(join(out, 'VERSION'), `tables: @point-of-sale/codepage-encoder ${pkg.version} (npm)\nnumbering: @point-of-sale/receipt-printer-encoder 4.0.1 (npm)\ngenerator: scripts/gen-escpos-corpus/codepages.mjs\n`);
