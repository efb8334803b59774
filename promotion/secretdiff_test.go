package promotion_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
)

func decode(t *testing.T, doc string) []render.Object {
	t.Helper()
	objs, err := render.DecodeManifests([]byte(doc), "app/s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestClassifyNeverShowsSecretValues: a changed value of a Secret (data,
// stringData, annotations, a whole data map added) or a value that shows
// one in another object is a short hash in the Change, its String and its
// JSON: the old and new values appear nowhere.
func TestClassifyNeverShowsSecretValues(t *testing.T) {
	t.Parallel()
	const oldV, newV = "hunter2-plaintext", "NEWSECRET-plaintext"
	b64 := "aHVudGVyMi1wbGFpbnRleHQ=" // hunter2-plaintext
	nb64 := "TkVXU0VDUkVULXBsYWludGV4dA=="
	before := decode(t, `apiVersion: v1
kind: Secret
metadata: {name: db, namespace: checkout, labels: {tier: db}, annotations: {note: `+oldV+`}}
stringData: {password: `+oldV+`}
data: {token: `+b64+`}
---
apiVersion: v1
kind: Secret
metadata: {name: grown, namespace: checkout}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: leaked, namespace: checkout}
data: {url: "postgres://app:`+oldV+`@db"}
`)
	after := decode(t, `apiVersion: v1
kind: Secret
metadata: {name: db, namespace: checkout, labels: {tier: database}, annotations: {note: `+newV+`}}
stringData: {password: `+newV+`}
data: {token: `+nb64+`}
---
apiVersion: v1
kind: Secret
metadata: {name: grown, namespace: checkout}
data: {key: `+nb64+`}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: leaked, namespace: checkout}
data: {url: "postgres://app:`+newV+`@db"}
`)
	changes := promotion.Classify(before, after)
	js, err := json.Marshal(changes)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range changes {
		lines = append(lines, c.String())
	}
	text := strings.Join(lines, "\n")
	for _, needle := range []string{oldV, newV, b64, nb64, "hunter2", "NEWSECRET"} {
		if strings.Contains(text, needle) || strings.Contains(string(js), needle) {
			t.Errorf("a Secret value %q is shown:\n%s\n%s", needle, text, js)
		}
	}
	for _, want := range []string{
		"boundary: Secret checkout/db stringData.password: changed (hmac:",
		"boundary: Secret checkout/db data.token: changed (hmac:",
		"boundary: Secret checkout/db metadata.annotations.note: changed (hmac:",
		"boundary: Secret checkout/db metadata.labels.tier: db -> database",
		"boundary: Secret checkout/grown data: changed (<none> -> hmac:",
		"other: ConfigMap checkout/leaked data.url: changed (hmac:",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("changes lack %q:\n%s", want, text)
		}
	}
	// data and stringData of the same value digest alike; old and new differ;
	// no digest is a piece of the value's unkeyed sha256 (a guess of
	// "hunter2" cannot be tested against it).
	var pw, tok promotion.Change
	for _, c := range changes {
		switch c.Field {
		case "stringData.password":
			pw = c
		case "data.token":
			tok = c
		}
	}
	if pw.Before != tok.Before || pw.After != tok.After || pw.Before == pw.After || !pw.Redacted || len(pw.Before) != len("hmac:123456789012") {
		t.Errorf("hashes: password %s -> %s, token %s -> %s", pw.Before, pw.After, tok.Before, tok.After)
	}
	sum := sha256.Sum256([]byte(oldV))
	if unkeyed := hex.EncodeToString(sum[:]); strings.Contains(unkeyed, strings.TrimPrefix(pw.Before, "hmac:")) {
		t.Errorf("the old value's digest %s is a piece of its unkeyed sha256 %s: a guess could be tested", pw.Before, unkeyed)
	}
}
