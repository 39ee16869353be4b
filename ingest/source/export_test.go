package source

// FastDecode exposes fastDecode to the external tests (which may import the
// simulator; this package may not).
var FastDecode = fastDecode
