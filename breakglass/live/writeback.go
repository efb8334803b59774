package live

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/render"
)

// ReadLive reads from the cluster the live state of every object of before
// (the desired state before the pause) and of every object the controller
// tracks for the record's application.
func ReadLive(ctx context.Context, c client.Client, rec *breakglass.Record, before []render.Object) (*breakglass.Live, error) {
	tracked, err := Tracked(ctx, c, rec)
	if err != nil {
		return nil, err
	}
	live := &breakglass.Live{Objects: map[render.ID]map[string]any{}, Tracked: tracked}
	ids := make([]render.ID, 0, len(before)+len(tracked))
	for _, o := range before {
		ids = append(ids, o.ID())
	}
	for _, id := range append(ids, tracked...) {
		k := breakglass.Key(id)
		if _, done := live.Objects[k]; done {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(id.APIVersion())
		u.SetKind(id.Kind)
		if err := c.Get(ctx, types.NamespacedName{Namespace: id.Namespace, Name: id.Name}, u); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("read live %s: %w", id, err)
		}
		live.Objects[k] = u.Object
	}
	return live, nil
}

// ProposeWriteback compares the desired state before the pause (the
// overlay rendered at the record's source revision), the live state read
// from c and the desired state at opts.Base, and commits the permanent live
// changes as patches in the overlay on the branch
// throughline/breakglass/<app>/<env>/<ticket> (never moved once it exists).
// With no permanent change nothing is committed and the result's Commit is
// opts.Base.
func ProposeWriteback(ctx context.Context, r *gitops.Repo, c client.Client, rec *breakglass.Record,
	opts breakglass.WritebackOptions) (*breakglass.WritebackResult, error) {
	return breakglass.ProposeWriteback(ctx, r, rec, opts, func(ctx context.Context, before []render.Object) (*breakglass.Live, error) {
		return ReadLive(ctx, c, rec, before)
	})
}
