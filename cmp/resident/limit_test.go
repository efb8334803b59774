package resident_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/cmp/resident"
)

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// TestRenderLimitQueues: beyond the limit a render waits (never refused)
// and gets the first slot freed; in flight never exceeds the limit; a
// waiter whose context ends leaves the queue with the context's error.
func TestRenderLimitQueues(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		l := resident.NewRenderLimit(n)
		ctx := context.Background()
		for range n {
			if err := l.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
		}
		const extra = 4
		var peak, admitted int
		var mu sync.Mutex
		var wg sync.WaitGroup
		release := make(chan struct{})
		for range extra {
			wg.Go(func() {
				if err := l.Acquire(ctx); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				admitted++
				peak = max(peak, l.InFlight())
				mu.Unlock()
				<-release
				l.Release()
			})
		}
		eventually(t, "every extra render waiting", func() bool { return l.Waiting() == extra })
		if l.InFlight() != n {
			t.Fatalf("limit %d: %d in flight", n, l.InFlight())
		}
		// A waiter that gives up.
		cctx, cancel := context.WithCancel(ctx)
		gaveUp := make(chan error, 1)
		go func() { gaveUp <- l.Acquire(cctx) }()
		eventually(t, "the sixth waiting", func() bool { return l.Waiting() == extra+1 })
		cancel()
		if err := <-gaveUp; !errors.Is(err, context.Canceled) {
			t.Errorf("limit %d: canceled waiter got %v, want context.Canceled", n, err)
		}
		eventually(t, "the canceled waiter gone from the queue", func() bool { return l.Waiting() == extra })
		for range n {
			l.Release()
		}
		close(release)
		wg.Wait()
		if admitted != extra || peak > n || l.InFlight() != 0 || l.Waiting() != 0 {
			t.Errorf("limit %d: admitted %d of %d, peak in flight %d, left %d in flight and %d waiting",
				n, admitted, extra, peak, l.InFlight(), l.Waiting())
		}
	}
}

func TestRenderLimitNil(t *testing.T) {
	var l *resident.RenderLimit
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.Release()
	if l.Max() != 0 || l.InFlight() != 0 || l.Waiting() != 0 {
		t.Errorf("nil limit: max %d, in flight %d, waiting %d", l.Max(), l.InFlight(), l.Waiting())
	}
}
