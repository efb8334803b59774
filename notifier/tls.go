package notifier

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// certReloader serves the certificate in certFile and keyFile, loaded again
// on the first handshake after either file's modification time or size
// changed (cert-manager renewing a mounted Secret). A pair that does not
// load keeps the previous certificate: a renewal written in two steps never
// breaks the listener.
type certReloader struct {
	certFile, keyFile string

	mu    sync.Mutex
	cert  *tls.Certificate
	stamp [2]fileStamp
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// newCertReloader loads the pair once; an error here fails Start.
func newCertReloader(certFile, keyFile string) (*certReloader, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("notifier: TLS needs both a certificate file and a key file")
	}
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	stamp, err := r.stat()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("notifier: loading the TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	r.cert, r.stamp = &cert, stamp
	return r, nil
}

func (r *certReloader) stat() ([2]fileStamp, error) {
	var s [2]fileStamp
	for i, f := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return s, fmt.Errorf("notifier: TLS file: %w", err)
		}
		s[i] = fileStamp{fi.ModTime(), fi.Size()}
	}
	return s, nil
}

// getCertificate is tls.Config.GetCertificate.
func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stamp, err := r.stat()
	if err != nil || stamp == r.stamp {
		return r.cert, nil
	}
	if cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile); err == nil {
		r.cert, r.stamp = &cert, stamp
	}
	return r.cert, nil
}

// tlsConfig is the listener's configuration: TLS 1.2 or later, the
// certificate from the reloader.
func (r *certReloader) tlsConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.getCertificate}
}
