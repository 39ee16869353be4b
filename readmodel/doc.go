// Package readmodel is the vocabulary of marketd: the chains, prices,
// identities and market rows of SPEC §2, the normalized messages that
// ingest publishes and the projector applies, the limits every package
// checks, and the one application error type.
//
// It imports the standard library only. Three subpackages hold the rules
// around it and import nothing of marketd but readmodel (and render,
// wire): readmodel/normalize (upstream wire shapes and how they become
// rows), readmodel/wire (the public API's response types, which the server
// writes and the Go client decodes) and readmodel/render (the prepared
// views the public API serves, their JSON and the USD slots). Adapters live in subpackages named for what they
// adapt: readmodel/bus (NATS JetStream), readmodel/store (Badger) and
// readmodel/projector (bus → store). They do not import each other
// sideways; cmd/marketd wires them.
package readmodel
