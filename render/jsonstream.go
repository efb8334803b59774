package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/throughline-dev/throughline/exitcode"
)

// jsonStreamSep separates two documents of a JSON stream.
var jsonStreamSep = []byte("\n---\n")

// EncodeJSONStream writes objects as a YAML stream of JSON documents, each
// "---" on a line and then the object's RFC 8785 form (Canonical) on one
// line. JSON is YAML: Argo CD and every YAML reader take the stream as they
// take EncodeYAML's, and it costs a fraction of it to write and, with
// DecodeJSONStream, to read back (the render cache re-checks what it
// serves on every hit). The leading "---" matters: a stream that starts
// with "{" is read as one JSON value by Argo CD (Kubernetes'
// YAMLOrJSONDecoder), which then fails on the second document.
func EncodeJSONStream(w io.Writer, objs []Object) error {
	for _, o := range objs {
		c, err := Canonical(o)
		if err != nil {
			return err
		}
		b := make([]byte, 0, len(c)+5)
		b = append(append(append(b, "---\n"...), c...), '\n')
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("writing manifests: %w", err)
		}
	}
	return nil
}

// DecodeJSONStream reads a stream as EncodeJSONStream writes it, strictly,
// and returns its objects and their rendered hash (Hash, computed from the
// documents read: they are the canonical forms). Every document must be
// one JSON object in its canonical form on one line (no duplicate names,
// no other spacing), so that the bytes read are the bytes any other reader
// of the stream sees and hashes; anything else is invalid input naming file
// and the document. Numbers decode as float64 (their canonical form is the
// float64's). The documents are decoded on every core.
func DecodeJSONStream(data []byte, file string) ([]Object, string, error) {
	if len(data) == 0 {
		return nil, hashEntries(nil), nil
	}
	body, endsLine := bytes.CutSuffix(data, []byte("\n"))
	body, startsDoc := bytes.CutPrefix(body, []byte("---\n"))
	if !endsLine || !startsDoc {
		return nil, "", &exitcode.InvalidInput{File: file, Err: errors.New("JSON stream does not start with --- or end with a newline")}
	}
	docs := bytes.Split(body, jsonStreamSep)
	objs := make([]Object, len(docs))
	entries := make([]hashEntry, len(docs))
	err := parallel(len(docs), func(i int) error {
		doc := docs[i]
		v := jsontext.Value(bytes.Clone(doc))
		if len(doc) == 0 || doc[0] != '{' || bytes.IndexByte(doc, '\n') >= 0 || v.Canonicalize() != nil || !bytes.Equal(v, doc) {
			return fmt.Errorf("document %d: not one canonical JSON object on one line", i+1)
		}
		var m map[string]any
		if err := jsonv2.Unmarshal(doc, &m); err != nil {
			return fmt.Errorf("document %d: %w", i+1, err)
		}
		objs[i] = Object{Map: m, Source: file}
		entries[i] = hashEntry{objs[i].ID(), doc}
		return nil
	})
	if err != nil {
		return nil, "", &exitcode.InvalidInput{File: file, Err: err}
	}
	return objs, hashEntries(entries), nil
}
