package store

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel/render"
)

// TestSaleDictFrozen: stored change-feed blocks are encoded against
// eventDictText (which ends with saleDictText), so neither may change
// without a Schema bump (then re-pin these hashes).
func TestSaleDictFrozen(t *testing.T) {
	sum := sha256.Sum256([]byte(saleDictText))
	assert.Equal(t, "73c6c5d7069ffe4b3c6ec1166b2992e90c44e77129f5fa3392e9ea364b1f8a84", hex.EncodeToString(sum[:]), "saleDictText changed: bump Schema and re-pin")
	assert.Equal(t, "23", Schema)
	require.NotNil(t, eventEncoder(), "the event dictionary is usable")
	sum = sha256.Sum256([]byte(eventDictText))
	assert.Equal(t, "69e0cc3754aa8c69367faa568879e2bb8a0609c6d943f374fa8e166b43cb3351", hex.EncodeToString(sum[:]), "eventDictText changed: bump Schema and re-pin")
}

// TestEventBodyPacked: an event comes back from a block as the record it
// was stored as, alone in well under the size of its JSON.
func TestEventBodyPacked(t *testing.T) {
	e := sampleEvent()
	rec := encodeEvent(nil, sampleCID, &e)
	_, body, err := renderEvent(sampleCID, rec, nil)
	require.NoError(t, err)
	packed := newBlock(3, [][]byte{rec})
	t.Logf("%d bytes of JSON, a record of %d, a block of %d", len(body), len(rec), len(packed))
	assert.Less(t, len(packed), len(body)/4)
	start, evs, err := decodeBlock(packed)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), start)
	require.Len(t, evs, 1)
	assert.Equal(t, storedEvent{typ: render.EventTypeBit(render.EventListingAdded), rec: rec}, evs[0])
}
