package httpapi

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

// OpenAPIDocument is the OpenAPI 3.1 description of the public API, served
// bare at GET /v1/openapi.json. Tests validate every response against it.
//
//go:embed openapi.json
var OpenAPIDocument []byte

var openAPITag = newETag("openapi").str(string(OpenAPIDocument))

// getOpenAPI serves GET /v1/openapi.json: the OpenAPI document, bare (no
// data wrapper). Errors: 429 only.
func (s *Server) getOpenAPI(c *fiber.Ctx, rt *route, _ request) error {
	setJSON(c)
	if writeCache(c, rt, openAPITag) {
		return nil
	}
	c.Response().AppendBody(OpenAPIDocument)
	return nil
}
