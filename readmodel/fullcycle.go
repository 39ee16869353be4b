package readmodel

import "strings"

// FullCycleEnd ends the ID of the message that closes a full ingest cycle:
// one that republished every subject (the first cycle of an ingest
// process on an empty, unreadable or damaged state stream, or one asked
// for with POST /admin/ingest?full=true). Ingest
// sends it last, after every other message of the cycle, as a repeat of
// the collection index's source-wide status (so applying it changes
// nothing). A projector that skipped messages lost from the bus knows its
// views are whole again once it applied this message: everything the
// damage took has been published again before it.
const FullCycleEnd = "/full-cycle-end"

// IsFullCycleEnd reports whether id is the ID of a full cycle's last
// message.
func IsFullCycleEnd(id string) bool { return strings.HasSuffix(id, FullCycleEnd) }
