package dashboardview

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// view is what the page template reads.
type view struct {
	Title    string
	From, To string
	Panels   []panelView
}

type panelView struct {
	Title, Type string
	Style       template.CSS
	Stats       []stat
	Lines       []line
	Ticks       []string
	Empty       bool
}

type stat struct{ Name, Value string }

type line struct {
	Name, Points, Last string
	Color              template.CSS
}

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// Page lays d's panels out on Grafana's 24-column grid: a stat panel as
// one value per series at the end of the history, a time series panel as
// its series over the history (one point per step), each in the panel's
// unit.
func Page(ctx context.Context, d *Dashboard, h *History, step time.Duration) ([]byte, error) {
	v := view{Title: d.Title, From: h.From.Format(time.RFC3339), To: h.To.Format(time.RFC3339)}
	for _, p := range d.Panels {
		// Integers of the grid only: nothing of the JSON's text.
		style := fmt.Sprintf("grid-column: %d / span %d; grid-row: %d / span %d", p.GridPos.X+1, p.GridPos.W, p.GridPos.Y+1, p.GridPos.H)
		pv := panelView{Title: p.Title, Type: p.Type, Style: template.CSS(style)} //nolint:gosec // integers
		unit := p.FieldConfig.Defaults.Unit
		for _, t := range p.Targets {
			switch p.Type {
			case "stat":
				vals, err := h.Instant(ctx, t.Expr)
				if err != nil {
					return nil, fmt.Errorf("panel %q: %w", p.Title, err)
				}
				for _, k := range slices.Sorted(maps.Keys(vals)) {
					pv.Stats = append(pv.Stats, stat{Name: k, Value: Format(vals[k], unit)})
				}
			case "timeseries":
				series, err := h.Range(ctx, t.Expr, step)
				if err != nil {
					return nil, fmt.Errorf("panel %q: %w", p.Title, err)
				}
				pv.Lines = lines(series, h, unit)
				pv.Ticks = []string{h.From.Format("Jan 2 15:04"), h.To.Format("Jan 2 15:04")}
			}
		}
		pv.Empty = p.Type != "row" && len(pv.Stats) == 0 && len(pv.Lines) == 0
		v.Panels = append(v.Panels, pv)
	}
	var b bytes.Buffer
	if err := page.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("laying out dashboard %q: %w", d.Title, err)
	}
	return b.Bytes(), nil
}

// lines are series as SVG polylines in a 1000 x 200 box, scaled to the
// largest value.
func lines(series map[string][]Point, h *History, unit string) []line {
	top := 0.0
	for _, ps := range series {
		for _, p := range ps {
			if !math.IsNaN(p.Value) {
				top = max(top, p.Value)
			}
		}
	}
	if top == 0 {
		top = 1
	}
	span := h.To.Sub(h.From).Seconds()
	if span <= 0 {
		span = 1
	}
	var out []line
	for i, k := range slices.Sorted(maps.Keys(series)) {
		var pts []string
		last := math.NaN()
		for _, p := range series[k] {
			if math.IsNaN(p.Value) {
				continue
			}
			x := p.At.Sub(h.From).Seconds() / span * 1000
			y := 195 - p.Value/top*185
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			last = p.Value
		}
		out = append(out, line{Name: k, Color: template.CSS(palette[i%len(palette)]), //nolint:gosec // the palette's constants
			Points: strings.Join(pts, " "), Last: Format(last, unit)})
	}
	return out
}

var page = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body { margin: 0; padding: 12px; background: #111217; color: #ccccdc; font: 13px/1.4 "Liberation Sans", Arial, sans-serif; }
h1 { font-size: 18px; margin: 0 0 4px; color: #fff; }
.range { color: #8e8e9b; margin-bottom: 10px; }
.grid { display: grid; grid-template-columns: repeat(24, 1fr); grid-auto-rows: 30px; gap: 6px; }
.panel { background: #181b1f; border: 1px solid #2c3235; border-radius: 3px; padding: 6px 8px; overflow: hidden; }
.row { background: none; border: none; font-size: 15px; font-weight: bold; color: #fff; padding: 4px 0; }
.panel h2 { font-size: 13px; margin: 0 0 6px; color: #fff; font-weight: 600; }
.stat { display: flex; justify-content: space-between; gap: 8px; }
.stat .v { font-size: 18px; font-weight: bold; color: #73bf69; }
.stat .n { color: #8e8e9b; align-self: center; }
svg { width: 100%; height: 110px; background: #111217; }
.legend span { margin-right: 10px; white-space: nowrap; }
.empty { color: #8e8e9b; }
</style></head><body>
<h1>{{.Title}}</h1>
<div class="range">{{.From}} to {{.To}} (UTC); app = All, environment = All</div>
<div class="grid">
{{- range .Panels}}
{{- if eq .Type "row"}}
<div class="panel row" style="{{.Style}}">{{.Title}}</div>
{{- else}}
<section class="panel" style="{{.Style}}" aria-label="{{.Title}}"><h2>{{.Title}}</h2>
{{- range .Stats}}<div class="stat"><span class="n">{{.Name}}</span><span class="v">{{.Value}}</span></div>{{end}}
{{- if .Lines}}<svg viewBox="0 0 1000 200" preserveAspectRatio="none">
{{- range .Lines}}<polyline fill="none" stroke="{{.Color}}" stroke-width="3" points="{{.Points}}"/>{{end}}</svg>
<div class="legend">{{range .Lines}}<span style="color: {{.Color}}">&#9632; {{.Name}}: {{.Last}}</span>{{end}}</div>{{end}}
{{- if .Empty}}<div class="empty">no data</div>{{end}}
</section>
{{- end}}
{{- end}}
</div></body></html>
`))
