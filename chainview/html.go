package chainview

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/ledger"
)

//go:embed templates/*.tmpl templates/style.css
var templateFS embed.FS

// Site renders the pages of one Model.
type Site struct {
	m *Model
	t *template.Template
}

// page is what every template gets: the model, the page title, the way
// back to the root (relative links, so that static files and the server
// agree) and the page's own subject.
type page struct {
	Model *Model
	Title string
	Root  string
	Chain *Chain
	App   *App
	// Counts are the cells of the whole grid by state (index only).
	Counts []StateCount
	// Filter narrows the grid (the served index only); Served says the
	// page is served, where a query string filters.
	Filter Filter
	Served bool
}

// flightView is what the "flight" template gets: an attempt in flight and
// the forge's list its request comes from.
type flightView struct {
	F     Flight
	Pulls *Pulls
}

// NewSite parses the embedded templates for m (commit links follow its
// CommitURL).
func NewSite(m *Model) (*Site, error) {
	funcs := template.FuncMap{
		"short":        short,
		"digest":       ledger.ShortDigest,
		"tag":          imageTag,
		"lower":        func(s any) string { return strings.ToLower(fmt.Sprint(s)) },
		"inc":          func(i int) int { return i + 1 },
		"when":         func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		"age":          age,
		"flight":       func(f Flight, p *Pulls) flightView { return flightView{F: f, Pulls: p} },
		"likeAttempts": LikeAttempts,
		"closedWord":   closedWord,
		"closedUntil":  closedUntil,
		"threshold": func(op string, th *float64) string {
			if th == nil {
				return "-"
			}
			return op + " " + strconv.FormatFloat(*th, 'g', -1, 64)
		},
		"href": func(commit string) string {
			if m.commitURL == "" || commit == "" {
				return ""
			}
			return fmt.Sprintf(m.commitURL, commit)
		},
	}
	t, err := template.New("site").Funcs(funcs).ParseFS(templateFS, "templates/*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parsing the chain view templates: %w", err)
	}
	return &Site{m: m, t: t}, nil
}

// Stylesheet is the one stylesheet of the pages.
func Stylesheet() []byte {
	data, _ := templateFS.ReadFile("templates/style.css") // embedded: always there
	return data
}

// Index writes the grid page (index.html).
func (s *Site) Index(w io.Writer) error {
	return s.execute(w, "index.tmpl", page{Model: s.m, Title: "Apps and environments", Counts: s.m.Counts()})
}

// Promotion writes the page of promotionId (promotion/<id>.html); found
// is false when the model has no such promotion.
func (s *Site) Promotion(w io.Writer, id string) (found bool, err error) {
	ch, ok := s.m.Promotions[id]
	if !ok {
		return false, nil
	}
	return true, s.execute(w, "promotion.tmpl", page{Model: s.m, Title: id, Root: "../", Chain: ch})
}

// App writes the page of app (app/<name>.html); found is false when the
// model has no such app.
func (s *Site) App(w io.Writer, name string) (found bool, err error) {
	for _, a := range s.m.Apps {
		if a.Name == name {
			return true, s.execute(w, "app.tmpl", page{Model: s.m, Title: name, Root: "../", App: a})
		}
	}
	return false, nil
}

// execute renders into a buffer first: a failing template never leaves
// half a page.
func (s *Site) execute(w io.Writer, name string, p page) error {
	var buf bytes.Buffer
	if err := s.t.ExecuteTemplate(&buf, name, p); err != nil {
		return fmt.Errorf("rendering %s: %w", name, err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// Files are every page of the site by its slash path: index.html,
// style.css, promotion/<id>.html, app/<name>.html.
func (s *Site) Files(ctx context.Context) (map[string][]byte, error) {
	out := map[string][]byte{"style.css": Stylesheet()}
	var buf bytes.Buffer
	if err := s.Index(&buf); err != nil {
		return nil, err
	}
	out["index.html"] = bytes.Clone(buf.Bytes())
	ids := make([]string, 0, len(s.m.Promotions))
	for id := range s.m.Promotions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		buf.Reset()
		if _, err := s.Promotion(&buf, id); err != nil {
			return nil, err
		}
		out["promotion/"+id+".html"] = bytes.Clone(buf.Bytes())
	}
	for _, a := range s.m.Apps {
		buf.Reset()
		if _, err := s.App(&buf, a.Name); err != nil {
			return nil, err
		}
		out["app/"+a.Name+".html"] = bytes.Clone(buf.Bytes())
	}
	return out, nil
}

// WriteSite writes every page of the site under dir, each file atomically
// (atomicfile), and returns the paths written, sorted.
func (s *Site) WriteSite(ctx context.Context, dir string) ([]string, error) {
	files, err := s.Files(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("writing the chain view: %w", err)
		}
		if err := atomicfile.Write(p, files[name], 0o644); err != nil {
			return nil, fmt.Errorf("writing the chain view page %s: %w", p, err)
		}
	}
	return names, nil
}

// age is a duration in its two largest units (3d4h, 2h5m, 45s).
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "in the future"
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd%dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, d%time.Hour/time.Minute)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%ds", d/time.Minute, d%time.Minute/time.Second)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}
