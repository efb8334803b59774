package breakglass

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestChangeNeverShowsSecretValues: a live edit of a Secret's value is
// listed (text, PR body, JSON and the evidence) with short hashes only; its
// labels and other objects' values are shown as they are.
func TestChangeNeverShowsSecretValues(t *testing.T) {
	t.Parallel()
	const oldV, newV = "hunter2-plaintext", "NEWSECRET-plaintext"
	changes := []Change{
		{Object: "Secret prod/db", Path: "stringData.password", Before: oldV, Live: newV, Proposed: oldV, Manager: "kubectl-edit", Class: Permanent},
		{Object: "Secret prod/db", Path: "data", Before: map[string]any{"password": oldV}, Live: nil, Manager: "kubectl-edit", Class: Permanent},
		{Object: "Secret prod/db", Path: "metadata.labels.tier", Before: "db", Live: "database", Manager: "kubectl-edit", Class: Permanent},
		{Object: "Deployment.apps prod/web", Path: "spec.replicas", Before: 2, Live: 5, Manager: "kubectl-scale", Class: Permanent},
	}
	js, err := json.Marshal(changes)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, c := range changes {
		text = append(text, c.String())
	}
	body := PullRequestBody(&Record{App: "web", Environment: "production"}, &WritebackResult{Changes: changes})
	all := strings.Join(text, "\n") + "\n" + string(js) + "\n" + body
	for _, needle := range []string{oldV, newV} {
		if strings.Contains(all, needle) {
			t.Errorf("a Secret value %q is shown:\n%s", needle, all)
		}
	}
	for _, want := range []string{"stringData.password: \"sha256:", `"database"`, "spec.replicas: 2 -> 5", "(Secret value not shown)"} {
		if !strings.Contains(all, want) {
			t.Errorf("lacks %q:\n%s", want, all)
		}
	}
	var back []Change
	if err := json.Unmarshal(js, &back); err != nil || len(back) != 4 || back[3].Object != "Deployment.apps prod/web" {
		t.Fatalf("the evidence's changes do not read back: %v %+v", err, back)
	}
}
