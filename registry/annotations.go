package registry

import (
	"context"
	"encoding/json"
)

// Manifest is a manifest's digest and its annotations (an OCI artifact's
// org.opencontainers.image.revision and .source, as flux push artifact
// writes them).
type Manifest struct {
	// Digest is sha256:<hex> of the manifest as the registry served it
	// (verified against its bytes).
	Digest      string
	MediaType   string
	Annotations map[string]string
}

// Annotated fetches the manifest ref names (a tag is always asked of the
// registry; a digest may come from the cache) and returns its digest and
// annotations.
func (c *Client) Annotated(ctx context.Context, ref string) (*Manifest, error) {
	r, err := c.parse("get", ref)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	m, err := c.fetch(ctx, ref, r)
	if err != nil {
		return nil, err
	}
	var body struct {
		MediaType   string            `json:"mediaType"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal(m.Manifest, &body); err != nil {
		return nil, invalidf("get", ref, "malformed manifest %s: %w", m.digest, err)
	}
	mt := body.MediaType
	if mt == "" {
		mt = m.MediaType
	}
	return &Manifest{Digest: m.digest, MediaType: mt, Annotations: body.Annotations}, nil
}
