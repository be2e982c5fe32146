// A POS's whole job against printgate, with a client generated from the
// agent's own OpenAPI description (GET /api/v1/openapi.json): submit a
// ticket, wait until it is PRINTED, reprint it, wait for the reprint.
//
//   PRINTGATE_URL=http://127.0.0.1:8631 PRINTGATE_TOKEN=... PRINTGATE_PRINTER=kitchen \
//     npm run generate && npm run build && npm start
import createClient from "openapi-fetch";
import type { components, paths } from "./printgate.js";

type Task = components["schemas"]["Task"];

const baseUrl = process.env.PRINTGATE_URL ?? "http://127.0.0.1:8631";
const token = process.env.PRINTGATE_TOKEN ?? "";
const printer = process.env.PRINTGATE_PRINTER ?? "kitchen";
// The task_no is the idempotency key: one per ticket, the same on every
// resend of it, so a retry never prints twice.
const taskNo = process.env.PRINTGATE_TASK_NO ?? `EXAMPLE-${Date.now()}_RECEIPT_v1`;

if (token === "") {
  console.error("set PRINTGATE_TOKEN to the agent's api_token");
  process.exit(2);
}

const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// submit sends the ticket; on 429, 503 or 507 it waits Retry-After seconds
// and resends the SAME task_no, as PROTOCOL.md §3 asks.
async function submit(): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const { data, error, response } = await client.POST("/api/v1/tasks", {
      body: {
        task_no: taskNo,
        printer,
        priority: "normal",
        document: {
          lines: [
            { text: "printgate example", align: "center", size: "2x2", bold: true },
            { text: "Kung pao chicken", right: "x2" },
            { rule: "-" },
            { qr: `https://example.com/o/${taskNo}`, size: 6 },
            { cut: "partial" },
          ],
        },
        timeout: "60s",
      },
    });
    if (data) {
      console.log(`submitted ${data.task_no}: ${data.state}${data.duplicate ? " (already known; not printed again)" : ""}`);
      return;
    }
    const retryAfter = Number(response.headers.get("Retry-After") ?? "0");
    if ([429, 503, 507].includes(response.status) && retryAfter > 0 && attempt < 5) {
      console.log(`agent answered ${response.status} ${error?.error.code}; resending ${taskNo} in ${retryAfter}s`);
      await sleep(retryAfter * 1000);
      continue;
    }
    throw new Error(`submit ${taskNo}: ${response.status} ${error?.error.code}: ${error?.error.message}`);
  }
}

const failed = new Set<Task["state"]>(["TIMED_OUT", "FAILED", "CANCELED"]);

// waitPrinted polls the task until the printer confirmed it, or it ended
// another way (then a person must be told).
async function waitPrinted(no: string): Promise<Task> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { data, error, response } = await client.GET("/api/v1/tasks/{task_no}", { params: { path: { task_no: no } } });
    if (!data) {
      throw new Error(`task ${no}: ${response.status} ${error?.error.code}: ${error?.error.message}`);
    }
    if (data.state === "PRINTED") {
      return data;
    }
    if (failed.has(data.state)) {
      throw new Error(`task ${no} ended ${data.state} (${data.reason}): ${data.message ?? ""}`);
    }
    if (Date.now() > deadline) {
      throw new Error(`task ${no} still ${data.state} after 60s`);
    }
    await sleep(100);
  }
}

async function reprint(no: string): Promise<Task> {
  const { data, error, response } = await client.POST("/api/v1/tasks/{task_no}/reprint", { params: { path: { task_no: no } } });
  if (!data) {
    throw new Error(`reprint ${no}: ${response.status} ${error?.error.code}: ${error?.error.message}`);
  }
  console.log(`reprint of ${no} accepted as ${data.task_no}`);
  return data;
}

await submit();
const printed = await waitPrinted(taskNo);
console.log(`${printed.task_no} PRINTED on ${printed.target || printed.printer} (${printed.confirmation})`);
const again = await reprint(taskNo);
const reprinted = await waitPrinted(again.task_no);
console.log(`${reprinted.task_no} PRINTED on ${reprinted.target || reprinted.printer} (${reprinted.confirmation}), a reprint of ${reprinted.reprint_of}`);
console.log(JSON.stringify({ printed: printed.task_no, reprint: reprinted.task_no, reprint_of: reprinted.reprint_of }));
