// A Standard Webhooks receiver for hub/webhook's tests, built with the
// unmodified npm package standardwebhooks: every POST is verified with
// new Webhook(secret).verify(body, headers). It listens on 127.0.0.1 (port
// 0), prints {"port": N} on its first line, and serves:
//   POST /hook            a delivery: 204 when verified, 400 when not,
//                         503 while down
//   POST /control/down    answer 503 to deliveries from now on
//   POST /control/up      verify and accept them again
//   GET  /control/state   {"verified": [{id, body}], "unverified": N, "refused": N}
"use strict";
const http = require("http");
const { Webhook } = require("standardwebhooks");

const secret = process.env.WEBHOOK_SECRET;
if (!secret) {
  console.error("WEBHOOK_SECRET is not set");
  process.exit(2);
}
const wh = new Webhook(secret);
const state = { verified: [], unverified: 0, refused: 0, errors: [] };
let down = false;

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    if (req.method === "POST" && req.url === "/control/down") {
      down = true;
      res.writeHead(204).end();
      return;
    }
    if (req.method === "POST" && req.url === "/control/up") {
      down = false;
      res.writeHead(204).end();
      return;
    }
    if (req.method === "GET" && req.url === "/control/state") {
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(state));
      return;
    }
    if (req.method !== "POST" || req.url !== "/hook") {
      res.writeHead(404).end();
      return;
    }
    if (down) {
      state.refused++;
      res.writeHead(503).end();
      return;
    }
    try {
      const payload = wh.verify(body, req.headers);
      state.verified.push({ id: req.headers["webhook-id"], body: payload });
      res.writeHead(204).end();
    } catch (e) {
      state.unverified++;
      state.errors.push(String(e && e.message));
      res.writeHead(400).end();
    }
  });
});
server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
