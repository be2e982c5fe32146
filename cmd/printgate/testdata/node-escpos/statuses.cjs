// Drives a printgate raw port with the unmodified npm library
// @node-escpos/core, as a POS built on it does: getStatuses() writes
// DLE EOT 1, 2, 3 and 4 and takes the first chunk it reads as the four
// answers (fewer than 4 bytes and it rejects), then a ticket is printed on
// the same connection. The last line of output is a JSON summary.
// Usage: node statuses.cjs HOST PORT TEXT
const { Printer } = require('@node-escpos/core');
const Network = require('@node-escpos/network-adapter');

const [host, port, text] = process.argv.slice(2);
const device = new Network(host, Number(port), 10000);
device.open(async (err) => {
  if (err) {
    console.log(JSON.stringify({ error: 'connect: ' + err.message }));
    process.exit(1);
  }
  const printer = new Printer(device, { encoding: 'GB18030' });
  let statuses;
  try {
    statuses = await printer.getStatuses();
  } catch (e) {
    console.log(JSON.stringify({ error: 'getStatuses rejected: its first read held fewer than 4 status bytes' }));
    process.exit(2);
  }
  await printer.align('ct').text(text).cut().close();
  console.log(JSON.stringify({ statuses: statuses.map((s) => s.toJSON().byte) }));
});
