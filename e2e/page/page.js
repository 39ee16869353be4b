// Runs in Chromium on an origin other than the API's (make e2e): every
// endpoint read cross-origin, SPEC §5's preflight rules, error bodies and a
// 429 whose Retry-After the page can read. Results go to window.__results.
const api = new URL(location.href).searchParams.get("api");
const results = [];
function check(ok, what, detail) {
  results.push({ ok: !!ok, what, detail: detail === undefined ? "" : String(detail) });
}

async function get(path, init) {
  const r = await fetch(api + path, init);
  return { status: r.status, headers: r.headers, body: await r.json() };
}

async function run() {
  const cols = await get("/v1/collections?limit=20&sort=floor");
  check(cols.status === 200 && cols.body.data.length > 0, "collections readable", cols.status);
  check(cols.headers.get("etag"), "ETag readable (Access-Control-Expose-Headers)", cols.headers.get("etag"));
  check(cols.headers.get("cache-control"), "Cache-Control readable", cols.headers.get("cache-control"));

  let id = null, item = null, mint = null;
  for (const c of cols.body.data) {
    const l = await get(`/v1/collections/${encodeURIComponent(c.id)}/listings?limit=3`);
    check(l.status === 200, "listings readable", l.status);
    if (l.body.data.length > 0) { id = c.id; item = l.body.data[0]; mint = c.contractAddress; break; }
  }
  check(id, "a collection with listings");
  const detail = await get(`/v1/collections/${encodeURIComponent(id)}`);
  check(detail.status === 200 && detail.body.data.id === id, "detail readable", detail.status);
  const floor = await get(`/v1/collections/${encodeURIComponent(id)}/floor`);
  check(floor.status === 200 && floor.body.data.aggregated === true, "floor readable", floor.status);
  const sales = await get(`/v1/collections/${encodeURIComponent(id)}/sales?limit=3`);
  check(sales.status === 200 && Array.isArray(sales.body.data), "sales readable", sales.status);
  const tokenPath = item.chain === "solana"
    ? `/v1/tokens/solana/${mint}/${item.mint}`
    : `/v1/tokens/${item.chain}/${item.contractAddress}/${item.tokenId}`;
  const token = await get(tokenPath);
  check(token.status === 200 && token.body.data.collectionId === id, "token readable", token.status);
  const index = await get("/v1");
  check(index.status === 200 && index.body.data, "index readable", index.status);
  const doc = await get("/v1/openapi.json");
  check(doc.status === 200 && doc.body.openapi, "openapi readable", doc.status);

  // Preflight: Content-Type is allowed (a non-safelisted value forces a
  // preflight), a custom header is refused.
  const ct = await get(`/v1/collections/${encodeURIComponent(id)}/floor`, { headers: { "Content-Type": "application/json" } });
  check(ct.status === 200, "preflight passes for Content-Type", ct.status);
  let refused = false;
  try {
    await fetch(api + "/v1/collections?limit=2", { headers: { "X-Custom-Header": "1" } });
  } catch (e) {
    refused = e instanceof TypeError;
  }
  check(refused, "preflight fails for a custom header");

  // Error bodies are readable cross-origin.
  const nf = await get("/v1/collections/browser-no-such-collection");
  check(nf.status === 404 && nf.body.error.code === "not_found", "404 body readable", JSON.stringify(nf.body));
  const br = await get("/v1/collections?limit=101");
  check(br.status === 400 && br.body.error.code === "bad_request", "400 body readable", JSON.stringify(br.body));

  // Spend the list bucket (distinct URLs: the edge caches 200s) until 429.
  let limited = null;
  for (let i = 1; i <= 100 && !limited; i++) {
    const r = await fetch(api + `/v1/collections/${encodeURIComponent(id)}/sales?limit=${i}&page=browser`);
    if (r.status === 429) limited = { r, body: await r.json() };
  }
  check(limited, "a 429 within 100 requests");
  if (limited) {
    const ra = limited.r.headers.get("retry-after");
    check(ra !== null && /^[0-9]+$/.test(ra) && Number(ra) >= 1 && Number(ra) <= 60, "Retry-After readable", ra);
    check(limited.r.headers.get("x-ratelimit-limit"), "X-RateLimit-Limit readable", limited.r.headers.get("x-ratelimit-limit"));
    check(limited.r.headers.get("x-ratelimit-remaining") === "0", "X-RateLimit-Remaining readable", limited.r.headers.get("x-ratelimit-remaining"));
    check(/^\d{4}-\d\d-\d\dT/.test(limited.r.headers.get("x-ratelimit-reset") || ""), "X-RateLimit-Reset readable", limited.r.headers.get("x-ratelimit-reset"));
    check(limited.body.error.code === "rate_limited", "429 body readable", JSON.stringify(limited.body));
  }
}

run().catch((e) => check(false, "page threw", e && e.stack)).finally(() => { window.__results = results; });
