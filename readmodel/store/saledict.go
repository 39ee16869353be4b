package store

// saleDictText is what sale items share: field names, chains,
// currencies, marketplaces and the shape of each chain's values. Sale
// items were stored as S2 blocks against it (schemas 12 to 15; since 16
// a sale is a binary record, salerec.go); it lives on as the tail of
// eventDictText, the dictionary change-feed blocks are compressed
// against, whose sale events carry the same items.
//
// saleDictText is FROZEN: every stored change-feed block is encoded
// against eventDictText, so a change makes them unreadable. Changing it
// needs a Schema bump (TestSaleDictFrozen pins its hash).
const saleDictText = `"marketplace":"opensea","status":"sold","expiresAt":null,"timestamp":"2026-01-01T00:00:00.000Z","orderId":"opensea-",` +
	`"marketplace":"magic-eden","marketplace":"tensor","marketplace":"blur","marketplace":"looks-rare","orderId":"looks-rare-",` +
	`{"chain":"apechain","contractAddress":"0x0000000000000000000000000000000000000000","tokenId":"1","mint":null,"collectionId":"apechain_0x0000000000000000000000000000000000000000","price":{"raw":"10000000000000000000","decimal":10.000000000000000,"currency":"APE","usd":null},` +
	`{"chain":"polygon","contractAddress":"0x","tokenId":"1","mint":null,"collectionId":"polygon_0x","price":{"raw":"1000000000000000000","decimal":1.000000000000000,"currency":"MATIC","usd":null},` +
	`{"chain":"abstract","contractAddress":"0x","collectionId":"abstract_0x","chain":"robinhood","contractAddress":"0x","collectionId":"robinhood_0x","chain":"ink","collectionId":"ink_0x","chain":"base","collectionId":"base_0x",` +
	`{"chain":"solana","contractAddress":null,"tokenId":null,"mint":"","collectionId":"solana_","price":{"raw":"1000000000","decimal":1.000000000,"currency":"SOL","usd":` +
	`"seller":"","buyer":"","marketplace":"NATIVE","status":"sold","expiresAt":null,"timestamp":"2026-01-01T00:00:00.000Z","orderId":null,"tx":""}` +
	`{"chain":"ethereum","contractAddress":"0x","tokenId":"1","mint":null,"collectionId":"ethereum_0x","price":{"raw":"1000000000000000000","decimal":1.000000000000000,"currency":"ETH","usd":` +
	`"seller":"0x","buyer":"0x","marketplace":"NATIVE","status":"sold","expiresAt":null,"timestamp":"2026-01-01T00:00:00.000Z","orderId":null,"tx":"0x`

// eventDictText is the dictionary change-feed blocks are compressed
// against (a raw zstd dictionary, see evblock.go): the envelope of each
// event type, then what sale and listing items share (saleDictText). An
// event repeats its collection's id and address up to three times, which
// zstd finds within the block. FROZEN like saleDictText (TestSaleDictFrozen
// pins it).
const eventDictText = `{"eventId":"s1-0-0","type":"floor_changed","collectionId":"","observedAt":"2026-01-01T00:00:00.000Z","upstreamAt":null,"reason":null,"listing":null,"previousPrice":null,"sale":null,"floor":{"raw":"1000000000000000000","decimal":1,"currency":"ETH","usd":null}}` +
	`{"eventId":"x1-0-0","type":"sale","reason":null,"listing":null,"previousPrice":null,"sale":` +
	`{"eventId":"s1-0-0","type":"listing_removed","reason":"expired","reason":"sold","reason":"cancelled","reason":"repriced","reason":"source_dropped","reason":"beyond_ceiling","type":"price_changed","previousPrice":{"raw":"` +
	`"buyer":null,"marketplace":"NATIVE","status":"active","expiresAt":"2026-01-01T00:00:00.000Z","timestamp":"2026-01-01T00:00:00.000Z","orderId":"0x","tx":null},"previousPrice":null,"sale":null,"floor":null}` +
	`{"eventId":"s1-0-0","type":"listing_added","collectionId":"","observedAt":"2026-01-01T00:00:00.000Z","upstreamAt":"2026-01-01T00:00:00.000Z","reason":null,"listing":` +
	saleDictText

// maxEventBody bounds a decoded event.
const maxEventBody = 1 << 20
