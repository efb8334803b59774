package gate

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// TestDriftFilesNeverBlock: the drift records the CLI names are local
// files a careless or hostile job can point anywhere: a FIFO (which
// os.ReadFile waited on forever), a device that never ends, a directory.
// Each is a finding naming the file, at once.
func TestDriftFilesNeverBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "record.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	d := "sha256:" + strings.Repeat("ab", 32)
	rec := &promotion.Record{Artifact: promotion.Artifact{Image: "r.example/app:1.0.0@" + d, Digest: d}}
	files := []string{fifo, "/dev/zero", dir}
	done := make(chan []Finding, 1)
	go func() { done <- driftOf(context.Background(), gitops.WorkTree(t.TempDir()), files, rec) }()
	var got []Finding
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading the drift records blocked")
	}
	if len(got) != len(files) {
		t.Fatalf("%d findings for %d unreadable files: %+v", len(got), len(files), got)
	}
	for i, f := range got {
		if f.Rule != RuleDriftRecord || f.File != files[i] || !strings.Contains(f.Reason, "not a regular file") {
			t.Errorf("finding %d: %+v, want %s refusing %s as not a regular file", i, f, RuleDriftRecord, files[i])
		}
	}
}
