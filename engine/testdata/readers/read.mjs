// Reads destination strings (a JSON array on stdin) as Node reads them:
// WHATWG URL for every string, and for a mailto URI the recipients a mail
// client finds (the path percent-decoded and split on ',', plus the to,
// cc and bcc fields URLSearchParams decodes). One JSON line per string.
import { readFileSync } from "node:fs";

const values = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const v of values) {
  const r = { url: null, mail: null };
  try {
    const u = new URL(v);
    r.url = { scheme: u.protocol.replace(/:$/, ""), host: u.hostname, port: u.port, path: u.pathname, user: u.username !== "" || u.password !== "" };
    if (u.protocol === "mailto:") {
      const parts = [];
      try {
        parts.push(...decodeURIComponent(u.pathname).split(","));
        for (const [k, val] of u.searchParams) {
          if (["to", "cc", "bcc"].includes(k.toLowerCase())) parts.push(...val.split(","));
        }
        r.mail = parts.map((p) => p.trim()).filter((p) => p !== "").map((p) => {
          const m = p.match(/<([^>]*)>/);
          return m ? m[1] : p;
        });
      } catch (e) {
        r.mail = null;
      }
    }
  } catch (e) {
    r.url = null;
  }
  out.push(JSON.stringify(r));
}
process.stdout.write(out.join("\n") + "\n");
