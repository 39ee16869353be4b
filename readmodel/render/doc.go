// Package render prepares what the public API serves: MarketItems,
// collection, floor and token bodies, the merged listings snapshot, the
// prepared view types that carry them, their JSON encoder, and the USD
// slots filled at read time. The bodies it writes are readmodel/wire's
// response types, so the Go client decodes exactly what it renders. It
// imports the standard library, readmodel and readmodel/wire only.
package render
