package environment

import (
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/golden"
)

// TestPromotionOrder: promotesFrom names other environments of the
// registry; an environment that lists none is a first environment.
func TestPromotionOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		from  map[string][]string
		field string // "": valid
		first []string
	}{
		{"none declared: every environment is first", nil, "", []string{"dev", "production", "staging"}},
		{"a chain", map[string][]string{"staging": {"dev"}, "production": {"staging"}}, "", []string{"dev"}},
		{"two sources", map[string][]string{"production": {"dev", "staging"}}, "", []string{"dev", "staging"}},
		{"unknown source", map[string][]string{"production": {"staging", "qa"}}, "environments.production.promotesFrom[1]", nil},
		{"itself", map[string][]string{"staging": {"staging"}}, "environments.staging.promotesFrom[0]", nil},
		{"twice", map[string][]string{"production": {"staging", "staging"}}, "environments.production.promotesFrom[1]", nil},
	}
	// Each error's field ([...]) in its message: testdata/order-fields.golden.
	msgs := golden.ErrorLines(t, "testdata/order-fields.golden", 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := example()
			for env, from := range tt.from {
				e := p.Environments[env]
				e.PromotesFrom = from
				p.Environments[env] = e
			}
			reg, err := New(file, p)
			if tt.field != "" {
				wantInvalid(t, err)
				msgs(tt.name+" ["+tt.field+"]", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var first []string
			for _, n := range reg.Names() {
				if e, _ := reg.Get(n); e.First() {
					first = append(first, n)
				}
			}
			if strings.Join(first, " ") != strings.Join(tt.first, " ") {
				t.Fatalf("first environments %q, want %q", first, tt.first)
			}
		})
	}
}

// TestCheckOrder: a promotion into an environment that declares its
// sources comes from one of them; an environment that declares none takes
// any (as before the order existed).
func TestCheckOrder(t *testing.T) {
	t.Parallel()
	p := example()
	prod := p.Environments["production"]
	prod.PromotesFrom = []string{"staging"}
	p.Environments["production"] = prod
	reg, err := New(file, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		from, to string
		refused  bool
	}{
		{"staging", "production", false},
		{"dev", "production", true}, // skipping staging
		{"production", "production", true},
		{"dev", "staging", false}, // staging declares no sources
		{"dev", "qa", false},      // unknown: the registry step refuses it
	} {
		err := reg.CheckOrder(tt.from, tt.to)
		if got := err != nil; got != tt.refused {
			t.Fatalf("%s -> %s: %v, want refused %v by %s", tt.from, tt.to, err, tt.refused, RuleOrder)
		}
		if tt.refused {
			if re := wantRefusal(t, err); re.Rule != RuleOrder || re.Field != "environments."+tt.to+".promotesFrom" {
				t.Fatalf("%s -> %s: rule %s field %s, want %s and environments.%s.promotesFrom", tt.from, tt.to, re.Rule, re.Field, RuleOrder, tt.to)
			}
		}
	}
}
