package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// tokenViews are a token page as the projector renders it (timed: an
// overlay listing's timestamp is the slot) and a minimal one.
func tokenViews() []render.TokenView {
	head := []byte(`{"data":{"chain":"ethereum","contractAddress":"0xd625d0e38643073ead8fa9492eb6b079124adeaf","tokenId":"1","mint":null,"collectionId":"ethereum_0xd625d0e38643073ead8fa9492eb6b079124adeaf","name":"Rusty Punks #1","image":"https://img.sim.marketd.test/1/0.png","rarity":{"rank":2},"owner":{"address":"0xbd881d8a7d88b16b3ac82f257ec94b5aaf905f2b","kind":"wallet","label":null},"listing":{"chain":"ethereum","contractAddress":"0xd625d0e38643073ead8fa9492eb6b079124adeaf","tokenId":"1","mint":null,"collectionId":"ethereum_0xd625d0e38643073ead8fa9492eb6b079124adeaf","price":{"raw":"37454417000883752007","decimal":37.45441700088375,"currency":"ETH","usd":112750.53},"seller":"0xbd881d8a7d88b16b3ac82f257ec94b5aaf905f2b","buyer":null,"marketplace":"NATIVE","status":"active","expiresAt":"2026-12-23T08:22:27.000Z","timestamp":"`)
	tail := []byte(`","orderId":"ethereum_0xd625d0e38643073ead8fa9492eb6b079124adeaf_1_1795422147000","tx":null},"lastSale":null}}`)
	return []render.TokenView{
		{Version: 7, Body: render.TimedBody{Timed: true, Head: head, Tail: tail}},
		{Version: 9, Body: render.TimedBody{Head: []byte(`{"data":{"chain":"ethereum","tokenId":"2","listing":null}}`)}},
	}
}

// TestTokenViewsStoredCompressed: a token view is stored as an S2 block
// and read back byte for byte, with its deadline readable without
// decoding; a damaged block is an error, never a panic.
func TestTokenViewsStoredCompressed(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	views := tokenViews()
	deadline := time.UnixMilli(1795422147000)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		for i, v := range views {
			tx.PutToken(fmt.Sprintf("ethereum|0xd625|%d", i), v, deadline)
		}
		return nil
	}))
	for i, want := range views {
		t.Run(fmt.Sprintf("view %d", i), func(t *testing.T) {
			got, err := s.Token(ctx, readmodel.Ethereum, "0xd625", fmt.Sprint(i))
			require.NoError(t, err)
			assert.Equal(t, want.Version, got.Version)
			assert.Equal(t, want.Body, got.Body)

			raw, ok, err := s.get(key(pToken, fmt.Sprintf("ethereum|0xd625|%d", i)))
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, unixMs(deadline), tokenDeadline(raw))
			plain := &enc{}
			plain.timed(want.Body)
			if len(plain.b) > 500 {
				assert.Less(t, len(raw), len(plain.b)/2, "a rendered token page is stored compressed")
			}
		})
	}

	good := encodeToken(views[0], 99)
	damaged := map[string][]byte{
		"empty":            nil,
		"header only":      good[:8],
		"truncated block":  good[:len(good)-10],
		"zeroed tail":      append(append([]byte(nil), good[:len(good)-40]...), make([]byte, 40)...),
		"not a block":      append(append([]byte(nil), good[:10]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f),
		"extra after body": encodeTokenWithTrailer(views[1]),
		"claims 1 GiB":     binary.AppendUvarint(append([]byte(nil), good[:10]...), 1<<30),
	}
	for name, b := range damaged {
		t.Run(name, func(t *testing.T) {
			assert.NotPanics(t, func() {
				_, ok := decodeToken(b)
				assert.False(t, ok)
				_, ok = tokenContent(b)
				assert.False(t, ok)
			})
		})
	}
}

// encodeTokenWithTrailer is encodeToken with a byte after the body inside
// the block.
func encodeTokenWithTrailer(v render.TokenView) []byte {
	raw := &enc{}
	raw.timed(v.Body)
	raw.b = append(raw.b, 0)
	e := newEnc(v.Version)
	e.i(0)
	return append(e.b, s2Encode(raw.b)...)
}

// TestDigestOfTokenViewsIsTheirContent: token views are hashed
// uncompressed, so the digest is the one schema 6 (uncompressed views)
// gave for the same views: nodes compare content, not the compressor's
// output.
func TestDigestOfTokenViewsIsTheirContent(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		for i, v := range tokenViews() {
			tx.PutToken(fmt.Sprintf("ethereum|0xd625|%d", i), v, time.UnixMilli(int64(1795422147000*i)))
		}
		return nil
	}))
	d, err := s.Digest(ctx)
	require.NoError(t, err)
	// Computed by the schema 6 code (84db416) for the same two views.
	assert.Equal(t, "b0551bd2ac6da225eb7088bc2eaaac48d791122f08256ab2d991e57e03126e0b", d)
}

func s2Encode(b []byte) []byte { return tokenDict().Encode(nil, b) }
