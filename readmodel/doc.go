// Package readmodel is the domain of marketd: the chains, prices and market
// rows of SPEC §2, the normalized messages that ingest publishes and the
// projector applies, the prepared views the public API serves, and the one
// application error type.
//
// It imports the standard library only. Adapters live in subpackages named
// for what they adapt: readmodel/bus (NATS JetStream), readmodel/store
// (Badger) and readmodel/projector (bus → store). They do not import each
// other sideways; cmd/marketd wires them.
package readmodel
