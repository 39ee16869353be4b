package readmodel

// Sort is the collections browse order.
type Sort string

const (
	SortVolume Sort = "volume"
	SortFloor  Sort = "floor"
	SortRecent Sort = "recent"
)

// ParseSort returns the sort named s; ok is false for anything else.
func ParseSort(s string) (Sort, bool) {
	switch Sort(s) {
	case SortVolume, SortFloor, SortRecent:
		return Sort(s), true
	}
	return "", false
}

// Sorts lists every browse order.
var Sorts = []Sort{SortVolume, SortFloor, SortRecent}
