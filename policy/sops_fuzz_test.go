package policy_test

import (
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

// FuzzSOPSSecret: a Secret's values and its sops.mac come from the
// repository (untrusted). The Secret rule never panics on them, lets one
// through only when the value and the MAC have sops's form (or the value
// is empty), and otherwise refuses it naming the key of the value.
func FuzzSOPSSecret(f *testing.F) {
	const enc = "ENC[AES256_GCM,data:vzBL7H/cLuCfUU3dGy4=,iv:rccbjOO+NmzNr1exHMaHR7S1AZ7AgNycJ83vNLpnMaY=,tag:csycZ2xddf+C8YwiPHJbjQ==,type:str]"
	for _, seed := range [][2]string{
		{enc, enc}, {"", enc}, {enc, ""}, {"hunter2", enc}, {"ENC[AES256_GCM,data:", enc}, {enc + " ", enc},
		{strings.Replace(enc, "type:str", "type:bytes", 1), enc}, {strings.Replace(enc, "iv:rcc", "iv:", 1), enc},
		{"ENC[AES256_GCM,data:,iv:rccbjOO+NmzNr1exHMaHR7S1AZ7AgNycJ83vNLpnMaY=,tag:csycZ2xddf+C8YwiPHJbjQ==,type:str]", enc},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, value, mac string) {
		obj := render.Object{Source: "app/db.yaml", Map: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db", "namespace": "prod"},
			"stringData": map[string]any{"password": value, "username": enc},
			"sops":       map[string]any{"mac": mac, "age": []any{map[string]any{"recipient": "age1x", "enc": "-----BEGIN AGE ENCRYPTED FILE-----"}}},
		}}
		res := policy.CheckObjects([]render.Object{obj}, nil, "production")
		sopsForm := func(s string) bool {
			return strings.HasPrefix(s, "ENC[AES256_GCM,data:") && strings.HasSuffix(s, "]") && !strings.ContainsAny(s, " \n")
		}
		if len(res.Violations) == 0 {
			if value != "" && !sopsForm(value) || !sopsForm(mac) {
				t.Fatalf("accepted a value %q with mac %q", value, mac)
			}
			return
		}
		if len(res.Violations) != 1 || res.Violations[0].Rule != policy.RuleSecretPlaintext {
			t.Fatalf("violations %+v", res.Violations)
		}
		if sopsForm(mac) && !strings.Contains(res.Violations[0].Reason, "stringData.password") {
			t.Fatalf("the refusal does not name the key of the value %q: %s", value, res.Violations[0].Reason)
		}
	})
}
