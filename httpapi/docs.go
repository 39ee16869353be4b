package httpapi

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

// redocVersion is the version of the embedded Redoc bundle
// (reference/README.md says where it comes from and how to update it).
const redocVersion = "2.5.4"

// redocScript is Redoc's standalone bundle, unmodified from the npm
// package, which renders the reference page in the reader's browser.
//
//go:embed reference/redoc.standalone.js
var redocScript []byte

// docsScriptPath is where the bundle is served. The version in the path
// makes the URL immutable: a new bundle is a new URL.
const docsScriptPath = "/v1/docs/redoc-" + redocVersion + ".standalone.js"

// docsPolicy is the page's Content-Security-Policy: the script, the
// document and everything they load come from this origin (Redoc adds
// inline styles and images as data: URLs, and runs its search index in a
// blob: worker). A URL of another origin is never fetched, so the page
// works with no outside network and leaks no reader to a third party.
const docsPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// docsPage is the GET /v1/docs body: Redoc pointed at the served document.
// Absolute paths, so /v1/docs/ (which the router matches too) works alike.
var docsPage = []byte(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>marketd API reference</title>
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<noscript>This page renders <a href="/v1/openapi.json">/v1/openapi.json</a> with JavaScript; read the document itself without it.</noscript>
<redoc spec-url="/v1/openapi.json" path-in-middle-panel="true" required-props-first="true" sort-props-alphabetically="false"></redoc>
<script src="` + docsScriptPath + `"></script>
</body>
</html>
`)

var (
	docsPageTag   = newETag("docs").str(string(docsPage))
	docsScriptTag = newETag("redoc").str(string(redocScript))
)

// getDocs serves GET /v1/docs: the human-readable API reference, a page
// that renders /v1/openapi.json with the embedded Redoc. Errors: 429 only.
func (s *Server) getDocs(c *fiber.Ctx, rt *route, _ request) error {
	c.Status(fiber.StatusOK)
	c.Response().ResetBody()
	h := &c.Response().Header
	h.SetContentType(fiber.MIMETextHTMLCharsetUTF8)
	h.Set("Content-Security-Policy", docsPolicy)
	h.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	if writeCache(c, rt, docsPageTag) {
		return nil
	}
	c.Response().AppendBody(docsPage)
	return nil
}

// getDocsScript serves the Redoc bundle the reference page loads, under
// its versioned path, cached for a year as immutable. Errors: 429 only.
func (s *Server) getDocsScript(c *fiber.Ctx, rt *route, _ request) error {
	c.Status(fiber.StatusOK)
	c.Response().ResetBody()
	h := &c.Response().Header
	h.SetContentType(fiber.MIMETextJavaScriptCharsetUTF8)
	h.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	if writeCache(c, rt, docsScriptTag) {
		return nil
	}
	c.Response().AppendBody(redocScript)
	return nil
}
