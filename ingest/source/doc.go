// Package source holds the adapters for marketd's seven upstreams, one
// file each (collection_index.go, price_feed.go, order_book.go,
// indexer_mirror.go, indexer_stats.go, analytics.go, sales.go; the
// listings endpoint order-book and indexer-mirror share is listings.go),
// and the one place where their wire contracts are written down. Each
// file's poller fetches, decodes and normalizes its upstream's rows and
// yields them to the ingest cycle through the types of poll.go; it keeps
// no state between polls. The simulator
// (ingest/sim) serves exactly these contracts, so an operator can point an
// adapter at a real service, at a thin shim in front of one, or at the
// simulator.
//
// # Common rules
//
// Each upstream has its own base URL (for the simulator:
// http://simaddr/<source-name>), answers GET with a JSON object and status
// 200. A 5xx answer, a transport error, no answer within the source's
// per-request timeout, a non-JSON or wrongly shaped body, or a body larger
// than MaxBody fails the whole poll (see ErrorClass). A single malformed row
// inside a well-formed page only rejects that row: rows are JSON objects of
// the normalize.Raw* shapes (amounts may be JSON strings or numbers and are
// kept as text); a page is decoded in one pass, and only when some row does
// not fit its shape is it decoded again row by row (DecodeFlat,
// DecodeGrouped), so garbage costs the garbage page, not every page.
//
// Paged endpoints take `cursor` (opaque; omitted on the first page) and
// `limit` (rows per page; the server may round it up to keep a collection's
// rows in one page) and answer `{"items": [...], "nextCursor": "..."}`; an
// empty nextCursor ends the walk. A cursor pins the snapshot it started
// from, so a walk is consistent even if the upstream moves meanwhile.
// Grouped endpoints answer items of the form
// `{"collectionId": ID, "rows": [...]}`; one collection's rows are never split
// across pages, and a collection absent from a complete walk has no rows.
//
// # collection-index
//
//	GET /collections?cursor=&limit=
//	  items: normalize.RawCollection — id, chain, contract (EVM contract or
//	  Solana collection mint), name, slug, externalSlug, symbol, image,
//	  banner, description, tokenStandard, royaltyBps, floor (stored snapshot,
//	  base units), volumeAllTime, supply, owners, nativeLaunched, createdAt.
//
// # price-feed
//
//	GET /rates
//	  {"rates": {"SOL": 151.2, "ETH": 3012.5, ...}, "asOf": RFC3339}
//	  USD per whole unit of each currency. MATIC and APE may appear and are
//	  ignored (Polygon and ApeChain have no feed).
//
// # order-book
//
//	GET /listings?cursor=&limit=
//	  grouped items, rows: normalize.RawListing — the native order book's
//	  eligible rows: EVM signed orders (orderId "<chain>_<contract>_<tokenId>_<epochMillis>")
//	  and Solana escrow rows (orderId "<assetMint>_<epochMillis>", seller,
//	  escrow, custodyConfirmedAt, tx = escrow transfer signature).
//
// # indexer-mirror
//
//	GET /listings?cursor=&limit=
//	  grouped items, rows: normalize.RawListing — external-marketplace rows
//	  (marketplace slug, orderId = the marketplace's id, buyerTotal) plus a
//	  lagged copy of native rows (marketplace "NATIVE"; mirrored Solana ids may
//	  carry the legacy "brand:" prefix).
//	GET /tokens?since=&cursor=&limit=
//	  grouped items, rows: normalize.RawToken (owner, inCustody,
//	  custodyLabel, name, image, rarityRank, overlay listing whose orderId is
//	  the on-chain order hash, lastSale). A group holds EVERY token of a
//	  collection whose token data changed after the watermark `since`
//	  (omitted: every collection). Each page carries "watermark": pass it as
//	  `since` on the next walk.
//
// # indexer-stats
//
//	GET /stats?cursor=&limit=
//	  items: normalize.RawStats — collectionId, owners, listedCount,
//	  indexedCount.
//
// # analytics
//
//	GET /analytics?cursor=&limit=
//	  items: normalize.RawAnalytics — collectionId, floor (live, base units),
//	  volume24h, volume7d, volumeAllTime (native units), sales24h, sales7d,
//	  salesAllTime.
//
// # sales
//
//	GET /sales?cursor=&limit=
//	  An append-only feed: items: normalize.RawSale (blockTime absent on
//	  legacy rows, recordedAt = write time, orderId = the listing sold or
//	  absent, tx). nextCursor is never empty: it is the position after the
//	  last item, to be stored and passed back on the next poll; "hasMore"
//	  says whether more items are available right now.
package source
