// Package readmodel is the vocabulary of marketd: the chains, prices,
// identities and market rows of SPEC §2, the normalized messages that
// ingest publishes and the projector applies, the limits every package
// checks, and the one application error type.
//
// It imports the standard library only. Two subpackages hold the rules
// around it and import only the standard library and readmodel:
// readmodel/normalize (upstream wire shapes and how they become rows) and
// readmodel/render (the prepared views the public API serves, their JSON
// and the USD slots). Adapters live in subpackages named for what they
// adapt: readmodel/bus (NATS JetStream), readmodel/store (Badger) and
// readmodel/projector (bus → store). They do not import each other
// sideways; cmd/marketd wires them.
package readmodel
