package render

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	sigyaml "sigs.k8s.io/yaml"
)

// entryKind is what kustomize does with a loaded entry.
type entryKind int

const (
	// loadFile: Loader.Load reads (or fetches) a file.
	loadFile entryKind = iota
	// loadBase: a file, or a directory or Git repository through
	// Loader.New (resources, bases, generators, transformers, validators).
	loadBase
	// loadDir: a directory or Git repository through Loader.New
	// (components).
	loadDir
	// loadDirOnly: a directory kustomize hands to Helm (chart and config
	// homes).
	loadDirOnly
)

// loadedEntry is one entry of a kustomization that makes kustomize load
// something.
type loadedEntry struct {
	Field string // e.g. patches[0].path
	Entry string // as written
	kind  entryKind
	// inline: the field also takes inline YAML instead of a path.
	inline bool
	// fileSource: a configMapGenerator/secretGenerator files entry,
	// [key=]path.
	fileSource bool
}

// paths are the locations kustomize may load for the entry: the entry, and
// for a [key=]path file source also each side of the first "=".
func (e loadedEntry) paths() []string {
	if !e.fileSource || !strings.Contains(e.Entry, "=") {
		return []string{e.Entry}
	}
	key, rest, _ := strings.Cut(e.Entry, "=")
	return []string{e.Entry, key, rest}
}

// location is the path kustomize loads for a local entry: the entry, or for
// a key=path file source the path ("" when kustomize refuses the source
// without loading: an empty key or path, more than one "=").
func (e loadedEntry) location() string {
	if !e.fileSource || !strings.Contains(e.Entry, "=") {
		return e.Entry
	}
	key, p, _ := strings.Cut(e.Entry, "=")
	if key == "" || p == "" || strings.Contains(p, "=") {
		return ""
	}
	return p
}

// isInline reports whether a field that takes inline YAML holds YAML rather
// than a path: it spans lines or decodes as a mapping or sequence.
func (e loadedEntry) isInline() bool {
	if !e.inline {
		return false
	}
	if strings.ContainsAny(e.Entry, "\n\r") {
		return true
	}
	var v any
	if err := sigyaml.Unmarshal([]byte(e.Entry), &v); err != nil {
		return false
	}
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// loadedEntries is the one list of every kustomization field that makes
// kustomize v0.21 load a file, a directory, a URL or a Git repository, read
// from the kustomization as written (before FixKustomization folds bases into
// resources). A field kustomize adds later and this list misses still meets
// the confined filesystem and the network guard (see doc.go).
func loadedEntries(k *types.Kustomization) []loadedEntry {
	var out []loadedEntry
	list := func(field string, kind entryKind, inline bool, entries ...string) {
		for i, e := range entries {
			out = append(out, loadedEntry{Field: fmt.Sprintf("%s[%d]", field, i), Entry: e, kind: kind, inline: inline})
		}
	}
	one := func(field string, kind entryKind, e string) {
		if e != "" {
			out = append(out, loadedEntry{Field: field, Entry: e, kind: kind})
		}
	}
	list("resources", loadBase, false, k.Resources...)
	list("bases", loadBase, false, k.Bases...) //nolint:staticcheck // SA1019: kustomize still reads bases, so the sandbox must see them
	list("components", loadDir, false, k.Components...)
	list("crds", loadFile, false, k.Crds...)
	list("configurations", loadFile, false, k.Configurations...)
	list("generators", loadBase, true, k.Generators...)
	list("transformers", loadBase, true, k.Transformers...)
	list("validators", loadBase, true, k.Validators...)
	for i, p := range k.PatchesStrategicMerge { //nolint:staticcheck // SA1019: kustomize still applies them; as bases above
		out = append(out, loadedEntry{Field: fmt.Sprintf("patchesStrategicMerge[%d]", i), Entry: string(p), kind: loadFile, inline: true})
	}
	for i, p := range k.Patches {
		one(fmt.Sprintf("patches[%d].path", i), loadFile, p.Path)
	}
	for i, p := range k.PatchesJson6902 { //nolint:staticcheck // SA1019: kustomize still applies them; as bases above
		one(fmt.Sprintf("patchesJson6902[%d].path", i), loadFile, p.Path)
	}
	for i, r := range k.Replacements {
		one(fmt.Sprintf("replacements[%d].path", i), loadFile, r.Path)
	}
	if p, ok := k.OpenAPI["path"]; ok {
		one("openapi.path", loadFile, p)
	}
	generator := func(field string, g types.GeneratorArgs) {
		for j, f := range g.FileSources {
			out = append(out, loadedEntry{Field: fmt.Sprintf("%s.files[%d]", field, j), Entry: f, kind: loadFile, fileSource: true})
		}
		list(field+".envs", loadFile, false, g.EnvSources...)
		one(field+".env", loadFile, g.EnvSource)
	}
	for i, g := range k.ConfigMapGenerator {
		generator(fmt.Sprintf("configMapGenerator[%d]", i), g.GeneratorArgs)
	}
	for i, g := range k.SecretGenerator {
		generator(fmt.Sprintf("secretGenerator[%d]", i), g.GeneratorArgs)
	}
	for i, h := range k.HelmCharts {
		one(fmt.Sprintf("helmCharts[%d].valuesFile", i), loadFile, h.ValuesFile)
		list(fmt.Sprintf("helmCharts[%d].additionalValuesFiles", i), loadFile, false, h.AdditionalValuesFiles...)
	}
	if g := k.HelmGlobals; g != nil {
		one("helmGlobals.chartHome", loadDirOnly, g.ChartHome)
		one("helmGlobals.configHome", loadDirOnly, g.ConfigHome)
	}
	for i, h := range k.HelmChartInflationGenerator {
		one(fmt.Sprintf("helmChartInflationGenerator[%d].values", i), loadFile, h.Values)
		one(fmt.Sprintf("helmChartInflationGenerator[%d].chartHome", i), loadDirOnly, h.ChartHome)
		one(fmt.Sprintf("helmChartInflationGenerator[%d].helmHome", i), loadDirOnly, h.HelmHome)
	}
	return out
}

// inlineDocuments are the YAML documents a kustomization holds as strings,
// which krusty parses (and expands the aliases of) on its own: inline
// patches of every form, and inline generator, transformer and validator
// configurations. Open checks each against the parsing limits, as
// ConfinedFS.ReadFile checks files.
func inlineDocuments(k *types.Kustomization) []loadedEntry {
	var out []loadedEntry
	for i, p := range k.Patches {
		if p.Patch != "" {
			out = append(out, loadedEntry{Field: fmt.Sprintf("patches[%d].patch", i), Entry: p.Patch})
		}
	}
	for i, p := range k.PatchesJson6902 { //nolint:staticcheck // SA1019: kustomize still applies them
		if p.Patch != "" {
			out = append(out, loadedEntry{Field: fmt.Sprintf("patchesJson6902[%d].patch", i), Entry: p.Patch})
		}
	}
	for _, e := range loadedEntries(k) {
		if e.isInline() {
			out = append(out, e)
		}
	}
	return out
}
