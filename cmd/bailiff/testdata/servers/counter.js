// A minimal MCP server over stdio whose one tool, pay, appends a line to
// $COUNTER_FILE for every call it receives: a test counts how often a
// call reached the server, across restarts of the gateway in front.
const readline = require("readline");
const fs = require("fs");
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const tools = [{ name: "pay", description: "pays someone", inputSchema: { type: "object", properties: { to: { type: "string" } } } }];
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined || m.method === undefined) return;
  switch (m.method) {
    case "initialize":
      return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "counter", version: "1" } } });
    case "tools/list":
      return send({ jsonrpc: "2.0", id: m.id, result: { tools } });
    case "tools/call":
      fs.appendFileSync(process.env.COUNTER_FILE, JSON.stringify(m.params.arguments) + "\n");
      return send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: "paid" }] } });
    default:
      return send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "method not found" } });
  }
});
