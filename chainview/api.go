package chainview

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

// The JSON API (what the Argo CD extension reads through Argo CD's proxy
// extension: argocd-server forwards /extensions/throughline/<path> to
// <serve>/<path>).
const (
	// APIPrefix is the path prefix of the JSON API.
	APIPrefix = "/api/v1/"
	// APIApplication is the status and chain of one app in one
	// environment: GET /api/v1/application?app=<app>&env=<environment>,
	// or with Argo CD's Argocd-Application-Name header alone.
	APIApplication = APIPrefix + "application"
)

// The headers Argo CD's proxy extension sends with every request it
// forwards, once argocd-server checked that the user may read the
// Application in the project.
const (
	// HeaderApplication is "<namespace>:<name>" of the Application.
	HeaderApplication = "Argocd-Application-Name"
	// HeaderProject is the Application's AppProject.
	HeaderProject = "Argocd-Project-Name"
)

// Tones say in one word how a status reads (the extension's colour; the
// text says it too).
const (
	ToneProven  = "proven"
	TonePending = "pending"
	ToneBroken  = "broken"
	ToneNone    = "none"
)

// AppStatus is the answer of APIApplication: the cell of one app in one
// environment as the grid shows it, its chain with the evidence each
// arrow rests on, what the environment accepted, and the app's other
// environments.
type AppStatus struct {
	App         string `json:"app"`
	Environment string `json:"environment"`
	// Application and Project are Argo CD's headers, when the request
	// came through its proxy extension.
	Application string `json:"application,omitempty"`
	Project     string `json:"project,omitempty"`
	// Base is the branch read, Revision its commit, ReadAt when.
	Base     string    `json:"base"`
	Revision string    `json:"revision"`
	ReadAt   time.Time `json:"readAt"`
	// Status is the cell in one line (the status panel's text): "<digest>
	// accepted", "awaiting 1 of 2 approvals", "halted: <reason>".
	Status string `json:"status"`
	// Tone is ToneProven, TonePending, ToneBroken or ToneNone.
	Tone string  `json:"tone"`
	Cell APICell `json:"cell"`
	// Chain is the record's nine arrows (nil: no record at Revision).
	Chain *APIChain `json:"chain,omitempty"`
	// InFlight are the attempts open on their attempt branches.
	InFlight []APIFlight `json:"inFlight,omitempty"`
	// Accepted are the digests the environment accepted with evidence,
	// newest first, with what rollback --to says of each.
	Accepted []APICandidate `json:"accepted,omitempty"`
	// Pipeline is the app in every environment, in the grid's order.
	Pipeline []APIStage `json:"pipeline"`
	// PullsUnavailable says the forge's list of pull requests could not
	// be read (serve with --forge).
	PullsUnavailable string `json:"pullRequestsUnavailable,omitempty"`
}

// APICell is the grid's cell.
type APICell struct {
	State       promotion.State `json:"state,omitempty"`
	PromotionID string          `json:"promotionId,omitempty"`
	Image       string          `json:"image,omitempty"`
	Tag         string          `json:"tag,omitempty"`
	Digest      string          `json:"digest,omitempty"`
	// Waits is the grid's text of what the record waits on or why it
	// stopped.
	Waits    string `json:"waits,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Deadline string `json:"deadline,omitempty"`
	Age      string `json:"age,omitempty"`
	Drift    string `json:"drift,omitempty"`
	Paused   string `json:"paused,omitempty"`
}

// APIChain is a Chain.
type APIChain struct {
	PromotionID string             `json:"promotionId"`
	Source      string             `json:"source,omitempty"`
	Rollback    bool               `json:"rollback,omitempty"`
	Verdict     Status             `json:"verdict"`
	Proven      int                `json:"proven"`
	Arrows      []APIArrow         `json:"arrows"`
	Required    int                `json:"requiredApprovals"`
	Approvals   []APIApproval      `json:"approvals,omitempty"`
	Attempts    []ledger.StatusRow `json:"attempts,omitempty"`
	// Bundles are the supply-chain evidence bundles the record carries.
	Bundles []APIBundle `json:"bundles,omitempty"`
}

// APIBundle is a Bundle.
type APIBundle struct {
	Kind          string `json:"kind"`
	Digest        string `json:"digest"`
	PredicateType string `json:"predicateType,omitempty"`
	Signer        string `json:"signer,omitempty"`
	Subject       string `json:"subject"`
	File          string `json:"file"`
	Commit        string `json:"commit,omitempty"`
	Status        Status `json:"status"`
	Summary       string `json:"summary"`
	// Scan is a vulnerability scan's age and worst finding as the record
	// carries them.
	Scan *APIScan `json:"scan,omitempty"`
}

// APIScan is a ScanView.
type APIScan struct {
	Finished time.Time `json:"finished"`
	// BeforeCandidacy is how long before the candidacy it finished, in
	// seconds (absent: not a candidacy).
	BeforeCandidacy int64  `json:"beforeCandidacySeconds,omitempty"`
	Worst           string `json:"worstSeverity"`
	WorstFindings   int    `json:"worstFindings"`
	Findings        int    `json:"findings"`
	// Proven is false when the bundle's seal is not proven: the summary
	// is then only the record's claim.
	Proven bool   `json:"proven"`
	Text   string `json:"text"`
}

// APIArrow is an Arrow.
type APIArrow struct {
	Name    string         `json:"name"`
	Status  Status         `json:"status"`
	Summary string         `json:"summary"`
	Facts   []APIFact      `json:"facts,omitempty"`
	Pods    []evidence.Pod `json:"pods,omitempty"`
}

// APIFact is a Fact; URL links a commit when serve has --ui-commit-url.
type APIFact struct {
	Label  string `json:"label"`
	Value  string `json:"value"`
	Commit bool   `json:"commit,omitempty"`
	URL    string `json:"url,omitempty"`
}

// APIApproval is an approval with its expiry judged as the chain judges it.
type APIApproval struct {
	Approver   string    `json:"approver"`
	ApprovedAt time.Time `json:"approvedAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
	Expired    bool      `json:"expired,omitempty"`
}

// APIFlight is an attempt open on its attempt branch.
type APIFlight struct {
	Branch      string          `json:"branch"`
	PromotionID string          `json:"promotionId"`
	State       promotion.State `json:"state"`
	Tag         string          `json:"tag,omitempty"`
	Digest      string          `json:"digest"`
	// Status is the attempt in one line, as Status says a cell.
	Status string `json:"status"`
	Waits  string `json:"waits"`
	// PullRequest is its open pull/merge request (serve with --forge).
	PullRequest *APIPull `json:"pullRequest,omitempty"`
}

// APIPull is an attempt's open pull request (merge request on GitLab).
type APIPull struct {
	// Label is "PR #12" (GitLab: "MR !12").
	Label  string `json:"label"`
	Number int    `json:"number"`
	URL    string `json:"url,omitempty"`
	Title  string `json:"title"`
	// State is draft or open; Review says it with the approvals.
	State  string `json:"state"`
	Review string `json:"review"`
	// Approvals is how many reviewers approve it on the forge (absent:
	// not asked).
	Approvals *int   `json:"approvals,omitempty"`
	Waits     string `json:"waits,omitempty"`
}

// APICandidate is a Candidate.
type APICandidate struct {
	Digest      string `json:"digest"`
	Tag         string `json:"tag,omitempty"`
	PromotionID string `json:"promotionId"`
	Commit      string `json:"commit"`
	Evidence    string `json:"evidence"`
	Refused     string `json:"refused,omitempty"`
}

// APIStage is the app in one environment.
type APIStage struct {
	Environment string          `json:"environment"`
	State       promotion.State `json:"state,omitempty"`
	Tag         string          `json:"tag,omitempty"`
	Digest      string          `json:"digest,omitempty"`
	Status      string          `json:"status"`
	Tone        string          `json:"tone"`
}

// apiError is an answer of the API other than 200; its message never
// echoes the request.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

// serveAPI answers the JSON API (GET and HEAD, checked by ServeHTTP).
func (h *Handler) serveAPI(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Cache-Control", "no-cache")
	if len(h.APIToken) > 0 && !bearer(r, h.APIToken) {
		hdr.Set("WWW-Authenticate", `Bearer realm="throughline"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "want Authorization: Bearer <the token of --ui-api-token-file>"})
		return
	}
	if r.URL.Path != APIApplication {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such endpoint: " + APIApplication + " is the one there is"})
		return
	}
	site, err := h.current(r.Context())
	if err != nil {
		if h.Log != nil {
			h.Log(err)
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "cannot read the GitOps repository: see the server's log"})
		return
	}
	st, err := h.appStatus(r.Context(), site.m, r, time.Now())
	var ae *apiError
	var ue *unavailable
	switch {
	case errors.As(err, &ae):
		writeJSON(w, ae.code, map[string]string{"error": ae.msg})
	case errors.As(err, &ue):
		if h.Log != nil {
			h.Log(ue.err)
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": ue.msg})
	case err != nil:
		if h.Log != nil {
			h.Log(err)
		}
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "cannot read the app's attempts: see the server's log"})
	default:
		writeJSON(w, http.StatusOK, st)
	}
}

// bearer checks Authorization: Bearer <token> in constant time (over
// hashes, so the length does not leak), as the notifier checks Argo CD's.
func bearer(r *http.Request, token []byte) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	a, b := sha256.Sum256([]byte(strings.TrimSpace(tok))), sha256.Sum256(token)
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil { // the API's own types: cannot happen
		code, data = http.StatusInternalServerError, []byte(`{"error": "cannot encode the answer"}`)
	}
	w.WriteHeader(code)
	_, _ = w.Write(append(data, '\n'))
}

// unavailable is a failure of something the answer needs (the cluster):
// msg is answered (503), err logged; the client learns nothing of the
// cluster from it.
type unavailable struct {
	msg string
	err error
}

func (u *unavailable) Error() string { return u.err.Error() }
func (u *unavailable) Unwrap() error { return u.err }

// ArgoApplication is what the API reads of a live Argo CD Application.
type ArgoApplication struct {
	// Project is its spec.project.
	Project             string
	Labels, Annotations map[string]string
}

// ErrNoApplication is what an ApplicationLookup returns (wrapped) for an
// Application that does not exist.
var ErrNoApplication = errors.New("no such Application")

// ApplicationLookup reads the Argo CD Application name in namespace.
type ApplicationLookup func(ctx context.Context, namespace, name string) (*ArgoApplication, error)

// narrowed is the app and environment of the Application r names in
// Argo CD's header, read live through lookup: argocd-server forwards a
// request only after checking that its user may read that Application
// in that project, so that Application is all the request may see. Its
// throughline.dev/app and throughline.dev/environment labels (or
// annotations; the app defaults to its name) say which, else its name as
// <app>-<environment>. A query asking for anything else is refused (403);
// an Application of another project than the header's too.
func (m *Model) narrowed(ctx context.Context, r *http.Request, lookup ApplicationLookup) (app, env string, err error) {
	ns, name, ok := strings.Cut(r.Header.Get(HeaderApplication), ":")
	if !ok || !promotion.ValidName(name) || !promotion.ValidName(ns) {
		return "", "", &apiError{http.StatusBadRequest, HeaderApplication + ": want <namespace>:<name>"}
	}
	a, err := lookup(ctx, ns, name)
	switch {
	case errors.Is(err, ErrNoApplication):
		return "", "", &apiError{http.StatusNotFound, "no such Application"}
	case err != nil:
		return "", "", &unavailable{msg: "cannot read the Application from the cluster: see the server's log",
			err: fmt.Errorf("reading the Application %s/%s: %w", ns, name, err)}
	case a.Project != r.Header.Get(HeaderProject):
		return "", "", &apiError{http.StatusForbidden, "the Application is not in the project " + HeaderProject + " names"}
	}
	pick := func(k string) string { return cmp.Or(a.Labels[k], a.Annotations[k]) }
	app, env = cmp.Or(pick(v1alpha1.LabelApp), name), pick(v1alpha1.LabelEnvironment)
	if env == "" {
		if app, env, err = m.byName(name); err != nil {
			return "", "", err
		}
	}
	if !promotion.ValidName(app) || !promotion.ValidName(env) {
		return "", "", &apiError{http.StatusNotFound, "the Application's throughline.dev/app and throughline.dev/environment are not names"}
	}
	q := r.URL.Query()
	if (q.Get("app") != "" || q.Get("env") != "") && (q.Get("app") != app || q.Get("env") != env) {
		return "", "", &apiError{http.StatusForbidden, "this Application is one app in one environment: the API answers about it only"}
	}
	return app, env, nil
}

// ResolveApp says which app and environment r asks for: the query's app
// and env (the extension sends the Application's throughline.dev/app and
// throughline.dev/environment labels), else the Application named by Argo
// CD's Argocd-Application-Name header ("<namespace>:<name>") read as
// <app>-<environment> against the grid's apps and environments.
func (m *Model) ResolveApp(r *http.Request) (app, env string, err error) {
	q := r.URL.Query()
	app, env = q.Get("app"), q.Get("env")
	if app != "" || env != "" {
		if !promotion.ValidName(app) || !promotion.ValidName(env) {
			return "", "", &apiError{http.StatusBadRequest, "want app=<app>&env=<environment>, both names"}
		}
		return app, env, nil
	}
	hv := r.Header.Get(HeaderApplication)
	if hv == "" {
		return "", "", &apiError{http.StatusBadRequest, "want app=<app>&env=<environment>, or Argo CD's " + HeaderApplication + " header"}
	}
	_, name, ok := strings.Cut(hv, ":")
	if !ok || !promotion.ValidName(name) {
		return "", "", &apiError{http.StatusBadRequest, HeaderApplication + ": want <namespace>:<name>"}
	}
	return m.byName(name)
}

// byName reads an Application's name as <app>-<environment> against the
// grid's apps and environments.
func (m *Model) byName(name string) (app, env string, err error) {
	for _, e := range m.Environments {
		a, found := strings.CutSuffix(name, "-"+e)
		if found && m.row(a) != nil {
			return a, e, nil
		}
	}
	return "", "", &apiError{http.StatusNotFound, "the Application's name is not <app>-<environment> of an app and environment the repository has: " +
		"label it throughline.dev/app and throughline.dev/environment (the extension sends them)"}
}

// row is app's row (nil: none).
func (m *Model) row(app string) *App {
	for _, a := range m.Apps {
		if a.Name == app {
			return a
		}
	}
	return nil
}

// appStatus is the answer for r at now.
func (h *Handler) appStatus(ctx context.Context, m *Model, r *http.Request, now time.Time) (*AppStatus, error) {
	app, env, err := m.ResolveApp(r)
	if h.Applications != nil && r.Header.Get(HeaderApplication) != "" {
		app, env, err = m.narrowed(ctx, r, h.Applications)
	}
	if err != nil {
		return nil, err
	}
	row := m.row(app)
	var cell *Cell
	if row != nil {
		for _, c := range row.Cells {
			if c.Environment == env {
				cell = c
			}
		}
	}
	if cell == nil {
		return nil, &apiError{http.StatusNotFound, "the repository has no record of this app in this environment, nor the environment"}
	}
	st := &AppStatus{App: app, Environment: env, Base: m.Base, Revision: m.Rev, ReadAt: m.Now,
		Application: r.Header.Get(HeaderApplication), Project: r.Header.Get(HeaderProject)}
	if !promotion.ValidName(strings.ReplaceAll(st.Project, ".", "-")) {
		st.Project = ""
	}
	if _, name, ok := strings.Cut(st.Application, ":"); !ok || !promotion.ValidName(name) {
		st.Application = ""
	}
	if st.InFlight, err = h.flights(ctx, m, cell, now); err != nil {
		return nil, err
	}
	st.Status, st.Tone = cellStatus(cell, now)
	st.PullsUnavailable = cell.PullsUnavailable
	if len(st.InFlight) > 0 {
		f := st.InFlight[0]
		if cell.Record == nil {
			st.Status, st.Tone = f.Status+" (in flight)", TonePending
		} else {
			st.Status += "; in flight: " + f.Status
		}
	}
	st.Cell = apiCell(cell, now)
	if cell.Chain != nil {
		st.Chain = m.apiChain(cell.Chain)
	}
	for _, hist := range row.History {
		if hist.Environment != env {
			continue
		}
		for _, c := range hist.Accepted {
			st.Accepted = append(st.Accepted, APICandidate(c))
		}
	}
	for _, c := range row.Cells {
		s, tone := cellStatus(c, now)
		stage := APIStage{Environment: c.Environment, Status: s, Tone: tone}
		if c.Record != nil {
			stage.State, stage.Tag, stage.Digest = c.Record.State, c.Tag(), c.Record.Artifact.Digest
		} else if len(c.InFlight) > 0 {
			stage.Status, stage.Tone = "in flight: "+string(c.InFlight[0].State)+", "+c.InFlight[0].Waits, TonePending
			if pr := c.InFlight[0].Pull; pr != nil {
				stage.Status += ", " + m.Pulls.Label(pr) + " " + pr.Review()
			}
		}
		st.Pipeline = append(st.Pipeline, stage)
	}
	return st, nil
}

// cellStatus is the cell in one line and its tone: the record's state in
// the words of the status panel, judged by the record's chain (an
// ACCEPTED record the chain does not prove is not "accepted").
func cellStatus(c *Cell, now time.Time) (string, string) {
	rec := c.Record
	if rec == nil {
		return "no record", ToneNone
	}
	required := 1
	if c.Chain != nil {
		required = c.Chain.Required
	}
	s, tone := recordStatus(rec, required, now)
	switch {
	case rec.State == promotion.Accepted && c.Chain != nil && c.Chain.Verdict() != Proven:
		s, tone = "accepted, "+c.Waits, ToneBroken
	case rec.State == promotion.Reconciling && !c.Deadline.IsZero():
		s += ", " + c.DeadlineText(now)
	}
	if c.Drift != "" {
		s, tone = s+"; "+c.Drift, ToneBroken
	}
	if c.Paused() {
		s += "; paused by break-glass"
	}
	return s, tone
}

// recordStatus is rec's state in one line, in an environment requiring
// required distinct approvers.
func recordStatus(rec *promotion.Record, required int, now time.Time) (string, string) {
	n := len(approvalViews(rec, now))
	required = max(required, 1)
	switch rec.State {
	case promotion.Candidate:
		return "candidate: awaiting promote verify", TonePending
	case promotion.Verified:
		return fmt.Sprintf("awaiting %d of %d approvals", n, required), TonePending
	case promotion.Approved:
		return fmt.Sprintf("approved (%d of %d): awaiting the merge", n, required), TonePending
	case promotion.Reconciling:
		return "reconciling: awaiting the controller and the notifier's evidence", TonePending
	case promotion.Accepted:
		return ledger.ShortDigest(rec.Artifact.Digest) + " accepted", ToneProven
	case promotion.Halted, promotion.Rejected:
		return lowerState(rec.State) + ": " + rec.Reason, ToneBroken
	}
	return string(rec.State), ToneNone
}

// flights are the cell's attempts in flight, each read at its branch's
// tip for its approvals.
func (h *Handler) flights(ctx context.Context, m *Model, c *Cell, now time.Time) ([]APIFlight, error) {
	if len(c.InFlight) == 0 {
		return nil, nil
	}
	reg, err := promotion.ReadRegistry(ctx, h.Repo, m.Rev)
	if err != nil {
		reg, _ = promotion.Registry(nil) // listed in the grid's problems
	}
	var out []APIFlight
	for _, f := range c.InFlight {
		a := APIFlight{Branch: f.Ref, PromotionID: f.PromotionID, State: f.State, Tag: f.Tag, Digest: f.Digest, Waits: f.Waits,
			Status: string(f.State) + ": " + f.Waits}
		a.PullRequest = apiPull(m.Pulls, f.Pull)
		tip, err := h.Repo.BranchTip(ctx, f.Ref)
		if err != nil {
			return nil, fmt.Errorf("reading the attempt branch %s: %w", f.Ref, err)
		}
		if rec, err := promotion.ReadRecord(ctx, h.Repo, tip, c.App, c.Environment); err == nil && rec != nil && rec.PromotionID == f.PromotionID {
			a.Status, _ = recordStatus(rec, requiredOf(reg, c.Environment), now)
		}
		out = append(out, a)
	}
	return out, nil
}

// apiPull is pr of the list p (nil: none).
func apiPull(p *Pulls, pr *PullRequest) *APIPull {
	if pr == nil {
		return nil
	}
	out := &APIPull{Label: p.Label(pr), Number: pr.Number, URL: pr.Link(), Title: pr.Title, State: "open", Review: pr.Review(), Waits: pr.Waits()}
	if pr.Draft {
		out.State = "draft"
	}
	if pr.Approvals >= 0 {
		n := pr.Approvals
		out.Approvals = &n
	}
	return out
}

func apiCell(c *Cell, now time.Time) APICell {
	out := APICell{Waits: c.Waits, Deadline: c.DeadlineText(now), Drift: c.Drift}
	if rec := c.Record; rec != nil {
		out.State, out.PromotionID, out.Image, out.Tag, out.Digest = rec.State, rec.PromotionID, rec.Artifact.Image, c.Tag(), rec.Artifact.Digest
		out.Reason, out.Age = rec.Reason, age(c.Age)
	}
	if c.Paused() {
		out.Paused = fmt.Sprintf("paused by %s (%s) until %s", c.Pause.Operator, c.Pause.Ticket, c.Pause.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return out
}

func (m *Model) apiChain(ch *Chain) *APIChain {
	out := &APIChain{PromotionID: ch.Record.PromotionID, Source: ch.Source, Rollback: ch.Rollback, Verdict: ch.Verdict(), Proven: ch.Proven(),
		Required: ch.Required, Attempts: ch.Attempts}
	for _, a := range ch.Arrows {
		arrow := APIArrow{Name: a.Name, Status: a.Status, Summary: a.Summary, Pods: a.Pods}
		for _, f := range a.Facts {
			fact := APIFact{Label: f.Label, Value: f.Value, Commit: f.Commit}
			if f.Commit && m.commitURL != "" && f.Value != "" {
				fact.URL = fmt.Sprintf(m.commitURL, f.Value)
			}
			arrow.Facts = append(arrow.Facts, fact)
		}
		out.Arrows = append(out.Arrows, arrow)
	}
	for _, b := range ch.Bundles {
		ab := APIBundle{Kind: b.Kind, Digest: b.Digest, PredicateType: b.PredicateType, Signer: b.Signer, Subject: b.Subject, File: b.File,
			Commit: b.Commit, Status: b.Status, Summary: b.Summary}
		if s := b.Scan; s != nil {
			ab.Scan = &APIScan{Finished: s.Finished, BeforeCandidacy: int64(s.Before / time.Second), Worst: s.Worst, WorstFindings: s.WorstFindings,
				Findings: s.Findings, Proven: s.Proven, Text: s.Text()}
		}
		out.Bundles = append(out.Bundles, ab)
	}
	for _, a := range ch.Approvals {
		out.Approvals = append(out.Approvals, APIApproval{Approver: a.Approver, ApprovedAt: a.ApprovedAt, ExpiresAt: a.ExpiresAt, Expired: a.Expired})
	}
	return out
}
