package resident_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/cmp/resident"
)

// peer listens on the socket of a fresh private directory and answers each
// connection with answer (after reading whatever the client sends).
func peer(t *testing.T, answer func(c net.Conn)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tlr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ln, err := net.Listen("unix", resident.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close() //nolint:errcheck // a test peer: nothing to report
				answer(c)
			}()
		}
	}()
	return dir
}

func frame(n uint32, body string) []byte {
	b := binary.BigEndian.AppendUint32(nil, n)
	return append(b, body...)
}

// readRequest reads the client's request frame (length and body).
func readRequest(c net.Conn) {
	var n [4]byte
	if _, err := c.Read(n[:]); err != nil {
		return
	}
	buf := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, _ = c.Read(buf)
}

const okHeader = `{"version":1,"code":0}`

// TestClientRefusesHostileResponses: a peer that announces a huge frame,
// sends garbage, stops mid-frame, stalls, or answers in another protocol
// version costs the client neither a crash nor an allocation of what it
// announced: every case is an *UnavailableError (the caller renders
// in-process), within the client's timeout.
func TestClientRefusesHostileResponses(t *testing.T) {
	cases := []struct {
		name   string
		answer func(c net.Conn)
		want   string
	}{
		{"header announces 4 GiB", func(c net.Conn) { readRequest(c); _, _ = c.Write(frame(0xffffffff, "{")) }, "frame larger than its cap"},
		{"manifests announce 4 GiB", func(c net.Conn) {
			readRequest(c)
			_, _ = c.Write(append(frame(uint32(len(okHeader)), okHeader), frame(0xffffffff, "apiVersion: v1\n")...))
		}, "frame larger than its cap"},
		{"manifests announce 50 MiB and send 10 bytes", func(c net.Conn) {
			readRequest(c)
			_, _ = c.Write(append(frame(uint32(len(okHeader)), okHeader), frame(50<<20, "0123456789")...))
		}, "reading manifests of 52428800 bytes (got 10)"},
		{"garbage", func(c net.Conn) { readRequest(c); _, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) }, "frame larger than its cap"},
		{"garbage JSON", func(c net.Conn) { readRequest(c); _, _ = c.Write(frame(5, "{]]]}")) }, "decoding response header"},
		{"closes at once", func(c net.Conn) {}, "render.sock unavailable"},
		{"another version", func(c net.Conn) {
			readRequest(c)
			h := `{"version":2,"code":0}`
			_, _ = c.Write(append(frame(uint32(len(h)), h), frame(3, "a: b")...))
		}, "protocol version 2"},
		{"exit code out of range", func(c net.Conn) {
			readRequest(c)
			h := `{"version":1,"code":-7}`
			_, _ = c.Write(append(frame(uint32(len(h)), h), frame(0, "")...))
		}, "exit code -7"},
		{"success without manifests", func(c net.Conn) {
			readRequest(c)
			_, _ = c.Write(append(frame(uint32(len(okHeader)), okHeader), frame(0, "")...))
		}, "holds no manifests"},
		{"stalls", func(c net.Conn) { readRequest(c); time.Sleep(5 * time.Second) }, "no answer within 700ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := peer(t, tc.answer)
			c := &resident.Client{Dir: dir, Timeout: 700 * time.Millisecond, MaxManifestBytes: 64 << 20}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			res, err := c.Generate(context.Background(), resident.Request{WorkDir: "/nowhere", Environ: []string{"ARGOCD_APP_NAME=a"}})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			var ue *resident.UnavailableError
			if !errors.As(err, &ue) {
				t.Fatalf("Generate = %+v, %v; want an *UnavailableError", res, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
				t.Errorf("the client allocated %d bytes for this response", alloc)
			}
			if took > 3*time.Second {
				t.Errorf("took %s with a 700ms timeout", took)
			}
		})
	}
}

// TestClientNoResident: no socket, or a socket nobody listens on (the
// stale socket of a killed process), is an *UnavailableError at once.
func TestClientNoResident(t *testing.T) {
	dir := t.TempDir()
	c := &resident.Client{Dir: dir}
	_, err := c.Generate(context.Background(), resident.Request{})
	var ue *resident.UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("no socket: %v, want an *UnavailableError", err)
	}
	short, err := os.MkdirTemp("", "tlr-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(short) }()
	ln, err := net.Listen("unix", resident.SocketPath(short))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = ln.Close()
	start := time.Now()
	_, err = (&resident.Client{Dir: short}).Generate(context.Background(), resident.Request{})
	if !errors.As(err, &ue) || time.Since(start) > time.Second {
		t.Fatalf("stale socket: %v after %s, want an *UnavailableError at once", err, time.Since(start))
	}
}

func TestForwardedEnviron(t *testing.T) {
	got := resident.ForwardedEnviron([]string{"HOME=/root", "ARGOCD_APP_NAME=a", "ARGOCD_ENV_ENVIRONMENT=prod", "PARAM_APP=x",
		"KUBE_VERSION=1.33", "KUBE_API_VERSIONS=v1", "KUBECONFIG=/k", "THROUGHLINE_RENDER_BUDGET=1s", "ARGOCD_APP_PARAMETERS=[]"})
	want := "ARGOCD_APP_NAME=a ARGOCD_ENV_ENVIRONMENT=prod PARAM_APP=x KUBE_VERSION=1.33 KUBE_API_VERSIONS=v1 ARGOCD_APP_PARAMETERS=[]"
	if strings.Join(got, " ") != want {
		t.Errorf("ForwardedEnviron = %q", got)
	}
}
