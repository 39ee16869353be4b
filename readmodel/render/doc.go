// Package render prepares what the public API serves: MarketItems,
// collection, floor and token bodies, the merged listings snapshot, the
// prepared view types that carry them, their JSON encoder, and the USD
// slots filled at read time. It imports the standard library and readmodel
// only.
package render
