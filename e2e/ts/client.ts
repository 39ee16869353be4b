// A TypeScript client of marketd typed by openapi-typescript's output of
// httpapi/openapi.json (generated into api.d.ts by scripts/e2e). make e2e
// type-checks it with tsc, then runs it against the node through the edge:
// it calls every endpoint and prints each response as a JSON line (the Go
// half validates them against the document); failures go to stderr and
// the exit status.
import type { paths } from "./api";

declare const process: { env: Record<string, string | undefined>; exitCode?: number };

type JSONOf<R> = R extends { content: { "application/json": infer B } } ? B : never;
type Ok<P extends keyof paths> = paths[P] extends { get: { responses: { 200: infer R } } } ? JSONOf<R> : never;
type ErrorBody = JSONOf<paths["/v1/collections/{id}"]["get"]["responses"][404]>;

const base = process.env.E2E_EDGE ?? "";
let failures = 0;

function check(ok: boolean, what: string): void {
  if (!ok) {
    failures++;
    console.error("FAIL: " + what);
  }
}

async function call<T>(path: string, want = 200): Promise<T> {
  const resp = await fetch(base + path, { headers: { Accept: "application/json" } });
  const text = await resp.text();
  const headers: Record<string, string> = {};
  resp.headers.forEach((v, k) => (headers[k] = v));
  console.log(JSON.stringify({ method: "GET", url: base + path, status: resp.status, headers, body: text, source: "typescript" }));
  check(resp.status === want, `GET ${path}: status ${resp.status}, want ${want}`);
  return JSON.parse(text) as T;
}

async function main(): Promise<void> {
  const index = await call<Ok<"/v1">>("/v1");
  check(typeof index.data === "object", "index has data");

  const doc = await call<Ok<"/v1/openapi.json">>("/v1/openapi.json");
  check(doc.openapi.startsWith("3.1"), "the document is OpenAPI 3.1");

  const cols = await call<Ok<"/v1/collections">>("/v1/collections?limit=20&sort=volume");
  check(cols.data.length > 0, "collections");
  check(typeof cols.pagination.hasMore === "boolean", "pagination.hasMore");

  let listed: Ok<"/v1/collections/{id}/listings">["data"][number] | undefined;
  let id = "";
  for (const c of cols.data) {
    const l = await call<Ok<"/v1/collections/{id}/listings">>(`/v1/collections/${encodeURIComponent(c.id)}/listings?limit=5`);
    if (l.data.length > 0) {
      listed = l.data[0];
      id = c.id;
      const price: string = listed.price.raw;
      check(/^[0-9]+$/.test(price), "price.raw is an integer string");
      break;
    }
  }
  check(listed !== undefined, "a collection with listings");
  if (!listed) return;

  const detail = await call<Ok<"/v1/collections/{id}">>(`/v1/collections/${encodeURIComponent(id)}`);
  check(detail.data.id === id, "detail id");
  check(typeof detail.data.stale === "boolean", "detail stale");

  const floor = await call<Ok<"/v1/collections/{id}/floor">>(`/v1/collections/${encodeURIComponent(id)}/floor`);
  check(floor.data.aggregated === true, "floor aggregated");

  const sales = await call<Ok<"/v1/collections/{id}/sales">>(`/v1/collections/${encodeURIComponent(id)}/sales?limit=5`);
  check(Array.isArray(sales.data), "sales data");

  const tokenPath =
    listed.chain === "solana"
      ? `/v1/tokens/solana/${detail.data.contractAddress}/${listed.mint}`
      : `/v1/tokens/${listed.chain}/${listed.contractAddress}/${listed.tokenId}`;
  const token = await call<Ok<"/v1/tokens/{chain}/{address}/{tokenId}">>(tokenPath);
  check(token.data.collectionId === id, "token collection");
  check(["wallet", "custody", "unknown"].includes(token.data.owner.kind), "owner.kind");

  const sweep = await call<Ok<"/v1/collections/{id}/sweep">>(`/v1/collections/${encodeURIComponent(id)}/sweep?count=5`);
  check(sweep.data.items.length > 0 && sweep.data.items.length <= 5, "sweep items");
  check(/^[0-9]+$/.test(sweep.data.totals.asks.raw), "sweep totals.asks.raw is an integer string");
  const badCount = await call<ErrorBody>(`/v1/collections/${encodeURIComponent(id)}/sweep?count=51`, 400);
  check(badCount.error.code === "bad_request", "sweep count out of range");

  const history = await call<Ok<"/v1/collections/{id}/floor/history">>(`/v1/collections/${encodeURIComponent(id)}/floor/history`);
  check(history.data.points.length === 168, "floor history: a week of hours");
  check(history.data.points.some((p) => p.close !== null), "floor history: the floor was observed");
  const badInterval = await call<ErrorBody>(`/v1/collections/${encodeURIComponent(id)}/floor/history?interval=2h`, 400);
  check(badInterval.error.code === "bad_request", "floor history interval");

  const market = await call<Ok<"/v1/events">>(`/v1/events?limit=5&collections=${encodeURIComponent(id)}`);
  check(market.data.length > 0, "market feed: the listed collection's events");
  check(market.data.every((e) => e.collectionId === id), "market feed: the collections filter");
  check(market.pagination.nextCursor !== null, "market feed: every page resumes");
  if (market.pagination.nextCursor !== null) {
    const next = await call<Ok<"/v1/events">>(`/v1/events?limit=5&collections=${encodeURIComponent(id)}&cursor=${encodeURIComponent(market.pagination.nextCursor)}`);
    check(next.data.every((e) => e.collectionId === id), "market feed: the next page");
  }
  const badChain = await call<ErrorBody>("/v1/events?chain=bitcoin", 400);
  check(badChain.error.code === "bad_request", "market feed chain");

  const status = await call<Ok<"/v1/status">>("/v1/status");
  check(status.data.sources.length > 0, "status sources");
  check(typeof status.data.node.ready === "boolean", "status node.ready");

  const missing = await call<ErrorBody>("/v1/collections/ts-no-such-collection", 404);
  check(missing.error.code === "not_found", "404 error body");
  const bad = await call<ErrorBody>("/v1/collections?limit=0", 400);
  check(bad.error.code === "bad_request", "400 error body");
}

main()
  .catch((e) => {
    failures++;
    console.error("FAIL:", e);
  })
  .finally(() => {
    if (failures > 0) process.exitCode = 1;
  });
