// Package argolua runs throughline's Argo CD health script for Acceptances
// (deploy/argocd/argocd-cm-health.yaml) the way Argo CD runs a resource
// health customization: gopher-lua with the base, table, string and math
// libraries, the object as the global obj (JSON objects and arrays as
// tables, arrays 1-based). Tests use it to check the script as shipped; no
// command imports it.
package argolua

import (
	"encoding/json"
	"errors"
	"fmt"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/boundedfile"
)

// Key is the argocd-cm key of the Acceptance health script.
const Key = "resource.customizations.health.throughline.dev_Acceptance"

// maxPatch caps the argocd-cm patch LoadScript reads.
const maxPatch = 1 << 20

// LoadScript reads the health script from the argocd-cm patch at path.
func LoadScript(path string) (string, error) {
	data, err := boundedfile.Read(path, maxPatch)
	if err != nil {
		return "", fmt.Errorf("reading the health script: %w", err)
	}
	var cm struct {
		Kind string            `json:"kind"`
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		return "", fmt.Errorf("reading the health script in %s: %w", path, err)
	}
	script := cm.Data[Key]
	if cm.Kind != "ConfigMap" || script == "" {
		return "", fmt.Errorf("no %s in the ConfigMap %s", Key, path)
	}
	return script, nil
}

// Run runs script on obj and returns the health status and message; a Lua
// error (Argo CD then shows the error, not a health) is the error.
func Run(script string, obj map[string]any) (status, message string, err error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return "", "", fmt.Errorf("encoding the object for the health script: %w", err)
	}
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return "", "", fmt.Errorf("decoding the object for the health script: %w", err)
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", toLua(L, generic))
	if err := L.DoString(script); err != nil {
		return "", "", fmt.Errorf("health script: %w", err)
	}
	ret, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", errors.New("health script returned " + L.Get(-1).Type().String() + ", want a table")
	}
	return lua.LVAsString(ret.RawGetString("status")), lua.LVAsString(ret.RawGetString("message")), nil
}

// toLua converts a JSON value as Argo CD does before calling a health
// script (objects and arrays become tables, arrays 1-based).
func toLua(L *lua.LState, v any) lua.LValue {
	switch t := v.(type) {
	case bool:
		return lua.LBool(t)
	case float64:
		return lua.LNumber(t)
	case string:
		return lua.LString(t)
	case []any:
		tbl := L.NewTable()
		for _, e := range t {
			tbl.Append(toLua(L, e))
		}
		return tbl
	case map[string]any:
		tbl := L.NewTable()
		for k, e := range t {
			tbl.RawSetString(k, toLua(L, e))
		}
		return tbl
	}
	return lua.LNil
}
