package ingest

import (
	"context"

	"github.com/marketd/marketd/readmodel"
)

// Lease decides which of several ingest processes polls: exactly one holds
// it at a time (readmodel/bus implements it on a JetStream key-value
// bucket). With Config.Lease set, a standby skips its scheduled cycles,
// RunCycle refuses, and every publish is fenced: a process whose lease
// lapsed publishes nothing more, and every fenceBatch messages the lease
// is confirmed with the bus, so a cycle in flight when the lease is lost
// aborts (and records nothing) instead of racing the new holder.
type Lease interface {
	// Held reports whether this process holds the lease now.
	Held() bool
	// Term counts this process's acquisitions of the lease.
	Term() uint64
	// Check confirms with the bus that this process still holds the lease.
	Check(ctx context.Context) error
}

// fenceBatch is how many publishes go between two Checks of the lease.
const fenceBatch = 256

// fenced is a Publisher that publishes only while the lease is held.
type fenced struct {
	Publisher
	lease Lease
	n     int // publishes since the last Check; Ingest serializes calls
}

func (f *fenced) Publish(ctx context.Context, msg *readmodel.Message) error {
	if !f.lease.Held() {
		return notLeader()
	}
	if f.n%fenceBatch == 0 {
		if err := f.lease.Check(ctx); err != nil {
			return readmodel.Wrap(readmodel.UpstreamError, err, "ingest: lease fence: "+err.Error())
		}
	}
	f.n++
	return f.Publisher.Publish(ctx, msg)
}

func notLeader() error {
	return readmodel.Errorf(readmodel.UpstreamError, "ingest: standby: this process does not hold the ingest lease")
}

// leaseGate reports whether this process may run a cycle now. On the first
// cycle of a new lease term it forgets what it published before (content
// hashes, listing memos): another holder may have published since. That
// cycle learns it again from the bus (resume.go), or without a
// StateReader publishes everything once, as after a restart.
func (in *Ingest) leaseGate() error {
	l := in.cfg.Lease
	if l == nil {
		return nil
	}
	if !l.Held() {
		return notLeader()
	}
	term := l.Term()
	in.cycleMu.Lock()
	defer in.cycleMu.Unlock()
	if in.term != term {
		in.term = term
		clear(in.hashes)
		clear(in.listMemos)
		clear(in.status)
		in.resumeDue = in.cfg.State != nil
	}
	return nil
}

// Standby reports whether this process runs with a lease it does not hold.
func (in *Ingest) Standby() bool { return in.cfg.Lease != nil && !in.cfg.Lease.Held() }
