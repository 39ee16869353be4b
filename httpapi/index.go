package httpapi

import (
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// APIVersion is the version reported by GET /v1 and the OpenAPI document.
const APIVersion = "1.0.0"

type indexEndpoint struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Description string `json:"description"`
}

// buildIndex renders the GET /v1 body from the route table, once.
func buildIndex(routes []*route) []byte {
	var body struct {
		Data struct {
			Name          string          `json:"name"`
			Version       string          `json:"version"`
			Documentation string          `json:"documentation"`
			Endpoints     []indexEndpoint `json:"endpoints"`
		} `json:"data"`
	}
	body.Data.Name = "marketd"
	body.Data.Version = APIVersion
	body.Data.Documentation = "/v1/docs"
	body.Data.Endpoints = []indexEndpoint{}
	for _, rt := range routes {
		body.Data.Endpoints = append(body.Data.Endpoints, indexEndpoint{
			Method: "GET", Path: openAPIPath(rt.pattern), Description: rt.summary,
		})
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic(err) // static data: cannot fail
	}
	return b
}

// openAPIPath turns a Fiber pattern (/:id) into an OpenAPI path (/{id}).
func openAPIPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// getIndex serves GET /v1: the API index (name, version, documentation
// link, every endpoint). Errors: 429 only.
func (s *Server) getIndex(c *fiber.Ctx, rt *route, _ request) error {
	setJSON(c)
	if writeCache(c, rt, s.indexTag) {
		return nil
	}
	c.Response().AppendBody(s.index)
	return nil
}
