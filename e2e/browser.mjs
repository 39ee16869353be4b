// make e2e's browser check: Debian's Chromium, driven by playwright-core,
// opens page/index.html from its own origin (a static server on another
// loopback port) and the page reads the API through the edge. Every API
// response the browser receives is printed as a JSON line (validated by
// the Go half); the page's checks go to stderr and the exit status.
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { chromium } from "playwright-core";

const api = process.env.E2E_EDGE;
if (!api) throw new Error("E2E_EDGE is not set");
const dir = new URL("./page/", import.meta.url);
const files = { "/": ["index.html", "text/html"], "/page.js": ["page.js", "text/javascript"] };
const server = createServer((req, res) => {
  const f = files[new URL(req.url, "http://x").pathname];
  if (!f) { res.writeHead(404).end(); return; }
  res.writeHead(200, { "Content-Type": f[1] }).end(readFileSync(new URL(f[0], dir)));
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const origin = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu"],
});
let failed = 0;
try {
  const context = await browser.newContext(); // a fresh profile: nothing cached
  const page = await context.newPage();
  const pending = [];
  page.on("response", (resp) => {
    const req = resp.request();
    if (!resp.url().startsWith(api)) return;
    pending.push((async () => {
      let body = "";
      if (req.method() !== "OPTIONS" && resp.status() !== 304) body = await resp.text().catch(() => "");
      const headers = await resp.allHeaders();
      let status = resp.status();
      // Chromium revalidates what it cached with If-None-Match and shows the
      // page its cached 200; the wire answer was a 304 without a body (no
      // Content-Type), so that is what is recorded for validation.
      if (status === 200 && body === "" && !headers["content-type"] && headers["etag"]) status = 304;
      console.log(JSON.stringify({ method: req.method(), url: resp.url(), status, headers, body, source: "browser" }));
    })());
  });
  page.on("console", (m) => { if (m.type() === "error") console.error("page console:", m.text()); });
  await page.goto(`${origin}/?api=${encodeURIComponent(api)}`);
  await page.waitForFunction(() => window.__results !== undefined, null, { timeout: 120000 });
  const results = await page.evaluate(() => window.__results);
  await Promise.all(pending);
  for (const r of results) {
    console.error(`${r.ok ? "ok  " : "FAIL"} ${r.what}${r.detail ? " (" + r.detail + ")" : ""}`);
    if (!r.ok) failed++;
  }
  if (results.length < 20) { console.error(`FAIL only ${results.length} checks ran`); failed++; }
} finally {
  await browser.close();
  server.close();
}
process.exitCode = failed ? 1 : 0;
