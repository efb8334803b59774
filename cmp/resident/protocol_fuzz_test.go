package resident

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// frame is body with its length in front, as writeFrame writes it.
func frame(body string) []byte {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(body)))
	return append(n[:], body...)
}

// FuzzFrames feeds the socket's reader what a peer may send (a request to
// the server, a response header and manifests to the client): never a
// panic, never a frame above its cap (whatever length it announces), and
// a frame read is exactly the bytes after its length.
func FuzzFrames(f *testing.F) {
	f.Add(frame(`{"version":1,"workDir":"/tmp/app","environ":["ARGOCD_APP_NAME=web"]}`), int64(MaxRequestBytes))
	f.Add(append(frame(`{"version":1,"code":0,"objects":2}`), frame("---\nkind: A\n")...), int64(MaxHeaderBytes))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, '{'}, int64(MaxRequestBytes))
	f.Add([]byte{0, 0, 0, 9, '{', '}'}, int64(16))
	f.Add(frame(`{"version":"1","environ":{"a":1}}`), int64(MaxRequestBytes))
	f.Add(frame(`null`), int64(MaxRequestBytes))
	f.Fuzz(func(t *testing.T, data []byte, limit int64) {
		limit = max(0, limit%(2*MaxRequestBytes))
		body, err := readFrame(bytes.NewReader(data), limit, "frame")
		if err == nil {
			if int64(len(body)) > limit {
				t.Fatalf("a frame of %d bytes read under a cap of %d", len(body), limit)
			}
			if len(data) < 4 || int(binary.BigEndian.Uint32(data)) != len(body) || !bytes.Equal(body, data[4:4+len(body)]) {
				t.Fatalf("the frame read is not the bytes its length announced")
			}
		}
		// As the server reads a request, and the client a response (under
		// the fuzzed cap: the real ones are MaxRequestBytes and
		// MaxHeaderBytes).
		var req Request
		_ = readJSON(bytes.NewReader(data), limit, "render request", &req)
		r := bytes.NewReader(data)
		var res Response
		if err := readJSON(r, limit, "response header", &res); err == nil {
			if m, err := readFrame(r, limit, "manifests"); err == nil && int64(len(m)) > limit {
				t.Fatalf("manifests of %d bytes read under a cap of %d", len(m), limit)
			}
		}
	})
}
