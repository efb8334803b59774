package chainview

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/benchfixture"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/signedevidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

// benchEnvs are the four environments of the benchmark repository.
var benchEnvs = []string{"dev", "qa", "staging", "production"}

// benchRepo is a repository of apps apps in the four environments: one
// commit of overlays (and the policy, whose evidenceSigners lists a
// notifier's key), one of an ACCEPTED record per app and environment.
func benchRepo(b *testing.B, apps int) *gitops.Repo {
	b.Helper()
	dir := b.TempDir()
	git := func(args ...string) string { return gittest.Run(b, dir, args...) }
	write := func(p string, data []byte) { gittest.Write(b, dir, map[string]string{p: string(data)}) }
	policy := "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nenvironments:\n"
	for _, e := range benchEnvs {
		policy += fmt.Sprintf("  %s:\n    cluster: %s-1\n    paths: [\"apps/*/overlays/%s\"]\n", e, e, e)
	}
	write(promotion.PolicyFile, []byte(policy+sshkey.PolicyLine))
	write(sshkey.EvidenceSignersFile, []byte(sshkey.NewNotifier(b, benchEnvs...).Line()))
	d := benchfixture.Digest(0)
	for i := range apps {
		for _, e := range benchEnvs {
			write(fmt.Sprintf("apps/app%03d/overlays/%s/kustomization.yaml", i, e), []byte("images:\n  - name: r.example/app\n    newTag: \"1.0.0@"+d+"\"\n"))
		}
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "overlays")
	desired := git("rev-parse", "HEAD")
	t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	for i := range apps {
		for _, e := range benchEnvs {
			write(promotion.RecordPath(fmt.Sprintf("app%03d", i), e), benchRecord(b, fmt.Sprintf("app%03d", i), e, d, desired, t0))
		}
	}
	git("add", "-A")
	git("commit", "-q", "-m", "records")
	git("repack", "-a", "-d", "-q") // packed, as a clone is
	r, err := gitops.OpenLocal(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func benchRecord(b *testing.B, app, env, d, desired string, t0 time.Time) []byte {
	h := "sha256:" + strings.Repeat("1", 64)
	rec, err := promotion.NewCandidate(app, 1, promotion.Artifact{Image: "r.example/app:1.0.0@" + d, Digest: d, SourceCommit: strings.Repeat("2", 40)},
		promotion.Target{Environment: env, Path: "apps/" + app + "/overlays/" + env, Cluster: env + "-1", RenderedHash: h, BaseRenderedHash: h,
			Renderer: "v1"}, t0, "bench")
	if err == nil {
		err = rec.Verify(promotion.VerifiedIn{Environment: "ci", DesiredRevision: desired, ObservedRevision: desired, RenderedHash: h,
			RuntimeEvidence: "evidence/dev/x.json"}, t0, "bench")
	}
	if err == nil {
		err = rec.Approve("alice", rec.InputFor("v1"), t0.Add(time.Hour), t0)
	}
	if err == nil {
		err = rec.Reconcile(desired, t0, "bench")
	}
	if err == nil {
		err = rec.Accept(desired, evidence.Path(env, app, rec.PromotionID), t0, "bench")
	}
	if err != nil {
		b.Fatal(err)
	}
	data, err := rec.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkGrid: 200 apps in 4 environments. render is the grid page from
// the model (what the served view does per request while the branch does
// not move), served the same through the Handler; load-grid reads the
// grid from Git (800 records, each read by git), load-chains judges every
// chain too (what report and the Handler do once per move of the branch).
func BenchmarkGrid(b *testing.B) {
	const apps = 200
	repo := benchRepo(b, apps)
	ctx := context.Background()
	m, err := LoadGrid(ctx, repo, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if len(m.Apps) != apps || len(m.Environments) != len(benchEnvs) || len(m.Problems) != 0 {
		b.Fatalf("%d apps, environments %v, problems %v", len(m.Apps), m.Environments, m.Problems)
	}
	b.Run("render", func(b *testing.B) {
		site, err := NewSite(m)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		cpu := benchfixture.CPUNow()
		for b.Loop() {
			buf.Reset()
			if err := site.Index(&buf); err != nil {
				b.Fatal(err)
			}
		}
		benchfixture.ReportCPU(b, cpu)
		if n := strings.Count(buf.String(), "<th scope=\"row\">"); n != apps {
			b.Fatalf("%d rows, want %d", n, apps)
		}
		b.ReportMetric(float64(buf.Len()), "bytes/page")
	})
	b.Run("served", func(b *testing.B) {
		h := &Handler{Repo: repo, TTL: time.Hour}
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/index.html", nil)) // the first request loads
		cpu := benchfixture.CPUNow()
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/index.html", nil))
			if rec.Code != 200 {
				b.Fatalf("status %d", rec.Code)
			}
			_, _ = io.Copy(io.Discard, rec.Body)
		}
		benchfixture.ReportCPU(b, cpu)
	})
	// The reads through git (one process each) and in process
	// (gitrepo.Repo.ReadInProcess, what report and serve use).
	fast := *repo.Repo
	if err := fast.ReadInProcess(); err != nil {
		b.Fatal(err)
	}
	for _, rd := range []struct {
		name string
		repo *gitops.Repo
	}{{"git", repo}, {"in-process", &gitops.Repo{Repo: &fast, Base: repo.Base}}} {
		b.Run("load-grid/"+rd.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := LoadGrid(ctx, rd.repo, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("load-chains/"+rd.name, func(b *testing.B) {
			for b.Loop() {
				if m, err := Load(ctx, rd.repo, Options{}); err != nil || len(m.Promotions) != apps*len(benchEnvs) {
					b.Fatalf("%v", err)
				}
			}
		})
	}
}

// Sizes of the history benchmark (issue 37): 50 apps in the four
// environments, 20 promotions each.
const (
	historyApps       = 50
	historyPromotions = 20
)

// historyRepo is a repository of apps apps promoted promotions times
// through the four environments, the way throughline writes it: per
// promotion of a digest to an environment, the desired commit (the
// overlay pinned, the record APPROVED, verified by the previous
// environment's acceptance), the record RECONCILING, then the notifier's
// commit of the record ACCEPTED and its signed evidence: 3 commits each,
// apps*4*promotions*3 in all (12,000 for 50 apps and 20 promotions). It is
// written by one git fast-import, which says each commit's id as it goes
// (get-mark), so that records name real commits.
func historyRepo(b *testing.B, apps, promotions int) *gitops.Repo {
	b.Helper()
	dir := b.TempDir()
	gittest.Run(b, dir, "init", "-q", "-b", "main")
	fi, err := newFastImport(dir)
	if err != nil {
		b.Fatal(err)
	}
	notifier := sshkey.NewNotifier(b, benchEnvs...)
	policy := "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nenvironments:\n"
	for _, e := range benchEnvs {
		policy += fmt.Sprintf("  %s:\n    cluster: %s-1\n    paths: [\"apps/*/overlays/%s\"]\n", e, e, e)
	}
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	fi.commit(b, t0, "the policy", map[string][]byte{promotion.PolicyFile: []byte(policy + sshkey.PolicyLine),
		sshkey.EvidenceSignersFile: []byte(notifier.Line())})
	at := t0
	next := func() time.Time { at = at.Add(time.Minute); return at }
	h := "sha256:" + strings.Repeat("1", 64)
	for k := range promotions {
		d := benchfixture.Digest(k)
		for i := range apps {
			app := fmt.Sprintf("app%03d", i)
			var prev *promotion.Record
			prevAccepted := ""
			for _, env := range benchEnvs {
				rec, err := promotion.NewCandidate(app, 1, promotion.Artifact{Image: "r.example/app:1." + fmt.Sprint(k) + ".0@" + d, Digest: d,
					SourceCommit: strings.Repeat("2", 40)},
					promotion.Target{Environment: env, Path: "apps/" + app + "/overlays/" + env, Cluster: env + "-1", RenderedHash: h,
						BaseRenderedHash: h, Renderer: "v1"}, next(), "throughline promote propose")
				if err != nil {
					b.Fatal(err)
				}
				v := promotion.VerifiedIn{Environment: "ci", DesiredRevision: strings.Repeat("3", 40), ObservedRevision: strings.Repeat("3", 40),
					RenderedHash: h, RuntimeEvidence: "evidence/ci/x.json"}
				if prev != nil {
					v = promotion.VerifiedIn{Environment: prev.Target.Environment, DesiredRevision: prev.Reconciling.DesiredRevision,
						ObservedRevision: prev.Reconciling.DesiredRevision, RenderedHash: h, RuntimeEvidence: prev.Accepted.RuntimeEvidence,
						EvidenceCommit: prevAccepted}
				}
				must(b, rec.Verify(v, next(), "throughline promote verify"))
				must(b, rec.Approve("alice@example.com", rec.InputFor("v1"), next().Add(48*time.Hour), at))
				overlay := "apps/" + app + "/overlays/" + env + "/kustomization.yaml"
				desired := fi.commit(b, next(), "promote "+app+" to "+env, map[string][]byte{
					overlay:                        []byte("images:\n  - name: r.example/app\n    newTag: \"1.0.0@" + d + "\"\n"),
					promotion.RecordPath(app, env): marshalRecord(b, rec)})
				must(b, rec.Reconcile(desired, next(), "throughline promote reconcile"))
				fi.commit(b, at, rec.PromotionID+" RECONCILING", map[string][]byte{promotion.RecordPath(app, env): marshalRecord(b, rec)})
				file := evidence.Path(env, app, rec.PromotionID)
				decided := next()
				must(b, rec.Accept(desired, file, decided, "throughline serve"))
				verified := decided.Add(-30 * time.Second)
				ev := &evidence.Record{SchemaVersion: evidence.SchemaVersion, App: app, Environment: env, PromotionID: rec.PromotionID,
					Decision: promotion.Accepted, Image: rec.Artifact.Image, ArtifactDigest: d, DesiredRevision: desired, ObservedRevision: desired,
					RenderedHash: h, DesiredRenderedHash: h, Acceptance: app + "-" + env + "/" + app, VerifiedAt: &verified, Time: decided,
					Pods: []evidence.Pod{{Workload: "Deployment/" + app + "-" + env + "/" + app, Container: "app", Pod: app + "-1", Pods: 1,
						Declared: d, ImageID: "r.example/app@" + d, Outcome: "Verified", Match: "Exact"}},
					ReportedBy: evidence.Reporter{Source: "argocd", Object: "Application/argocd/" + app + "-" + env}}
				evData, err := ev.Marshal()
				must(b, err)
				files := map[string][]byte{promotion.RecordPath(app, env): marshalRecord(b, rec), file: evData}
				signedevidence.SignAll(b, notifier, files)
				prevAccepted = fi.commit(b, decided, rec.PromotionID+" ACCEPTED", files)
				prev = rec
			}
		}
	}
	must(b, fi.close())
	gittest.Run(b, dir, "repack", "-a", "-d", "-q") // packed, as a clone is
	r, err := gitops.OpenLocal(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func marshalRecord(b *testing.B, rec *promotion.Record) []byte {
	data, err := rec.Marshal()
	must(b, err)
	return data
}

// fastImport writes commits on main through one git fast-import, which
// says each commit's id (get-mark) on a pipe.
type fastImport struct {
	cmd  *exec.Cmd
	in   *bufio.Writer
	pipe io.WriteCloser
	ids  *bufio.Reader
	mark int
}

func newFastImport(dir string) (*fastImport, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("git", "fast-import", "--quiet", "--cat-blob-fd=3")
	cmd.Dir, cmd.ExtraFiles = dir, []*os.File{pw}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	_ = pw.Close() // the child has it
	return &fastImport{cmd: cmd, in: bufio.NewWriter(in), pipe: in, ids: bufio.NewReader(pr)}, nil
}

// commit commits files (path -> content, over the previous commit's tree)
// at at and returns its id.
func (f *fastImport) commit(b *testing.B, at time.Time, msg string, files map[string][]byte) string {
	b.Helper()
	f.mark++
	fmt.Fprintf(f.in, "commit refs/heads/main\nmark :%d\ncommitter throughline <throughline@example.invalid> %d +0000\ndata %d\n%s\n",
		f.mark, at.Unix(), len(msg), msg)
	if f.mark > 1 {
		fmt.Fprintf(f.in, "from :%d\n", f.mark-1)
	}
	names := make([]string, 0, len(files))
	for p := range files {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		fmt.Fprintf(f.in, "M 100644 inline %s\ndata %d\n%s\n", p, len(files[p]), files[p])
	}
	fmt.Fprintf(f.in, "\nget-mark :%d\n", f.mark)
	must(b, f.in.Flush())
	id, err := f.ids.ReadString('\n')
	if err != nil {
		b.Fatalf("git fast-import: %v", err)
	}
	return strings.TrimSpace(id)
}

func (f *fastImport) close() error {
	if err := f.in.Flush(); err != nil {
		return err
	}
	_ = f.pipe.Close()
	return f.cmd.Wait()
}

// BenchmarkHistory (issue 37): 50 apps in 4 environments with 20
// promotions each (12,000 commits). report is what throughline report
// does (read in process, every chain judged, every page rendered);
// served is one request for the grid from the Handler (loaded);
// load is what the Handler does when the branch moves.
func BenchmarkHistory(b *testing.B) {
	repo := historyRepo(b, historyApps, historyPromotions)
	if err := repo.ReadInProcess(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("report", func(b *testing.B) {
		cpu := benchfixture.CPUNow()
		for b.Loop() {
			m, err := Load(ctx, repo, Options{})
			if err != nil || len(m.Promotions) != historyApps*len(benchEnvs) {
				b.Fatalf("%v", err)
			}
			site, err := NewSite(m)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := site.Files(ctx); err != nil {
				b.Fatal(err)
			}
		}
		benchfixture.ReportCPU(b, cpu)
	})
	b.Run("served", func(b *testing.B) {
		h := &Handler{Repo: repo, TTL: time.Hour}
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/index.html", nil)) // the first request loads
		cpu := benchfixture.CPUNow()
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/index.html", nil))
			if rec.Code != 200 {
				b.Fatalf("status %d", rec.Code)
			}
		}
		benchfixture.ReportCPU(b, cpu)
	})
	// The floor under report: only the parse of every record version the
	// history holds (each a different blob, read beforehand by git), on
	// every core, with nothing else of the load. parse-versions is the
	// parse every reader uses (promotion.Parse: YAML 1.1, the schema, the
	// strict decode); yaml-versions is its YAML 1.1 decode alone.
	blobs := recordVersions(b, repo.Top)
	if len(blobs) != historyApps*len(benchEnvs)*historyPromotions*3 {
		b.Fatalf("%d record versions", len(blobs))
	}
	for _, p := range []struct {
		name  string
		parse func([]byte) error
	}{
		{"parse-versions", func(d []byte) error { _, err := promotion.Parse("promotion/x/y.yaml", d); return err }},
		{"yaml-versions", func(d []byte) error { _, err := sigsyaml.YAMLToJSONStrict(d); return err }},
	} {
		b.Run(p.name, func(b *testing.B) {
			cpu := benchfixture.CPUNow()
			for b.Loop() {
				g := new(errgroup.Group)
				workers := runtime.GOMAXPROCS(0)
				for w := range workers {
					g.Go(func() error {
						for i := w; i < len(blobs); i += workers {
							if err := p.parse(blobs[i]); err != nil {
								return err
							}
						}
						return nil
					})
				}
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
			}
			benchfixture.ReportCPU(b, cpu)
			b.ReportMetric(float64(len(blobs)), "versions/op")
		})
	}
}

// recordVersions reads, through git, every blob a promotion record file
// of the repository at dir ever had.
func recordVersions(b *testing.B, dir string) [][]byte {
	b.Helper()
	ids := map[string]bool{}
	for _, line := range strings.Split(gittest.Run(b, dir, "log", "--raw", "--no-renames", "--no-abbrev", "--format=", "HEAD", "--", promotion.Dir), "\n") {
		if f := strings.Fields(line); len(f) >= 4 && strings.Trim(f[3], "0") != "" {
			ids[f[3]] = true
		}
	}
	var in bytes.Buffer
	for id := range ids {
		in.WriteString(id + "\n")
	}
	cmd := exec.Command("git", "cat-file", "--batch")
	cmd.Dir, cmd.Stdin = dir, &in
	out, err := cmd.Output()
	if err != nil {
		b.Fatal(err)
	}
	var blobs [][]byte
	r := bufio.NewReader(bytes.NewReader(out))
	for {
		var id, typ string
		var n int
		if _, err := fmt.Fscanf(r, "%s %s %d\n", &id, &typ, &n); err != nil {
			break
		}
		data := make([]byte, n+1) // the content and git's newline after it
		if _, err := io.ReadFull(r, data); err != nil {
			b.Fatal(err)
		}
		blobs = append(blobs, data[:n])
	}
	return blobs
}
