package breakglass

import (
	"path"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/throughline-dev/throughline/environment"
)

// WritebackPath is app's overlay in env by reg: p when given (it must be
// env's path of app, refused otherwise: exit 3), else the registry's, else
// apps/<app>/overlays/<env> (an empty registry).
func WritebackPath(reg *environment.Registry, app, env, p string) (string, error) {
	res, err := reg.Resolve(environment.Claim{App: app, Environment: env, Path: p})
	if err != nil {
		return "", err
	}
	if res.Path == "" {
		return path.Join("apps", app, "overlays", env), nil
	}
	return res.Path, nil
}

// CheckTarget refuses (exit 3) a controller object u that does not deploy
// req.App in req.Env by req.Registry: its source paths another
// environment's or app's, its destination namespace not the environment's.
func CheckTarget(req Request, u *unstructured.Unstructured) error {
	if req.Registry == nil {
		return nil
	}
	c := environment.ControllerOf(u.Object, req.Prefix)
	c.Object = req.Target.String()
	return req.Registry.CheckController(req.App, req.Env, c)
}
