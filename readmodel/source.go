package readmodel

// Source names one upstream. The names are fixed: they appear in
// meta.staleSources (order-book, indexer-mirror), in the simulator's fault
// API, in metrics labels and in bus subjects.
type Source string

const (
	SourceOrderBook       Source = "order-book"
	SourceIndexerMirror   Source = "indexer-mirror"
	SourceIndexerStats    Source = "indexer-stats"
	SourceAnalytics       Source = "analytics"
	SourceCollectionIndex Source = "collection-index"
	SourcePriceFeed       Source = "price-feed"
	SourceSales           Source = "sales"
)

// Sources lists every upstream source.
var Sources = []Source{
	SourceOrderBook, SourceIndexerMirror, SourceIndexerStats, SourceAnalytics,
	SourceCollectionIndex, SourcePriceFeed, SourceSales,
}

// ParseSource returns the source named s; ok is false for anything else.
func ParseSource(s string) (Source, bool) {
	for _, x := range Sources {
		if string(x) == s {
			return x, true
		}
	}
	return "", false
}
