// Package notifier receives Argo CD notifications webhooks (POST
// /v1/argocd, a token in the Authorization header) and Flux
// notification-controller events (POST /v1/flux, generic-hmac Provider),
// decides for the promotion record of the app whether the controller's
// observed revision is the desired commit and the live images are the
// declared ones, and writes the evidence (package evidence).
//
// Every delivery is bounded in size and authenticated over its raw bytes
// before it is parsed; only authenticated deliveries are rate-limited per
// sender, so unauthenticated ones never consume a genuine sender's budget. The handler answers only
// after the evidence is in Git: 200 when decided (or already decided), 503
// with Retry-After when it cannot be decided yet or when Git, the API
// server or anything else failed, so that the sender retries; a delivery
// is never acknowledged with its evidence lost. Secrets are never logged
// nor echoed.
package notifier

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"golang.org/x/time/rate"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/tracing"
)

// Defaults of Config.
const (
	DefaultMaxBody         = 256 << 10
	DefaultRate            = 50
	DefaultBurst           = 200
	DefaultProcessTimeout  = 60 * time.Second
	DefaultRetryAfter      = 30 * time.Second
	DefaultReadHeader      = 5 * time.Second
	DefaultRead            = 15 * time.Second
	maxSenders             = 4096
	SignatureHeader        = "X-Signature"
	authorizationHeader    = "Authorization"
	bearerPrefix           = "Bearer "
	contentTypeJSON        = "application/json"
	resultAccepted         = "accepted"
	resultHalted           = "halted"
	resultDuplicate        = "duplicate"
	resultIgnored          = "ignored"
	resultWait             = "wait"
	resultError            = "error"
	resultAmbiguous        = "ambiguous"
	resultUnbound          = "unbound"
	resultUnauthorized     = "unauthorized"
	resultTooLarge         = "too-large"
	resultMalformed        = "malformed"
	resultRateLimited      = "rate-limited"
	resultBusy             = "busy"
	resultMethodNotAllowed = "method-not-allowed"
)

// Reasons of throughline_notifier_deliveries_ignored_total: deliveries
// answered 200 "ignored".
const (
	IgnoredUnknownApp    = "unknown-app"    // no promotion record for the app and environment (or not a name)
	IgnoredNotApplicable = "not-applicable" // the record is decided already or not RECONCILING yet
	IgnoredIrrelevant    = "irrelevant"     // an informational event, no revision
)

// Config configures the receivers.
type Config struct {
	// FluxKey is the generic-hmac Provider's key (the Secret's token);
	// empty turns /v1/flux off.
	FluxKey []byte
	// ArgoCDToken is the bearer token of the Argo CD webhook service;
	// empty turns /v1/argocd off.
	ArgoCDToken []byte
	// MaxBody is the largest body accepted (413 above).
	MaxBody int64
	// Rate and Burst limit authenticated deliveries per sender (remote
	// IP); Rate < 0 turns the limit off.
	Rate  float64
	Burst int
	// ProcessTimeout bounds the processing of one delivery.
	ProcessTimeout time.Duration
	// RetryAfter is sent with 503 answers.
	RetryAfter time.Duration
	// MaxInFlight bounds the deliveries processed at once (Git and API
	// server work); above it a delivery is answered 503 with Retry-After at
	// once. Default 32.
	MaxInFlight int
	// Ready reports readiness (/readyz); nil is always ready.
	Ready func(ctx context.Context) error
	// Log receives one line per delivery (never a secret); nil is silent.
	Log func(d Delivery)
}

// Delivery is what is logged about one delivery.
type Delivery struct {
	Source, Sender, Result, App, Environment, Revision, Commit string
	// PromotionID is the attempt the delivery decided or waits on, where
	// the answer names one; TraceID is the trace of the delivery's span
	// (docs/operations.md#traces): the log line, the span and the record
	// share them.
	PromotionID, TraceID string
	Status               int
	Err                  error
	Duration             time.Duration
}

// Handler is the notifier's HTTP handler.
type Handler struct {
	cfg     Config
	proc    *Processor
	mux     *http.ServeMux
	metrics *Metrics

	mu      sync.Mutex
	senders map[string]*rate.Limiter
	slots   chan struct{}
}

// New makes the handler. The metrics are registered in reg (nil: a new
// registry, served on /metrics).
func New(cfg Config, proc *Processor, reg *prometheus.Registry) (*Handler, error) {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Rate == 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.ProcessTimeout <= 0 {
		cfg.ProcessTimeout = DefaultProcessTimeout
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = DefaultRetryAfter
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 32
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	h := &Handler{
		cfg: cfg, proc: proc, mux: http.NewServeMux(), metrics: m, senders: map[string]*rate.Limiter{}, slots: make(chan struct{}, cfg.MaxInFlight),
	}
	if len(cfg.FluxKey) > 0 {
		h.mux.HandleFunc("/v1/flux", h.receive("flux", h.authFlux, decodeFlux))
	}
	if len(cfg.ArgoCDToken) > 0 {
		h.mux.HandleFunc("/v1/argocd", h.receive("argocd", h.authArgoCD, decodeArgoCD))
	}
	h.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	h.mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if cfg.Ready != nil {
			if err := cfg.Ready(r.Context()); err != nil {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	h.mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return h, nil
}

// Metrics returns the handler's metrics.
func (h *Handler) Metrics() *Metrics { return h.metrics }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// NewServer wraps the handler in an http.Server with header, read, write
// and idle timeouts.
func NewServer(addr string, h http.Handler, processTimeout time.Duration) *http.Server {
	if processTimeout <= 0 {
		processTimeout = DefaultProcessTimeout
	}
	return &http.Server{
		Addr: addr, Handler: h,
		ReadHeaderTimeout: DefaultReadHeader, ReadTimeout: DefaultRead,
		WriteTimeout: processTimeout + DefaultRead, IdleTimeout: 120 * time.Second,
		MaxHeaderBytes: 32 << 10,
	}
}

type reply struct {
	Result      string `json:"result"`
	Commit      string `json:"commit,omitempty"`
	PromotionID string `json:"promotionId,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

func (h *Handler) receive(source string, auth func(r *http.Request, body []byte) bool, decode func([]byte) (Event, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// A span per delivery, in the sender's trace when its request
		// carries one (traceparent); its attributes name the app, the
		// environment and the outcome, never the body or a header's value.
		ctx, span := tracing.Start(tracing.FromRequest(r.Context(), r.Header), "notifier.delivery",
			attribute.String("throughline.source", source))
		d := Delivery{Source: source, Sender: sender(r), TraceID: tracing.TraceID(ctx)}
		answer := func(status int, rep reply) {
			d.Status, d.Result, d.Duration, d.PromotionID = status, rep.Result, time.Since(start), rep.PromotionID
			span.SetAttributes(tracing.App.String(d.App), tracing.Environment.String(d.Environment), tracing.Revision.String(d.Revision),
				tracing.Result.String(rep.Result), tracing.PromotionID.String(rep.PromotionID), attribute.Int("http.response.status_code", status))
			if d.Commit != "" {
				span.SetAttributes(attribute.String("throughline.commit", d.Commit))
			}
			var failed error // a failure to decide, not a refusal, a wait or an ignored delivery
			if rep.Result == resultError {
				failed = cmp.Or(d.Err, errors.New(rep.Reason))
			}
			tracing.End(span, failed)
			if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", strconv.Itoa(int(h.cfg.RetryAfter/time.Second)))
			}
			w.Header().Set("Content-Type", contentTypeJSON)
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(rep)
			h.metrics.Acks.WithLabelValues(source, rep.Result).Observe(d.Duration.Seconds())
			if h.cfg.Log != nil {
				h.cfg.Log(d)
			}
		}
		h.metrics.Received.WithLabelValues(source).Inc()
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			answer(http.StatusMethodNotAllowed, reply{Result: resultMethodNotAllowed})
			return
		}
		if r.ContentLength > h.cfg.MaxBody {
			h.metrics.Refused.WithLabelValues(source, resultTooLarge).Inc()
			answer(http.StatusRequestEntityTooLarge, reply{Result: resultTooLarge})
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBody))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				h.metrics.Refused.WithLabelValues(source, resultTooLarge).Inc()
				answer(http.StatusRequestEntityTooLarge, reply{Result: resultTooLarge})
				return
			}
			h.metrics.Refused.WithLabelValues(source, resultMalformed).Inc()
			answer(http.StatusBadRequest, reply{Result: resultMalformed, Reason: "reading the body failed"})
			return
		}
		// Authenticate the raw bytes before anything parses them.
		if !auth(r, body) {
			h.metrics.Refused.WithLabelValues(source, resultUnauthorized).Inc()
			answer(http.StatusUnauthorized, reply{Result: resultUnauthorized})
			return
		}
		// Rate-limit only authenticated deliveries: a flood of bad
		// signatures from the sender's address (or from behind the same
		// ingress) consumes nothing of the genuine sender's budget. The
		// work an unauthenticated request costs is bounded by MaxBody and
		// the server's read timeouts.
		if !h.allow(d.Sender) {
			h.metrics.Refused.WithLabelValues(source, resultRateLimited).Inc()
			answer(http.StatusTooManyRequests, reply{Result: resultRateLimited})
			return
		}
		ev, err := decode(body)
		d.App, d.Environment, d.Revision = ev.App, ev.Environment, ev.Revision
		if ev.OCI != "" {
			d.Revision = ev.OCI // the sha256 form as reported: Process settles whether it is a digest or a SHA-256 commit
		}
		if errors.Is(err, ErrIrrelevant) {
			d.Err = err
			h.metrics.Ignored.WithLabelValues(source, IgnoredIrrelevant).Inc()
			answer(http.StatusOK, reply{Result: resultIgnored, Reason: err.Error()})
			return
		}
		if err != nil {
			d.Err = err
			h.metrics.Refused.WithLabelValues(source, resultMalformed).Inc()
			answer(http.StatusBadRequest, reply{Result: resultMalformed, Reason: err.Error()})
			return
		}
		// A delivery whose evidence this replica already saw in Git needs
		// no slot: it is answered at once.
		known := h.proc.Git.Known(ev.App, ev.Environment, ev.Revision)
		if known == nil && ev.OCI != "" { // an OCI environment's evidence is keyed by the digest
			known = h.proc.Git.Known(ev.App, ev.Environment, ev.OCI)
		}
		if known != nil {
			h.metrics.Duplicates.WithLabelValues(source).Inc()
			answer(http.StatusOK, reply{Result: resultDuplicate, PromotionID: known.PromotionID})
			return
		}
		select {
		case h.slots <- struct{}{}:
			defer func() { <-h.slots }()
		default:
			h.metrics.Refused.WithLabelValues(source, resultBusy).Inc()
			answer(http.StatusServiceUnavailable, reply{Result: resultBusy})
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.ProcessTimeout)
		defer cancel()
		written, err := h.proc.Process(ctx, ev)
		d.Err = err
		var wait *WaitError
		var recErr *promotion.RecordError
		switch {
		case err == nil && written.Duplicate:
			h.metrics.Duplicates.WithLabelValues(source).Inc()
			answer(http.StatusOK, reply{Result: resultDuplicate, PromotionID: written.Evidence.PromotionID})
		case err == nil:
			d.Commit = written.Commit
			e := written.Evidence
			h.metrics.Written.WithLabelValues(string(e.Decision)).Inc()
			res := resultAccepted
			if e.Decision == promotion.Halted {
				res = resultHalted
				h.metrics.Failures.WithLabelValues(e.Class).Inc()
			}
			answer(http.StatusOK, reply{Result: res, Commit: written.Commit, PromotionID: e.PromotionID, Reason: e.Reason})
		case errors.As(err, &wait):
			answer(http.StatusServiceUnavailable, reply{Result: resultWait, Reason: wait.Reason})
		case errors.Is(err, evidence.ErrUnknownApp):
			// An app with an Alert or a subscription but no promotion
			// record yet: nothing to do, and nothing for the sender to
			// retry or warn about (a 404 puts a Warning event on the Flux
			// Alert at every reconciliation). Logged (d.Err) and counted.
			h.metrics.Ignored.WithLabelValues(source, IgnoredUnknownApp).Inc()
			answer(http.StatusOK, reply{Result: resultIgnored, Reason: "no promotion record: " + err.Error()})
		case errors.Is(err, ErrAmbiguous):
			h.metrics.Refused.WithLabelValues(source, resultAmbiguous).Inc()
			answer(http.StatusConflict, reply{Result: resultAmbiguous, Reason: err.Error()})
		case errors.Is(err, ErrUnbound):
			h.metrics.Refused.WithLabelValues(source, resultUnbound).Inc()
			answer(http.StatusConflict, reply{Result: resultUnbound, Reason: err.Error()})
		case errors.Is(err, evidence.ErrNotApplicable):
			h.metrics.Ignored.WithLabelValues(source, IgnoredNotApplicable).Inc()
			answer(http.StatusOK, reply{Result: resultIgnored, Reason: err.Error()})
		case errors.As(err, &recErr), errors.Is(err, exitcode.ErrInvalid):
			// The record does not parse, or names another app or environment.
			h.metrics.Failures.WithLabelValues(ClassSource).Inc()
			answer(http.StatusInternalServerError, reply{Result: resultError, Reason: "the promotion record cannot be used"})
		default:
			h.metrics.Failures.WithLabelValues(ClassInternal).Inc()
			answer(http.StatusServiceUnavailable, reply{Result: resultError, Reason: "evidence not written; retry"})
		}
	}
}

// authFlux checks X-Signature: <sha256|sha384|sha512>=<hex HMAC of the body>.
func (h *Handler) authFlux(r *http.Request, body []byte) bool {
	return VerifySignature(h.cfg.FluxKey, r.Header.Get(SignatureHeader), body)
}

// VerifySignature checks a generic-hmac signature header over body.
func VerifySignature(key []byte, header string, body []byte) bool {
	algo, sig, ok := strings.Cut(strings.TrimSpace(header), "=")
	if !ok || len(key) == 0 {
		return false
	}
	var fn func() hash.Hash
	switch strings.ToLower(algo) {
	case "sha256":
		fn = sha256.New
	case "sha384":
		fn = sha512.New384
	case "sha512":
		fn = sha512.New
	default:
		return false
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	mac := hmac.New(fn, key)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// authArgoCD checks Authorization: Bearer <token> in constant time (over
// hashes, so that the length does not leak either).
func (h *Handler) authArgoCD(r *http.Request, _ []byte) bool {
	v := r.Header.Get(authorizationHeader)
	tok, ok := strings.CutPrefix(v, bearerPrefix)
	if !ok {
		return false
	}
	a, b := sha256.Sum256([]byte(strings.TrimSpace(tok))), sha256.Sum256(h.cfg.ArgoCDToken)
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

func sender(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// allow applies the per-sender token bucket.
func (h *Handler) allow(s string) bool {
	if h.cfg.Rate < 0 {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	l, ok := h.senders[s]
	if !ok {
		if len(h.senders) >= maxSenders {
			// Forget every bucket rather than grow without bound: a burst
			// from many senders resets, it never locks a sender out.
			h.senders = map[string]*rate.Limiter{}
		}
		l = rate.NewLimiter(rate.Limit(h.cfg.Rate), h.cfg.Burst)
		h.senders[s] = l
	}
	return l.Allow()
}
