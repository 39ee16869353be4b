package store

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSaleDictFrozen: stored change-feed blocks are encoded against
// eventDictText (which ends with saleDictText), so neither may change
// without a Schema bump (then re-pin these hashes).
func TestSaleDictFrozen(t *testing.T) {
	sum := sha256.Sum256([]byte(saleDictText))
	assert.Equal(t, "73c6c5d7069ffe4b3c6ec1166b2992e90c44e77129f5fa3392e9ea364b1f8a84", hex.EncodeToString(sum[:]), "saleDictText changed: bump Schema and re-pin")
	assert.Equal(t, "16", Schema)
	require.NotNil(t, eventEncoder(), "the event dictionary is usable")
	sum = sha256.Sum256([]byte(eventDictText))
	assert.Equal(t, "69e0cc3754aa8c69367faa568879e2bb8a0609c6d943f374fa8e166b43cb3351", hex.EncodeToString(sum[:]), "eventDictText changed: bump Schema and re-pin")
}

// TestEventBodyPacked: an event body comes back byte for byte from a
// block, alone in well under its size.
func TestEventBodyPacked(t *testing.T) {
	body := []byte(`{"eventId":"s85651-0-7mivac","type":"listing_added","collectionId":"ink_0x00225e7b3f15f74306a0b3b4ef6352ab18ed39a8","observedAt":"2026-11-25T07:45:39.656Z","upstreamAt":"2026-11-25T07:24:31.000Z","reason":null,"listing":{"chain":"ink","contractAddress":"0x00225e7b3f15f74306a0b3b4ef6352ab18ed39a8","tokenId":"720065984443128398297674054995370039180168182140779004769228702","mint":null,"collectionId":"ink_0x00225e7b3f15f74306a0b3b4ef6352ab18ed39a8","price":{"raw":"1509102000790101446","decimal":1.5091020007901015,"currency":"ETH","usd":null},"seller":"0x93066daaaef549e37277f48e18b57c0ffffaedcd","buyer":null,"marketplace":"NATIVE","status":"active","expiresAt":"2026-11-25T09:06:31.000Z","timestamp":"2026-11-25T07:24:31.000Z","orderId":"ink_0x00225e7b3f15f74306a0b3b4ef6352ab18ed39a8_720065984443128398297674054995370039180168182140779004769228702_1795591471000","tx":null},"previousPrice":null,"sale":null,"floor":null}`)
	packed := newBlock(3, []NewEvent{{Type: 4, ID: "s85651-0-7mivac", Body: body}})
	t.Logf("%d -> %d bytes", len(body), len(packed))
	assert.Less(t, len(packed), len(body)/2)
	start, evs, err := decodeBlock(packed)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), start)
	require.Len(t, evs, 1)
	assert.Equal(t, storedEvent{typ: 4, id: "s85651-0-7mivac", body: body}, evs[0])
}
