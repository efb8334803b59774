package gate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRepositoryCheck: the repository check of a change to one app's staging
// replicas in the example repository grown to apps apps (checkout's base
// and overlays copied under other names), each in dev, staging and
// production: every overlay rendered at base and at head.
func BenchmarkRepositoryCheck(b *testing.B) {
	for _, apps := range []int{1, 20} {
		b.Run(fmt.Sprintf("apps=%d/envs=3", apps), func(b *testing.B) {
			f := &fixture{t: b, top: b.TempDir()}
			f.root = filepath.Join(f.top, "gitops")
			copyDir(b, exampleRepo, f.root)
			for i := 1; i < apps; i++ {
				cloneApp(b, f.root, fmt.Sprintf("app%02d", i))
			}
			f.git("init", "-q", "-b", "main")
			f.commit("example")
			f.branch("pr", func() {
				k := staging + "/kustomization.yaml"
				f.write(map[string]string{k: strings.Replace(f.read(k), "count: 2", "count: 3", 1)})
			})
			var err error
			if f.repo, err = openRepo(f.root); err != nil {
				b.Fatal(err)
			}
			if err := f.repo.ReadInProcess(); err != nil { // as throughline check reads
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				rep, err := CheckRepository(context.Background(), f.repo, Request{Base: "main", Head: "pr"})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for _, e := range rep.Environments {
					n += len(e.Overlays)
				}
				if !rep.OK || n != 3*apps || rep.Changes() != 1 {
					b.Fatalf("ok %v, %d overlays, %d changes: %q", rep.OK, n, rep.Changes(), rep.Refusals)
				}
			}
		})
	}
}

// cloneApp copies checkout's base and dev, staging and production
// overlays to the app name, every "checkout" renamed.
func cloneApp(b *testing.B, root, name string) {
	src := filepath.Join(root, "apps", "checkout")
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || strings.Contains(p, "refused-unpinned") {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(root, "apps", name, rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, []byte(strings.ReplaceAll(string(data), "checkout", name)), 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
}
