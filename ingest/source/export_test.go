package source

// FastDecode exposes fastDecode to the external tests (which may import the
// simulator; this package may not).
var FastDecode = fastDecode

// ScanLazyPage exposes scanLazyPage: its groups' collection ids and rows
// (nil when absent), its cursor and watermark, and whether it read the body.
func ScanLazyPage(body []byte) (ids []string, rows [][]byte, next, watermark string, ok bool) {
	p, ok := scanLazyPage(body)
	for _, g := range p.Items {
		ids = append(ids, g.CollectionID)
		rows = append(rows, g.Rows)
	}
	return ids, rows, p.NextCursor, p.Watermark, ok
}
