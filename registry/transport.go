package registry

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"time"
)

var errPlainHTTP = errors.New("plain HTTP is allowed only for loopback registries or with --insecure")

// guardTransport refuses plain HTTP to anything but loopback unless insecure
// (go-containerregistry would also fall back to HTTP for RFC 1918 addresses).
type guardTransport struct {
	inner    http.RoundTripper
	insecure bool
}

func (t *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !t.insecure && !IsLoopback(req.URL.Host) {
		return nil, errPlainHTTP
	}
	return t.inner.RoundTrip(req)
}

// limitTransport bounds the requests in flight across a Client.
type limitTransport struct {
	inner http.RoundTripper
	sem   chan struct{}
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case t.sem <- struct{}{}:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	resp, err := t.inner.RoundTrip(req)
	if err != nil {
		<-t.sem
		return nil, err
	}
	// Hold the slot until the body is read: that is when the request ends.
	resp.Body = &releaseBody{ReadCloser: resp.Body, release: func() { <-t.sem }}
	return resp, nil
}

type releaseBody struct {
	io.ReadCloser
	release func()
	done    bool
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	if !b.done {
		b.done = true
		b.release()
	}
	return err
}

// retryTransport retries 429, 408 and 5xx answers and temporary network
// errors with exponential backoff and jitter, honouring Retry-After (capped)
// and the request's context. After the last attempt it returns the last
// answer, so the caller sees the registry's status and error body.
type retryTransport struct {
	inner      http.RoundTripper
	attempts   int
	backoff    time.Duration
	maxBackoff time.Duration
}

func retryable(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout ||
		code == http.StatusInternalServerError || code == http.StatusBadGateway ||
		code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// Only bodiless requests (GET, HEAD) are retried: that is all this
	// package sends.
	canRetry := req.Body == nil || req.Body == http.NoBody
	delay := t.backoff
	for attempt := 1; ; attempt++ {
		resp, err := t.inner.RoundTrip(req)
		last := attempt >= t.attempts || !canRetry
		var wait time.Duration
		switch {
		case err != nil:
			// Retry a reset or refused connection, not a timeout (the
			// operation's deadline covers that) nor a name that does not exist.
			var ne net.Error
			var dnsErr *net.DNSError
			if last || req.Context().Err() != nil || !errors.As(err, &ne) || ne.Timeout() ||
				(errors.As(err, &dnsErr) && dnsErr.IsNotFound) {
				return nil, err
			}
		case retryable(resp.StatusCode):
			if last {
				return resp, nil
			}
			wait = retryAfter(resp.Header.Get("Retry-After"))
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		default:
			return resp, nil
		}
		if wait <= 0 || wait > t.maxBackoff {
			// Full jitter in [delay/2, delay).
			wait = delay/2 + time.Duration(rand.Int64N(int64(delay/2)+1))
		}
		if wait > t.maxBackoff {
			wait = t.maxBackoff
		}
		if err := sleep(req.Context(), wait); err != nil {
			return nil, err
		}
		delay *= 2
		if delay > t.maxBackoff {
			delay = t.maxBackoff
		}
	}
}

func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return time.Until(at)
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// baseTransport is an http.Transport with timeouts on every phase, so a
// registry that accepts a connection and never answers cannot hang a run.
func baseTransport(timeout time.Duration) *http.Transport {
	d := &net.Dialer{Timeout: min(timeout, 10*time.Second), KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   min(timeout, 10*time.Second),
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
	}
}
