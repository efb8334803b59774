package resident

import (
	"context"
	"fmt"
	"sync/atomic"
)

// DefaultMaxRenders is how many renders (cache misses) the resident
// renderer runs at once unless told otherwise: each runs in its own render
// child (up to render.DefaultMaxMemory, 256 MiB), so two beside the
// in-memory cache (256 MiB) fit the sidecar's 768 MiB limit.
const DefaultMaxRenders = 2

// RenderLimit bounds the renders in flight: the ones beyond it wait their
// turn instead of being refused (a refused generate would fall back to an
// unbounded in-process render in the plugin). A nil *RenderLimit admits
// everything.
type RenderLimit struct {
	slots   chan struct{}
	waiting atomic.Int64
}

// NewRenderLimit admits n renders at once (n <= 0: DefaultMaxRenders).
func NewRenderLimit(n int) *RenderLimit {
	if n <= 0 {
		n = DefaultMaxRenders
	}
	return &RenderLimit{slots: make(chan struct{}, n)}
}

// Acquire waits for a slot until ctx ends; every nil return is paired
// with one Release.
func (l *RenderLimit) Acquire(ctx context.Context) error {
	if l == nil {
		return nil
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for one of the resident renderer's %d render slots: %w", cap(l.slots), context.Cause(ctx))
	}
}

// Release frees the slot of one Acquire.
func (l *RenderLimit) Release() {
	if l != nil {
		<-l.slots
	}
}

// Max is the number of renders admitted at once (0 for nil: no bound).
func (l *RenderLimit) Max() int {
	if l == nil {
		return 0
	}
	return cap(l.slots)
}

// InFlight is the number of renders holding a slot.
func (l *RenderLimit) InFlight() int {
	if l == nil {
		return 0
	}
	return len(l.slots)
}

// Waiting is the number of renders waiting for a slot.
func (l *RenderLimit) Waiting() int {
	if l == nil {
		return 0
	}
	return int(l.waiting.Load())
}
